//===- TrainStep.cpp - a model's training step as one function ------------===//
//
// Invariants of the step built here:
//  - every op of the forward pass stays where it was; the loss, the backward
//    pass and the optimizer follow it, and the pcc.assign ops come last, so
//    every read of a weight sees the value the step started with;
//  - a weight is trained when it is a float initializer, not frozen, and
//    the loss depends on it; each has one pcc.weight op (duplicates merged)
//    and one pcc.assign, as does each optimizer state;
//  - gradients reach only values that depend on a trained weight (activity
//    analysis), and what the rules build beyond that is removed as dead code.
//
//===----------------------------------------------------------------------===//

#include "pcc/Autodiff/TrainStep.h"
#include "pcc/Autodiff/Recompute.h"

#include "pcc/Dialect/PCC/IR/GradientBuilder.h"
#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace pcc {
namespace {

class StepBuilder {
public:
  StepBuilder(func::FuncOp fn, const TrainOptions &o)
      : fn(fn), o(o), b(fn.getContext()), g(b, fn.getLoc()) {}

  LogicalResult run(TrainStepReport *report);
  /// Makes @main return the loss --loss adds (and take its target).
  LogicalResult addLoss();

private:
  LogicalResult mergeDuplicateWeights();
  FailureOr<Value> buildLoss(Value output);
  LogicalResult differentiate(Value loss);
  void accumulate(Value v, Value grad);
  void update(WeightOp w, Value grad);
  Value state(WeightOp w, StringRef suffix, Type type);
  LogicalResult keepMaster(WeightOp w);
  Value scaleOfLoss(bool lossIsF32);
  Value unscale(SmallVectorImpl<std::pair<WeightOp, Value>> &grads);
  void skipUnlessFinite(Value finite);
  Value stepCount();
  Value drawCount();
  std::pair<Value, Value> counter(StringRef name);
  void returnLoss(func::ReturnOp ret, Value loss);

  func::FuncOp fn;
  const TrainOptions &o;
  OpBuilder b;
  GradientBuilder g;
  llvm::DenseSet<Value> active;
  llvm::DenseMap<Value, Value> grads;
  /// Trained weights in program order.
  llvm::MapVector<Operation *, Value> trained;
  SmallVector<std::pair<Value, Value>> assigns;
  Value nextStep;
  /// Under loss scaling, dropout's own step counter, which a skipped step
  /// advances too (PyTorch's generator advances whether or not the
  /// optimizer steps): its count and new value.
  std::pair<Value, Value> draws;
  /// Dynamic loss scaling: the scale (f32 scalar) and its states.
  Value lossScale, scaleExponent, scaleTracker;
  /// A trained weight is fp16 (its gradients need a loss scale).
  bool trainsHalf = false;
  TrainStepReport counts;
};

LogicalResult StepBuilder::mergeDuplicateWeights() {
  llvm::StringMap<WeightOp> first;
  for (auto w : llvm::make_early_inc_range(fn.getOps<WeightOp>())) {
    auto [it, inserted] = first.try_emplace(w.getName(), w);
    if (inserted)
      continue;
    if (it->second.getType() != w.getType())
      return w.emitError() << "initializer '" << w.getName()
                           << "' is read as two types; it cannot be trained";
    w.getResult().replaceAllUsesWith(it->second.getResult());
    w.erase();
  }
  return success();
}

FailureOr<Value> StepBuilder::buildLoss(Value y) {
  auto yType = typeOf(y);
  if (!isa<FloatType>(yType.getElementType()))
    return emitError(y.getLoc())
           << "the loss is taken of output 0, which holds "
           << yType.getElementType() << ", not floats";
  SmallVector<int64_t> all;
  auto mean = [&](Value v) {
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < typeOf(v).getRank(); ++i)
      axes.push_back(i);
    return g.op<ReduceMeanOp>(
        {v}, {g.i64s("axes", axes), g.named("keepdims", b.getBoolAttr(false))});
  };
  if (o.loss == LossKind::ModelOutput) {
    if (yType.getNumElements() != 1)
      return emitError(y.getLoc())
             << "output 0 is the loss, but it holds " << yType
             << "; return a scalar loss from the model or give --loss "
                "mse|cross-entropy";
    // A 16-bit export's loss narrowed for its output (pcc-convert-precision
    // computes losses in f32): the step trains on and prints the f32 value.
    if (auto narrowed = y.getDefiningOp<CastOp>()) {
      Type from = typeOf(narrowed.getInput()).getElementType();
      if (from.isF32() && !yType.getElementType().isF32())
        return narrowed.getInput();
    }
    return y;
  }
  unsigned at = fn.getNumArguments();
  Type targetType = yType;
  int64_t classes = 0;
  if (o.loss == LossKind::CrossEntropy) {
    if (yType.getRank() < 1)
      return emitError(y.getLoc()) << "cross-entropy needs class scores as "
                                      "output 0, not a scalar";
    classes = yType.getShape().back();
    targetType = RankedTensorType::get(yType.getShape().drop_back(),
                                       b.getI64Type());
  }
  if (failed(fn.insertArgument(at, targetType, {}, fn.getLoc())))
    return failure();
  fn.setArgAttr(at, "pcc.name", b.getStringAttr("target"));
  Value target = fn.getArgument(at);
  if (o.loss == LossKind::Mse) {
    Value diff = g.sub(y, target);
    return mean(g.mul(diff, diff));
  }
  // -log_softmax(y)[target], averaged: the one-hot product keeps it a
  // pointwise chain and a reduction the partitioner splits like any other.
  int64_t last = yType.getRank() - 1;
  Value logp = g.op<LogSoftmaxOp>({y}, {g.i64("axis", last)});
  SmallVector<int64_t> column(yType.getShape());
  column.back() = 1;
  Value onehot = g.oneHot(g.reshape(target, column), classes, yType.getRank(),
                          last, yType.getElementType());
  Value picked = g.reduceSum(g.mul(logp, onehot), {last}, /*keepdims=*/false);
  return g.neg(mean(picked));
}

