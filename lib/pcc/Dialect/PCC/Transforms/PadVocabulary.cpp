//===- PadVocabulary.cpp - pad the vocabulary so tp splits it -------------===//
//
// GPT-2's 50257 tokens divide by no tensor-parallel degree, so its
// embedding and head stayed whole on every device. Megatron-LM pads the
// vocabulary with zero rows to a multiple of 128 x tp; so does this pass,
// when the vocabulary does not divide by the degree already.
//
// The vocabulary is the largest table an embedding lookup (a gather of
// rows) reads from a weight; its rows and every weight a matrix product
// turns into logits over it (a tied or separate head, its bias) get zero
// rows. Exactness: token ids never reach the padded rows; the logits gain
// columns ("pad columns") that are carried, as values of no meaning, through
// the ops that keep columns apart (views, transposes, pointwise ops with
// operands padded alike), and are hidden where columns meet: a softmax or
// a sum over the vocabulary reads a select that puts the lowest float (a
// sum's 0) in them, so its result, and every gradient into a pad column, is
// what the unpadded model computes. Every other reader gets the value
// sliced back to the vocabulary (a function result, a mean over it), so
// the model's results keep their shapes and values.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Dialect/PCC/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/APFloat.h"

namespace pcc {
#define GEN_PASS_DEF_PADVOCABULARY
#include "pcc/Dialect/PCC/Transforms/Passes.h.inc"
} // namespace pcc

using namespace mlir;
using namespace pcc;

namespace {

/// The axis of a `rank`-dimensional operand that meets `axis` of a result
/// of rank `outRank` under numpy broadcasting, or -1 when it has none.
int64_t alignedAxis(int64_t axis, int64_t rank, int64_t outRank) {
  int64_t a = axis - (outRank - rank);
  return a >= 0 ? a : -1;
}

/// A reshape's output axis holding input axis `axis` whole (of `size`
/// elements in both, the same elements before it), or -1.
int64_t reshapedAxis(ArrayRef<int64_t> in, ArrayRef<int64_t> out, int64_t axis,
                     int64_t size) {
  int64_t before = 1;
  for (int64_t i = 0; i < axis; ++i)
    before *= in[i];
  int64_t seen = 1;
  for (auto [o, outSize] : llvm::enumerate(out)) {
    if (seen == before && outSize == size)
      return o;
    seen *= outSize;
  }
  return -1;
}

class Padder {
public:
  Padder(func::FuncOp fn, int64_t rows, int64_t multiple)
      : fn(fn), b(fn.getContext()), rows(rows),
        padded((rows + multiple - 1) / multiple * multiple),
        multiple(multiple) {}

  void run(WeightOp table);

private:
  bool isPadded(Value v, int64_t axis) const {
    auto it = axisOf.find(v);
    return it != axisOf.end() && it->second == axis;
  }
  /// `v`'s type with `axis` padded.
  RankedTensorType paddedType(Value v, int64_t axis) const {
    SmallVector<int64_t> shape(typeOf(v).getShape());
    shape[axis] = padded;
    return typeOf(v).clone(shape);
  }
  void retype(Value v, int64_t axis) {
    v.setType(paddedType(v, axis));
    axisOf[v] = axis;
  }
  void padWeight(WeightOp w, int64_t axis);
  bool padsAt(WeightOp w, Operation *at) const;
  Value constantOf(RankedTensorType type, Attribute value);
  Value hidePadColumns(Value x, int64_t axis, Attribute fill);
  FailureOr<Value> padOperand(Value y, int64_t axis, Operation *at);
  FailureOr<Value> padCopy(Value y, int64_t axis, Operation *at);
  bool padPointwise(Operation *op, int64_t axis);
  void visit(Operation *op);
  void cut(Operation *op);
  void findHeads();

