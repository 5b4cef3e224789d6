//===- Microbatches.cpp - a training step over several microbatches -------===//
//
// A pipeline streams a batch as microbatches: the runtime runs the program
// once per microbatch (the grid's microbatch axis). A training step sums its
// gradients (and averages its loss) over the whole batch, which the
// partitioner writes as collectives over that axis. This pass turns them
// into accumulation across runs:
// - a collective over the microbatch axis alone contributes each run's
//   block (a sum, or the block at this microbatch's place) and holds the
//   whole-batch result after the last run; the rest of a collective over
//   more axes runs on that result (all-reduce and reduce-scatter: once, after
//   the sum; all-gather: each run, before it);
// - the ops that read such results, and the optimizer update with its
//   assignments, run once per step after the last microbatch: they carry
//   `pcc.once_per_step` and move to the end of the program (their order
//   kept);
// - the backward ops (of gradient rules, and what reads their values) carry
//   `pcc.backward` and move after every forward op, so that a pipeline
//   schedule can run a microbatch's forward and backward apart (1F1B).
// - in a zero-bubble step (ParallelPlan::zeroBubble) the backward ops that
//   reach nothing another stage reads (the weights' gradients and their
//   sums over microbatches: W) also carry `pcc.backward_weight` and move
//   after the rest (B), so that ZB-H1 can run a microbatch's W after later
//   microbatches' B passes;
// - a sum over the batch that depends on the inputs alone and that each
//   microbatch's backward pass needs (a cross-entropy's count of targets) is
//   computed by a prologue: a copy of the ops that make it, marked
//   `pcc.prologue` and placed first, which the runtime runs over every
//   microbatch before the step's forward passes.
// Invariant: an op that runs once per step reads no value of a single
// microbatch (else the error asks for --microbatches 1).
//
//===----------------------------------------------------------------------===//

#include "pcc/Autodiff/TrainStep.h"
#include "pcc/Partition/Passes.h"
#include "pcc/Partition/Stages.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Sharding/ParallelPlan.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

using namespace mlir;

namespace pcc {

#define GEN_PASS_DEF_ACCUMULATEMICROBATCHES
#include "pcc/Partition/Passes.h.inc"

namespace {

SmallVector<int16_t> axesOf(Operation *op) {
  auto a = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
  return a ? SmallVector<int16_t>(a.asArrayRef()) : SmallVector<int16_t>();
}

} // namespace

bool acrossMicrobatches(Operation *op, int64_t mb) {
  return isa<shard::AllReduceOp, shard::AllGatherOp>(op) &&
         axesOf(op) == SmallVector<int16_t>{int16_t(mb)};
}

namespace {

class Accumulator {
public:
  Accumulator(func::FuncOp fn, const Mesh &mesh, bool zeroBubble)
      : fn(fn), b(fn.getContext()), mesh(mesh),
        mb(mesh.axisNamed(kMicrobatchAxis)), zeroBubble(zeroBubble) {}

  LogicalResult run();

private:
  /// Splits a collective over the microbatch axis and others in two.
  LogicalResult split(Operation *op);
  /// Moves the sums over microbatches of values that depend on the inputs
  /// alone into the prologue.
  void buildPrologue();
  /// Marks and moves a zero-bubble step's W ops among `backward` (in
  /// program order) before `end`.
  void splitWeightGradients(ArrayRef<Operation *> backward, Operation *end);
  void copyStage(Operation *from, Operation *to) {
    if (Attribute s = from->getAttr(kStageAttr))
      to->setAttr(kStageAttr, s);
  }