namespace {

/// Slices of one value that tile it along `axis`, in order along it.
struct Tiling {
  SmallVector<SliceOp> slices;
  int64_t axis = -1;
};

/// The slices of `v` when they tile it along one axis (unit steps, each
/// whole on the other axes, together covering it once: a fused QKV read
/// as Q, K and V); none otherwise.
std::optional<Tiling> tilingSlices(Value v) {
  ArrayRef<int64_t> shape = shapeOf(v);
  Tiling t;
  for (Operation *user : v.getUsers()) {
    auto slice = dyn_cast<SliceOp>(user);
    if (!slice)
      return std::nullopt;
    ArrayRef<int64_t> starts = slice.getStarts(), steps = slice.getSteps();
    ArrayRef<int64_t> sizes = shapeOf(slice.getResult());
    for (size_t d = 0; d < shape.size(); ++d) {
      if (steps[d] != 1)
        return std::nullopt;
      if (starts[d] == 0 && sizes[d] == shape[d])
        continue;
      if (t.axis >= 0 && t.axis != int64_t(d))
        return std::nullopt;
      t.axis = d;
    }
    t.slices.push_back(slice);
  }
  if (t.axis < 0 || t.slices.size() < 2)
    return std::nullopt;
  llvm::sort(t.slices, [&](SliceOp a, SliceOp b) {
    return a.getStarts()[t.axis] < b.getStarts()[t.axis];
  });
  int64_t at = 0;
  for (SliceOp s : t.slices) {
    if (s.getStarts()[t.axis] != at)
      return std::nullopt;
    at += shapeOf(s.getResult())[t.axis];
  }
  if (at != shape[t.axis])
    return std::nullopt;
  return t;
}

} // namespace

void StepBuilder::accumulate(Value v, Value grad) {
  if (!grad || !active.contains(v))
    return;
  Value &slot = grads[v];
  slot = slot ? g.add(slot, grad) : grad;
}