  func::FuncOp fn;
  OpBuilder b;
  int64_t rows, padded, multiple;
  /// Values carrying pad columns, and on which axis.
  llvm::DenseMap<Value, int64_t> axisOf;
  /// Padded copies made of values read unpadded elsewhere, by (value,
  /// axis).
  llvm::DenseMap<std::pair<Value, int64_t>, Value> copies;
};

void Padder::padWeight(WeightOp w, int64_t axis) {
  if (axisOf.count(w.getResult()))
    return;
  w.setUnpaddedAttr(b.getDenseI64ArrayAttr(typeOf(w.getResult()).getShape()));
  retype(w.getResult(), axis);
}

/// Whether `w` can be padded now that `at` reads it: no op before `at`
/// (visited already) reads it.
bool Padder::padsAt(WeightOp w, Operation *at) const {
  return llvm::all_of(w->getUsers(), [&](Operation *u) {
    return u == at || at->isBeforeInBlock(u);
  });
}

Value Padder::constantOf(RankedTensorType type, Attribute value) {
  return ConstantOp::create(b, fn.getLoc(), type,
                            DenseElementsAttr::get(type, value));
}

/// `x` with its pad columns on `axis` replaced by `fill`.
Value Padder::hidePadColumns(Value x, int64_t axis, Attribute fill) {
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = padded;
  SmallVector<bool> keep(padded, false);
  std::fill(keep.begin(), keep.begin() + rows, true);
  auto maskType = RankedTensorType::get(shape, b.getI1Type());
  Value mask = ConstantOp::create(b, x.getLoc(), maskType,
                                  DenseElementsAttr::get(maskType, keep));
  Value fillValue =
      constantOf(RankedTensorType::get(SmallVector<int64_t>(rank, 1),
                                       typeOf(x).getElementType()),
                 fill);
  return WhereOp::create(b, x.getLoc(), x.getType(), mask, x, fillValue);
}

/// `y`, of `rows` on `axis`, made again with pad columns (a constant's
/// last column repeated; a weight's zeros; a pointwise op or view of
/// those), or failure.
FailureOr<Value> Padder::padOperand(Value y, int64_t axis, Operation *at) {
  if (isPadded(y, axis))
    return y;
  if (typeOf(y).getDimSize(axis) != rows)
    return failure();
  Operation *def = y.getDefiningOp();
  if (!def)
    return failure();
  if (auto w = dyn_cast<WeightOp>(def)) {
    if (!padsAt(w, at) || axisOf.count(y) ||
        !isa<FloatType>(typeOf(y).getElementType()))
      return failure();
    padWeight(w, axis);
    return y;
  }
  // One padded copy per value: later readers come after it.
  if (Value copy = copies.lookup({y, axis}))
    return copy;
  auto copy = padCopy(y, axis, at);
  if (succeeded(copy))
    copies[{y, axis}] = *copy;
  return copy;
}

/// padOperand's copy of a constant, a view or a pointwise op's result.
FailureOr<Value> Padder::padCopy(Value y, int64_t axis, Operation *at) {
  Operation *def = y.getDefiningOp();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(at);
  if (auto c = dyn_cast<ConstantOp>(def)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense)
      return failure();
    RankedTensorType type = paddedType(y, axis);
    if (dense.isSplat())
      return constantOf(type, dense.getSplatValue<Attribute>());
    ArrayRef<int64_t> shape = typeOf(y).getShape();
    int64_t inner = 1;
    for (int64_t s : shape.drop_front(axis + 1))
      inner *= s;
    SmallVector<Attribute> in(dense.getValues<Attribute>()), out;
    int64_t outer = in.size() / (rows * inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < padded; ++k)
        for (int64_t i = 0; i < inner; ++i)
          out.push_back(in[(o * rows + std::min(k, rows - 1)) * inner + i]);
    return ConstantOp::create(b, c.getLoc(), type,
                              DenseElementsAttr::get(type, out))
        .getResult();
  }
  if (auto r = dyn_cast<ReshapeOp>(def)) {
    ArrayRef<int64_t> in = typeOf(r.getInput()).getShape();
    int64_t from = reshapedAxis(typeOf(y).getShape(), in, axis, rows);
    if (from < 0)
      return failure();
    auto input = padOperand(r.getInput(), from, at);
    if (failed(input))
      return failure();
    SmallVector<int64_t> shape(typeOf(y).getShape());
    shape[axis] = padded;
    return ReshapeOp::create(b, r.getLoc(), paddedType(y, axis), *input,
                             b.getDenseI64ArrayAttr(shape))
        .getResult();
  }
  if (!def->hasTrait<pcc::OpTrait::Pointwise>() ||
      isa<ExpandOp, DropoutOp>(def) || def->getNumResults() != 1)
    return failure();
  Operation *copy = b.clone(*def);
  if (!padPointwise(copy, axis)) {
    copy->erase();
    return failure();
  }
  return copy->getResult(0);
}