  func::FuncOp fn;
  OpBuilder b;
  const Mesh &mesh;
  int16_t mb;
  bool zeroBubble;
};

void Accumulator::splitWeightGradients(ArrayRef<Operation *> backward,
                                       Operation *end) {
  // B: a backward op whose value another stage's backward reads (the
  // input's gradient, sent on), or that one of B's own ops reads; found
  // from the last op back. The rest is W: no B op reads a W value, so W
  // moves after B with every operand still defined before its use.
  auto stage = [](Operation *op) {
    auto s = op->getAttrOfType<IntegerAttr>(kStageAttr);
    return s ? s.getInt() : 0;
  };
  llvm::DenseSet<Operation *> inputPart;
  for (Operation *op : llvm::reverse(backward))
    for (Operation *user : op->getUsers())
      if (user->hasAttr(kBackwardAttr) &&
          (stage(user) != stage(op) || inputPart.contains(user))) {
        inputPart.insert(op);
        break;
      }
  for (Operation *op : backward)
    if (!inputPart.contains(op)) {
      op->moveBefore(end);
      op->setAttr(kBackwardWeightAttr, UnitAttr::get(fn.getContext()));
    }
}

LogicalResult Accumulator::split(Operation *op) {
  SmallVector<int16_t> axes = axesOf(op);
  if (!llvm::is_contained(axes, mb) || isa<shard::AllSliceOp>(op) ||
      acrossMicrobatches(op, mb))
    return success();
  SmallVector<int16_t> rest(axes);
  llvm::erase(rest, mb);
  int64_t restSize = 1;
  for (int16_t a : rest)
    restSize *= mesh.shape[a];
  b.setInsertionPoint(op);
  Location loc = op->getLoc();
  StringRef grid = mesh.name;
  Value in = op->getOperand(0);
  Operation *first = nullptr, *second = nullptr;
  if (auto r = dyn_cast<shard::AllReduceOp>(op)) {
    first = shard::AllReduceOp::create(b, loc, in.getType(), grid,
                                       ArrayRef<int16_t>{mb}, in);
    second = shard::AllReduceOp::create(b, loc, in.getType(), grid, rest,
                                        first->getResult(0));
  } else if (auto rs = dyn_cast<shard::ReduceScatterOp>(op);
             rs && axes.front() != mb) {
    // The sum over microbatches, then the scatter over the other axes.
    first = shard::AllReduceOp::create(b, loc, in.getType(), grid,
                                       ArrayRef<int16_t>{mb}, in);
    second = shard::ReduceScatterOp::create(
        b, loc, rs.getResult().getType(), grid, rest, first->getResult(0),
        rs.getReduction(), rs.getScatterAxis());
  } else if (auto ag = dyn_cast<shard::AllGatherOp>(op);
             ag && axes.front() == mb) {
    // Microbatches are the outer blocks: the other axes' gather first, in
    // each run.
    int64_t at = ag.getGatherAxis().getSExtValue();
    SmallVector<int64_t> shape(shapeOf(in));
    shape[at] *= restSize;
    first = shard::AllGatherOp::create(b, loc, typeOf(in).clone(shape), grid,
                                       rest, in, ag.getGatherAxis());
    second = shard::AllGatherOp::create(
        b, loc, ag.getResult().getType(), grid, ArrayRef<int16_t>{mb},
        first->getResult(0), ag.getGatherAxis());
  } else {
    return op->emitError()
           << "this step needs values of several microbatches at once ('"
           << op->getName()
           << "' over the microbatch axis and others); compile with "
              "--microbatches 1";
  }
  copyStage(op, first);
  copyStage(op, second);
  op->getResult(0).replaceAllUsesWith(second->getResult(0));
  op->erase();
  return success();
}

/// Whether `v` depends on the model's inputs and constants alone.
bool inputsOnly(Value v, llvm::DenseMap<Value, bool> &memo) {
  if (isa<BlockArgument>(v))
    return true;
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  bool only = isa<ConstantOp>(def) ||
              (!isa<WeightOp, RecvOp>(def) && !def->hasAttr(kOncePerStepAttr) &&
               def->getNumRegions() == 0 &&
               llvm::all_of(def->getOperands(),
                            [&](Value o) { return inputsOnly(o, memo); }));
  memo[v] = only;
  return only;
}

void Accumulator::buildPrologue() {
  Block &block = fn.getBody().front();
  llvm::DenseMap<Value, bool> memo;
  SmallVector<Operation *> early;
  for (Operation &op : block.without_terminator())
    if (acrossMicrobatches(&op, mb) && inputsOnly(op.getOperand(0), memo))
      early.push_back(&op);
  if (early.empty())
    return;
  // The ops that make them, in program order, copied to the start.
  llvm::SetVector<Operation *> cone;
  std::function<void(Operation *)> collect = [&](Operation *op) {
    if (cone.contains(op))
      return;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        collect(def);
    cone.insert(op);
  };
  for (Operation *op : early)
    collect(op);
  SmallVector<Operation *> ordered(cone.begin(), cone.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  b.setInsertionPointToStart(&block);
  IRMapping map;
  for (Operation *op : ordered) {
    Operation *copy = b.clone(*op, map);
    if (!isa<ConstantOp>(copy))
      copy->setAttr(kPrologueAttr, UnitAttr::get(fn.getContext()));
  }
  SmallVector<Operation *> sums;
  for (Operation *op : early)
    sums.push_back(map.lookup(op->getResult(0)).getDefiningOp());
  for (Operation *op : llvm::reverse(ordered)) {
    if (llvm::is_contained(early, op))
      op->getResult(0).replaceAllUsesWith(map.lookup(op->getResult(0)));
    if (op->use_empty())
      op->erase();
  }
  // The rest of a split collective (the sum over dp of the count of
  // targets) reads the sum over microbatches whole: it runs once, in the
  // last prologue run, not again in every microbatch's forward.
  for (Operation *copy : sums)
    for (Operation *user : llvm::make_early_inc_range(copy->getUsers()))
      if (user->hasAttr("grid_axes") && user->getNumOperands() == 1 &&
          !user->hasAttr(kPrologueAttr) &&
          !llvm::is_contained(axesOf(user), mb)) {
        user->moveAfter(copy);
        user->setAttr(kPrologueAttr, UnitAttr::get(fn.getContext()));
        user->setAttr(kPrologueLastAttr, UnitAttr::get(fn.getContext()));
      }
}

LogicalResult Accumulator::run() {
  SmallVector<Operation *> collectives;
  fn.walk([&](Operation *op) {
    if (op->hasAttr("grid_axes"))
      collectives.push_back(op);
  });
  for (Operation *op : collectives)
    if (failed(split(op)))
      return failure();
  buildPrologue();

  // Values of one microbatch (they depend on the inputs, or on this run's
  // block of something) and the ops that run once per step.
  Block &block = fn.getBody().front();
  llvm::DenseSet<Value> perRun(block.getArguments().begin(),
                               block.getArguments().end());
  llvm::DenseSet<Operation *> once;
  SmallVector<Operation *> moved;
  for (Operation &op : block.without_terminator()) {
    // The prologue's results are there before the first microbatch.
    if (isa<WeightOp, ConstantOp>(op) || op.hasAttr(kPrologueAttr))
      continue;
    bool readsWhole = false, readsRun = false;
    Value runValue;
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && (once.contains(def) || (acrossMicrobatches(def, mb) &&
                                         !def->hasAttr(kPrologueAttr))))
        readsWhole = true;
      else if (perRun.contains(v)) {
        readsRun = true;
        runValue = v;
      }
    }
    if (acrossMicrobatches(&op, mb))
      continue;
    bool sliced =
        isa<shard::AllSliceOp>(op) && llvm::is_contained(axesOf(&op), mb);
    bool isOnce =
        (readsWhole || op.hasAttr(kOptimizerAttr) || isa<AssignOp>(op));
    if (isOnce) {
      if (readsRun) {
        InFlightDiagnostic d =
            op.emitError()
            << "runs once per step, after the last microbatch, but reads a "
               "value of one microbatch";
        if (Operation *def = runValue.getDefiningOp())
          d << " ('" << def->getName() << "')";
        d << "; compile with --microbatches 1";
        return failure();
      }
      once.insert(&op);
      moved.push_back(&op);
      continue;
    }
    if (readsRun || sliced)
      for (Value r : op.getResults())
        perRun.insert(r);
  }
  Operation *ret = block.getTerminator();
  for (Operation *op : moved) {
    op->moveBefore(ret);
    op->setAttr(kOncePerStepAttr, UnitAttr::get(fn.getContext()));
  }
  // Backward ops after the forward ones (order kept; no forward op reads a
  // backward value), before the update.
  Operation *firstOnce = moved.empty() ? ret : moved.front();
  llvm::DenseSet<Operation *> backward;
  SmallVector<Operation *> toMove;
  for (Operation &op : block.without_terminator()) {
    if (&op == firstOnce)
      break;
    if (isa<WeightOp, ConstantOp>(op) || op.hasAttr(kPrologueAttr))
      continue;
    bool isBackward = op.hasAttr(kGradientOfAttr) ||
                      llvm::any_of(op.getOperands(), [&](Value v) {
                        Operation *def = v.getDefiningOp();
                        return def && backward.contains(def);
                      });
    if (isBackward) {
      backward.insert(&op);
      toMove.push_back(&op);
    }
  }
  for (Operation *op : toMove) {
    op->moveBefore(firstOnce);
    op->setAttr(kBackwardAttr, UnitAttr::get(fn.getContext()));
  }
  if (zeroBubble)
    splitWeightGradients(toMove, firstOnce);
  return success();
}

struct AccumulateMicrobatchesPass
    : impl::AccumulateMicrobatchesBase<AccumulateMicrobatchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Mesh> mesh = readMesh(module);
    if (!mesh || !module->hasAttr(kTrainStepAttr))
      return;
    int64_t mb = mesh->axisNamed(kMicrobatchAxis);
    if (mb < 0 || mesh->shape[mb] == 1)
      return;
    auto fn = module.lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      module.emitError("module has no func.func @main");
      return signalPassFailure();
    }
    // Ops the partitioner added run in the stage of the op they feed, also
    // when the update moves away from them.
    int64_t pp = mesh->axisNamed("pp");
    if (pp >= 0)
      stageAddedOps(fn, mesh->shape[pp]);
    std::optional<ParallelPlan> plan = readPlan(module);
    if (failed(Accumulator(fn, *mesh, plan && plan->zeroBubble).run()))
      signalPassFailure();
  }
};

} // namespace
} // namespace pcc