LogicalResult StepBuilder::differentiate(Value loss) {
  SmallVector<Operation *> forward;
  for (Operation &op : fn.getBody().front().without_terminator())
    forward.push_back(&op);
  Operation *ret = fn.getBody().front().getTerminator();
  // The ops a rule made (and the seed, with the first rule's) are tagged
  // with the op they differentiate: a pipeline runs them in its stage.
  Operation *tagged = ret->getPrevNode();
  auto tagSince = [&](Operation *op, int64_t id) {
    op->setAttr(kForwardIdAttr, b.getI64IntegerAttr(id));
    for (Operation *o = tagged->getNextNode(); o != ret; o = o->getNextNode())
      o->setAttr(kGradientOfAttr, b.getI64IntegerAttr(id));
    tagged = ret->getPrevNode();
  };
  grads[loss] =
      lossScale
          ? g.mul(g.fill(loss, 1.0),
                  g.op<CastOp>(
                      {lossScale},
                      {g.named("to",
                               TypeAttr::get(typeOf(loss).getElementType()))}))
          : g.fill(loss, 1.0);
  // Slices that tile their operand hand it their gradients joined, one
  // concat (split like the pieces), at the first slice in program order
  // (the last one reached here), not each put back among zeros.
  llvm::DenseMap<Operation *, Tiling> tilings;
  llvm::DenseSet<Operation *> tiled;
  for (Operation *op : forward)
    for (Value v : op->getResults())
      if (active.contains(v))
        if (std::optional<Tiling> t = tilingSlices(v)) {
          Operation *first = t->slices.front();
          for (SliceOp s : t->slices) {
            tiled.insert(s);
            if (s->isBeforeInBlock(first))
              first = s;
          }
          tilings[first] = std::move(*t);
        }
  auto joinTiles = [&](Tiling &t) {
    SmallVector<Value> parts;
    bool any = false;
    for (SliceOp s : t.slices) {
      Value d = grads.lookup(s.getResult());
      any |= bool(d);
      parts.push_back(d ? d : g.fill(s.getResult(), 0));
    }
    if (any)
      accumulate(t.slices.front().getInput(),
                 g.op<ConcatOp>(parts, {g.i64("axis", t.axis)}));
    return any;
  };
  for (int64_t position = forward.size() - 1; position >= 0; --position) {
    Operation *op = forward[position];
    if (isa<WeightOp, ConstantOp>(op))
      continue;
    if (tiled.contains(op)) {
      if (auto t = tilings.find(op); t != tilings.end()) {
        g.setLocation(op->getLoc());
        if (joinTiles(t->second))
          tagSince(op, position);
      }
      continue;
    }
    SmallVector<Value> dy;
    bool any = false;
    for (Value r : op->getResults()) {
      dy.push_back(grads.lookup(r));
      any |= bool(dy.back());
    }
    if (!any)
      continue;
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitError() << "training needs the gradient of '"
                             << op->getName()
                             << "', which pcc does not have yet";
    g.setLocation(op->getLoc());
    SmallVector<Value> dx;
    if (failed(rule.buildGradients(g, dy, dx)) || g.failed())
      return failure();
    if (dx.size() != op->getNumOperands())
      return op->emitError() << "internal error: its gradient rule gave "
                             << dx.size() << " gradients for "
                             << op->getNumOperands() << " operands";
    for (auto [v, d] : llvm::zip(op->getOperands(), dx))
      accumulate(v, d);
    tagSince(op, position);
  }
  return success();
}

/// Mixed precision: a trained weight stored in 16 bits (--precision, or a
/// 16-bit export) becomes an f32 master weight that the forward reads
/// through one cast to its 16-bit type; the cast's gradient brings the
/// gradient back to f32 for the update, whose states are f32 too.
LogicalResult StepBuilder::keepMaster(WeightOp w) {
  RankedTensorType t = typeOf(w);
  Type e = t.getElementType();
  if (e.isF32())
    return success();
  if (!e.isBF16() && !e.isF16())
    return w.emitError() << "training stores '" << w.getName() << "' as " << e
                         << "; pcc trains f32, bf16 and fp16 weights";
  trainsHalf |= e.isF16();
  // The weights file converts what it holds (f32 from --precision, or the
  // export's 16 bits) to the master's f32.
  Type held = w.getSourceTypeAttr() ? w.getSourceTypeAttr().getValue() : e;
  Type f32 = b.getF32Type();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(w);
  Value master = w.getResult();
  master.setType(RankedTensorType::get(t.getShape(), f32));
  if (held == f32)
    w.removeSourceTypeAttr();
  else
    w.setSourceTypeAttr(TypeAttr::get(held));
  auto half = CastOp::create(b, w.getLoc(), t, master, TypeAttr::get(e));
  master.replaceAllUsesExcept(half.getResult(), half);
  return success();
}