/// Pads pointwise `op`'s operands that reach `axis` of its result (made
/// again before it) and retypes the result; false (nothing changed but
/// padded weights) when an operand cannot be padded.
bool Padder::padPointwise(Operation *op, int64_t axis) {
  int64_t outRank = typeOf(op->getResult(0)).getRank();
  if (typeOf(op->getResult(0)).getDimSize(axis) != rows)
    return false;
  SmallVector<std::pair<unsigned, Value>> changes;
  for (OpOperand &operand : op->getOpOperands()) {
    Value v = operand.get();
    int64_t a = alignedAxis(axis, typeOf(v).getRank(), outRank);
    if (a < 0 || typeOf(v).getDimSize(a) == 1 || isPadded(v, a))
      continue;
    auto p = padOperand(v, a, op);
    if (failed(p))
      return false;
    changes.push_back({operand.getOperandNumber(), *p});
  }
  for (auto [i, v] : changes)
    op->setOperand(i, v);
  retype(op->getResult(0), axis);
  return true;
}

/// Slices `op`'s padded operands back to the vocabulary.
void Padder::cut(Operation *op) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  for (OpOperand &operand : op->getOpOperands()) {
    Value v = operand.get();
    auto it = axisOf.find(v);
    if (it == axisOf.end())
      continue;
    int64_t rank = typeOf(v).getRank();
    SmallVector<int64_t> sizes(typeOf(v).getShape());
    sizes[it->second] = rows;
    auto slice =
        SliceOp::create(b, op->getLoc(), typeOf(v).clone(sizes), v,
                        b.getDenseI64ArrayAttr(SmallVector<int64_t>(rank, 0)),
                        b.getDenseI64ArrayAttr(sizes),
                        b.getDenseI64ArrayAttr(SmallVector<int64_t>(rank, 1)));
    operand.set(slice.getResult());
  }
}