Value StepBuilder::state(WeightOp w, StringRef suffix, Type type) {
  std::string name = (w.getName() + "." + suffix).str();
  auto s = WeightOp::create(b, w.getLoc(), type, b.getStringAttr(name),
                            /*external=*/nullptr, /*source_type=*/nullptr,
                            b.getUnitAttr(), /*unpadded=*/nullptr,
                            /*parts=*/nullptr, /*parts_axis=*/nullptr,
                            /*part_sizes=*/nullptr);
  // A padded weight's states are padded alike (and saved unpadded); a
  // joined weight's are joined alike (and saved as the parts' states).
  if (typeOf(s).getShape() == typeOf(w).getShape()) {
    s.setUnpaddedAttr(w.getUnpaddedAttr());
    if (ArrayAttr parts = w.getPartsAttr()) {
      SmallVector<std::string> names;
      for (StringRef part : parts.getAsValueRange<StringAttr>())
        names.push_back((part + "." + suffix).str());
      s.setPartsAttr(b.getStrArrayAttr(
          SmallVector<StringRef>(names.begin(), names.end())));
      s.setPartsAxisAttr(w.getPartsAxisAttr());
      s.setPartSizesAttr(w.getPartSizesAttr());
    }
  }
  counts.stateElements += typeOf(s).getNumElements();
  return s.getResult();
}

/// A step counter state `name` (zeros at first) and its value plus one,
/// made first in the function, as the forward's dropouts read it.
std::pair<Value, Value> StepBuilder::counter(StringRef name) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&fn.getBody().front());
  auto type = RankedTensorType::get({}, b.getF32Type());
  auto count = WeightOp::create(b, fn.getLoc(), type, b.getStringAttr(name),
                                nullptr, nullptr, b.getUnitAttr(), nullptr,
                                nullptr, nullptr, nullptr);
  return {count.getResult(),
          g.add(count.getResult(), g.scalar(b.getF32Type(), 1))};
}

/// The step number this step runs (1 for the first), from `pcc.step`.
Value StepBuilder::stepCount() {
  if (!nextStep) {
    auto [count, next] = counter("pcc.step");
    nextStep = next;
    assigns.push_back({count, next});
  }
  return nextStep;
}

/// Dropout's step counter under loss scaling (`pcc.dropout_step`), stored
/// whether or not the step's gradients are finite.
Value StepBuilder::drawCount() {
  if (!draws.second)
    draws = counter("pcc.dropout_step");
  return draws.second;
}

/// The loss scale, 2^(lossScaleLog2 + e) with e a state that starts at 0
/// (states start at zero), and the count of finite steps since it last
/// changed.
Value StepBuilder::scaleOfLoss(bool lossIsF32) {
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  auto makeState = [&](StringRef name) {
    return WeightOp::create(b, fn.getLoc(), scalar, b.getStringAttr(name),
                            nullptr, nullptr, b.getUnitAttr(), nullptr, nullptr,
                            nullptr, nullptr)
        .getResult();
  };
  scaleExponent = makeState("pcc.loss_scale_exponent");
  scaleTracker = makeState("pcc.loss_scale_growth_tracker");
  Value exponent =
      g.add(scaleExponent,
            g.scalar(b.getF32Type(),
                     double(o.lossScaleLog2.value_or(lossIsF32 ? 16 : 15))));
  return g.op<PowOp>({g.scalar(b.getF32Type(), 2), exponent});
}

/// Divides each gradient by the loss scale; true where every gradient is
/// finite (0 * g sums to 0 only when no element is inf or NaN).
Value StepBuilder::unscale(SmallVectorImpl<std::pair<WeightOp, Value>> &all) {
  Value inverse = g.div(g.scalar(b.getF32Type(), 1), lossScale);
  Value total;
  for (auto &[w, grad] : all) {
    grad = g.mul(grad, inverse);
    SmallVector<int64_t> axes;
    for (int64_t a = 0; a < typeOf(grad).getRank(); ++a)
      axes.push_back(a);
    Value zeros = g.reduceSum(g.scale(grad, 0.0), axes, /*keepdims=*/false);
    total = total ? g.add(total, zeros) : zeros;
  }
  Value finite = g.op<EqualOp>({total, g.scalarLike(total, 0)});
  if (finite)
    finite.getDefiningOp()->setAttr(kStepWideAttr, b.getUnitAttr());
  return finite;
}