void Padder::visit(Operation *op) {
  SmallVector<std::pair<unsigned, int64_t>> in;
  for (OpOperand &operand : op->getOpOperands())
    if (auto it = axisOf.find(operand.get()); it != axisOf.end())
      in.push_back({operand.getOperandNumber(), it->second});
  if (in.empty())
    return;
  auto [index, axis] = in.front();
  auto resultHas = [&](int64_t a) {
    return op->getNumResults() == 1 && typeOf(op->getResult(0)).getRank() > a &&
           typeOf(op->getResult(0)).getDimSize(a) == rows;
  };
  Type elem = typeOf(op->getOperand(index)).getElementType();
  auto floatFill = [&](bool largest, bool negative) -> Attribute {
    auto f = dyn_cast<FloatType>(elem);
    if (!f)
      return {};
    if (!largest)
      return b.getFloatAttr(f, 0.0);
    return b.getFloatAttr(f,
                          APFloat::getLargest(f.getFloatSemantics(), negative));
  };
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  bool alone = in.size() == 1;

  if (isa<func::ReturnOp>(op)) {
    // Returned padded, as split as they are: the runtime cuts the pad
    // columns off the whole result (slicing here would gather them).
    SmallVector<Type> results(fn.getResultTypes());
    for (auto [i, axis] : in) {
      fn.setResultAttr(i, kUnpaddedResultAttr,
                       b.getDenseI64ArrayAttr(
                           cast<RankedTensorType>(results[i]).getShape()));
      results[i] = op->getOperand(i).getType();
    }
    fn.setType(b.getFunctionType(fn.getArgumentTypes(), results));
    return;
  }
  if (auto g = dyn_cast<GatherOp>(op)) {
    // Token ids pick rows of the table, never its pad rows.
    int64_t rank = typeOf(g.getInput()).getRank();
    int64_t gatherAxis = g.getAxis() < 0 ? g.getAxis() + rank : g.getAxis();
    if (alone && index == 0 && axis == gatherAxis)
      return;
  } else if (auto t = dyn_cast<TransposeOp>(op)) {
    auto perm = t.getPerm();
    retype(t.getResult(), llvm::find(perm, axis) - perm.begin());
    return;
  } else if (auto r = dyn_cast<ReshapeOp>(op)) {
    int64_t to = reshapedAxis(typeOf(r.getInput()).getShape(),
                              typeOf(r.getResult()).getShape(), axis, rows);
    if (to >= 0) {
      SmallVector<int64_t> shape(r.getShape());
      shape[to] = padded;
      r.setShape(shape);
      retype(r.getResult(), to);
      return;
    }
  } else if (auto s = dyn_cast<SliceOp>(op)) {
    if (s.getStarts()[axis] == 0 && s.getSizes()[axis] == rows &&
        s.getSteps()[axis] == 1) {
      SmallVector<int64_t> sizes(s.getSizes());
      sizes[axis] = padded;
      s.setSizes(sizes);
      retype(s.getResult(), axis);
      return;
    }
  } else if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
    int64_t softmaxAxis = op->getAttrOfType<IntegerAttr>("axis").getInt();
    if (softmaxAxis == axis) {
      if (Attribute fill = floatFill(true, true))
        op->setOperand(0, hidePadColumns(op->getOperand(0), axis, fill));
      else
        return cut(op);
    }
    retype(op->getResult(0), axis);
    return;
  } else if (isa<ReduceSumOp, ReduceMaxOp, ReduceMinOp, ReduceMeanOp,
                 ReduceProdOp>(op)) {
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    auto keepdims = op->getAttrOfType<BoolAttr>("keepdims");
    bool keep = !keepdims || keepdims.getValue(); // ONNX's default
    if (!llvm::is_contained(axes, axis)) {
      int64_t to = keep ? axis : axis - llvm::count_if(axes, [&](int64_t a) {
                                   return a < axis;
                                 });
      retype(op->getResult(0), to);
      return;
    }
    Attribute fill = isa<ReduceSumOp>(op)   ? floatFill(false, false)
                     : isa<ReduceMaxOp>(op) ? floatFill(true, true)
                     : isa<ReduceMinOp>(op) ? floatFill(true, false)
                                            : Attribute();
    if (fill) {
      op->setOperand(0, hidePadColumns(op->getOperand(0), axis, fill));
      return;
    }
  } else if (auto mm = dyn_cast<MatMulOp>(op)) {
    // A head: logits over the vocabulary from its rows.
    if (alone && index == 1 && typeOf(mm.getRhs()).getRank() == 2 &&
        axis == 1 && resultHas(typeOf(mm.getResult()).getRank() - 1)) {
      retype(mm.getResult(), typeOf(mm.getResult()).getRank() - 1);
      return;
    }
  } else if (auto g = dyn_cast<GemmOp>(op)) {
    if (alone && index == 1 && axis == (g.getTransB() ? 0 : 1) &&
        resultHas(1)) {
      Value c = g.getC();
      int64_t a = c ? alignedAxis(1, typeOf(c).getRank(), 2) : -1;
      if (a >= 0 && typeOf(c).getDimSize(a) != 1) {
        auto p = padOperand(c, a, op);
        if (failed(p))
          return cut(op);
        g.getCMutable().assign(*p);
      }
      retype(g.getResult(), 1);
      return;
    }
  } else if (op->hasTrait<pcc::OpTrait::Pointwise>() &&
             !isa<ExpandOp, DropoutOp>(op)) {
    int64_t outRank = typeOf(op->getResult(0)).getRank();
    int64_t resultAxis =
        axis + (outRank - typeOf(op->getOperand(index)).getRank());
    bool sameAxis = llvm::all_of(in, [&](auto p) {
      return p.second + (outRank - typeOf(op->getOperand(p.first)).getRank()) ==
             resultAxis;
    });
    if (sameAxis && padPointwise(op, resultAxis))
      return;
  }
  cut(op);
}