/// GradScaler's step: the update's new values only where the gradients are
/// finite; the scale halves on a skipped step and doubles after a window
/// of finite ones.
void StepBuilder::skipUnlessFinite(Value finite) {
  for (auto &[target, value] : assigns)
    value = g.op<WhereOp>({finite, value, target});
  Value one = g.scalarLike(scaleTracker, 1);
  Value tracked = g.add(scaleTracker, one);
  Value grow = g.op<EqualOp>(
      {tracked, g.scalarLike(tracked, double(o.lossScaleWindow))});
  Value zero = g.scalarLike(scaleTracker, 0);
  assigns.push_back(
      {scaleExponent,
       g.op<WhereOp>(
           {finite,
            g.op<WhereOp>({grow, g.add(scaleExponent, one), scaleExponent}),
            g.sub(scaleExponent, one)})});
  assigns.push_back(
      {scaleTracker,
       g.op<WhereOp>({finite, g.op<WhereOp>({grow, zero, tracked}), zero})});
}

void StepBuilder::update(WeightOp w, Value grad) {
  Value p = w.getResult();
  Type type = p.getType();
  g.setLocation(w.getLoc());
  if (o.optimizer == Optimizer::Sgd) {
    // torch.optim.SGD: d = g + wd p; buf = momentum buf + d (buf = d at
    // the first step, which a zero buffer gives); p -= lr buf.
    double wd = o.weightDecay.value_or(0.0);
    Value d = wd ? g.add(grad, g.scale(p, wd)) : grad;
    if (o.momentum) {
      Value buf = state(w, "momentum_buffer", type);
      d = g.add(g.scale(buf, o.momentum), d);
      assigns.push_back({buf, d});
    }
    assigns.push_back({p, g.sub(p, g.scale(d, o.lr))});
    return;
  }
  // torch.optim.AdamW (single-tensor form): p *= 1 - lr wd; m, v moments;
  // p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
  double wd = o.weightDecay.value_or(0.01);
  Value t = stepCount();
  Value decayed = wd ? g.scale(p, 1.0 - o.lr * wd) : p;
  Value m = state(w, "exp_avg", type), v = state(w, "exp_avg_sq", type);
  Value m1 = g.add(g.scale(m, o.beta1), g.scale(grad, 1.0 - o.beta1));
  Value v1 = g.add(g.scale(v, o.beta2),
                   g.scale(g.mul(grad, grad), 1.0 - o.beta2));
  auto correction = [&](double beta) {
    Value one = g.scalarLike(t, 1);
    return g.sub(one, g.op<PowOp>({g.scalarLike(t, beta), t}));
  };
  Value stepSize = g.div(g.scalarLike(t, o.lr), correction(o.beta1));
  Value root2 = g.op<SqrtOp>({correction(o.beta2)});
  Value denom = g.add(g.div(g.op<SqrtOp>({v1}), root2), g.scalarLike(p, o.eps));
  Value next = g.sub(decayed, g.mul(stepSize, g.div(m1, denom)));
  assigns.push_back({m, m1});
  assigns.push_back({v, v1});
  assigns.push_back({p, next});
}