/// Weights a matrix product turns into logits over the vocabulary (a head
/// not tied to the embedding): padded on the rows they give.
void Padder::findHeads() {
  auto weightBehind = [](Value v) -> std::pair<WeightOp, bool> {
    bool transposed = false;
    while (auto t = v.getDefiningOp<TransposeOp>()) {
      if (typeOf(v).getRank() != 2)
        return {};
      transposed = !transposed;
      v = t.getInput();
    }
    return {v.getDefiningOp<WeightOp>(), transposed};
  };
  fn.walk([&](Operation *op) {
    Value w;
    int64_t nAxis = 1;
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      if (typeOf(mm.getRhs()).getRank() != 2)
        return;
      w = mm.getRhs();
    } else if (auto g = dyn_cast<GemmOp>(op)) {
      w = g.getB();
      nAxis = g.getTransB() ? 0 : 1;
    } else {
      return;
    }
    if (typeOf(op->getResult(0)).getShape().back() != rows ||
        typeOf(w).getDimSize(nAxis) != rows)
      return;
    auto [weight, transposed] = weightBehind(w);
    if (weight && isa<FloatType>(typeOf(weight.getResult()).getElementType()))
      padWeight(weight, transposed ? 1 - nAxis : nAxis);
  });
}

void Padder::run(WeightOp table) {
  padWeight(table, 0);
  findHeads();
  for (Operation &op :
       llvm::make_early_inc_range(fn.getBody().front().getOperations()))
    visit(&op);
  // What the padded copies replaced (a one-hot over the vocabulary).
  for (Operation &op : llvm::make_early_inc_range(
           llvm::reverse(fn.getBody().front().getOperations())))
    if (isOpTriviallyDead(&op))
      op.erase();
  fn->setAttr(kPaddedVocabularyAttr,
              b.getDenseI64ArrayAttr({rows, padded, multiple}));
}

struct PadVocabularyPass : pcc::impl::PadVocabularyBase<PadVocabularyPass> {
  using PadVocabularyBase::PadVocabularyBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (tensorDegree <= 1 || multiple < 1 || fn.getBody().empty())
      return;
    // The vocabulary: the largest table rows are looked up in.
    WeightOp table;
    fn.walk([&](GatherOp g) {
      auto w = g.getInput().getDefiningOp<WeightOp>();
      auto type = typeOf(g.getInput());
      if (!w || type.getRank() != 2 || g.getAxis() != 0 ||
          !isa<FloatType>(type.getElementType()))
        return;
      if (!table ||
          type.getDimSize(0) > typeOf(table.getResult()).getDimSize(0))
        table = w;
    });
    if (!table)
      return;
    int64_t rows = typeOf(table.getResult()).getDimSize(0);
    if (rows % tensorDegree == 0)
      return;
    Padder(fn, rows, multiple * tensorDegree).run(table);
  }
};

} // namespace