LogicalResult StepBuilder::run(TrainStepReport *report) {
  if (failed(mergeDuplicateWeights()))
    return failure();
  Block &body = fn.getBody().front();
  // Buffers the forward updates (running statistics, stored by the import)
  // are written last too, with the step's other new values.
  auto bufferUpdates = llvm::to_vector(body.getOps<AssignOp>());
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0)
    return fn.emitError("the model has no outputs to train on");
  llvm::StringSet<> frozen;
  for (const std::string &n : o.freeze)
    frozen.insert(n);
  llvm::StringSet<> named;
  for (auto w : fn.getOps<WeightOp>()) {
    named.insert(w.getName());
    bool isFloat = isa<FloatType>(typeOf(w).getElementType());
    if (!isFloat || frozen.contains(w.getName()))
      continue;
    if (failed(keepMaster(w)))
      return failure();
    active.insert(w.getResult());
  }
  for (const std::string &n : o.freeze)
    if (!named.contains(n))
      return fn.emitError() << "--freeze names '" << n
                            << "', which is not a trainable initializer of "
                               "the model (float scalars and small integer "
                               "tensors are constants, never trained)";
  b.setInsertionPoint(ret);
  g.setLocation(ret.getLoc());
  // Each step draws new dropout masks; under loss scaling a skipped step
  // too, from a counter of its own.
  bool scalesLoss = o.lossScaling == LossScaling::Dynamic ||
                    (o.lossScaling == LossScaling::Auto && trainsHalf);
  for (DropoutOp d : llvm::to_vector(body.getOps<DropoutOp>()))
    if (!d.getStep())
      d.getStepMutable().assign(scalesLoss ? drawCount() : stepCount());
  auto loss = buildLoss(ret.getOperand(0));
  if (failed(loss) || g.failed())
    return failure();
  // Activity, the loss's own ops (--loss) included.
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return active.contains(v); }))
      for (Value r : op.getResults())
        if (isa<FloatType>(typeOf(r).getElementType()))
          active.insert(r);
  if (!active.contains(*loss))
    return fn.emitError("the loss depends on no trainable initializer");
  if (scalesLoss)
    lossScale = scaleOfLoss(typeOf(*loss).getElementType().isF32());
  if (failed(differentiate(*loss)))
    return failure();
  Operation *lastBackward = ret->getPrevNode();
  SmallVector<std::pair<WeightOp, Value>> trainedGrads;
  for (auto w : llvm::to_vector(fn.getOps<WeightOp>()))
    if (Value grad = grads.lookup(w.getResult()))
      trainedGrads.push_back({w, grad});
  Value finite = lossScale ? unscale(trainedGrads) : Value();
  for (auto [w, grad] : trainedGrads) {
    ++counts.parameters;
    counts.parameterElements += typeOf(w).getNumElements();
    update(w, grad);
  }
  if (finite)
    skipUnlessFinite(finite);
  if (draws.first)
    assigns.push_back(draws);
  if (g.failed())
    return failure();
  for (Operation *op = lastBackward->getNextNode(); op != ret;
       op = op->getNextNode())
    op->setAttr(kOptimizerAttr, UnitAttr::get(fn.getContext()));
  for (auto [target, value] : assigns)
    AssignOp::create(b, target.getLoc(), target, value);
  for (AssignOp update : bufferUpdates)
    update->moveBefore(ret);
  // Gradients no one needs (of inputs, of constant exponents) go.
  returnLoss(ret, *loss);
  if (o.recompute)
    counts.recomputedOps = recomputeLayers(fn, o.selective);
  else
    for (Operation &op : body)
      op.removeAttr(kLayerAttr);
  if (report)
    *report = counts;
  return success();
}

} // namespace

LogicalResult StepBuilder::addLoss() {
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0)
    return fn.emitError("the model has no outputs to train on");
  b.setInsertionPoint(ret);
  g.setLocation(ret.getLoc());
  auto loss = buildLoss(ret.getOperand(0));
  if (failed(loss) || g.failed())
    return failure();
  returnLoss(ret, *loss);
  return success();
}

/// @main returns `loss` alone, named so, in place of `ret`; what nothing
/// reads any more goes.
void StepBuilder::returnLoss(func::ReturnOp ret, Value loss) {
  b.setInsertionPoint(ret);
  auto returned = func::ReturnOp::create(b, ret.getLoc(), ValueRange{loss});
  ret.erase();
  b.setInsertionPoint(returned);
  fn.setType(FunctionType::get(fn.getContext(),
                               fn.getBody().front().getArgumentTypes(),
                               {loss.getType()}));
  fn.setAllResultAttrs(ArrayRef<DictionaryAttr>{DictionaryAttr::get(
      fn.getContext(), {b.getNamedAttr("pcc.name", b.getStringAttr("loss"))})});
  IRRewriter rewriter(fn.getContext());
  (void)runRegionDCE(rewriter, fn->getRegions());
}

LogicalResult addTrainingLoss(ModuleOp module, const TrainOptions &options) {
  auto fn = module.lookupSymbol<func::FuncOp>("main");
  if (!fn)
    return module.emitError("module has no func.func @main");
  if (options.loss == LossKind::ModelOutput)
    return success();
  return StepBuilder(fn, options).addLoss();
}

LogicalResult buildTrainingStep(ModuleOp module, const TrainOptions &options,
                                TrainStepReport *report) {
  auto fn = module.lookupSymbol<func::FuncOp>("main");
  if (!fn)
    return module.emitError("module has no func.func @main");
  StepBuilder step(fn, options);
  if (failed(step.run(report)))
    return failure();
  module->setAttr(kTrainStepAttr, UnitAttr::get(module.getContext()));
  return success();
}

} // namespace pcc
