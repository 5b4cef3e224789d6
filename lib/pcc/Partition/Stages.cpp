//===- Stages.cpp - pipeline stages of a program --------------------------===//
//
// Invariants after pcc-pipeline-stages:
// - every op of @main but the terminator has a `pcc.stage`, non-decreasing in
//   program order;
// - an op uses only values of its own stage, model inputs, or weights and
//   constants of its own stage;
// - a value one stage needs from another arrives by a pcc.recv at the start
//   of the receiving stage, sent by a pcc.send at the end of the producing
//   stage; receives are ordered by (source stage, tag) and sends by
//   (destination stage, tag), so for every microbatch each stage's waits are
//   on lower stages' sends or on higher stages' receives that are already
//   posted: the exchange cannot deadlock.
//
//===----------------------------------------------------------------------===//

#include "pcc/Partition/Stages.h"
#include "pcc/Partition/Passes.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Sharding/ParallelPlan.h"
#include "pcc/Support/StageBalance.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"


using namespace mlir;

namespace pcc {

#define GEN_PASS_DEF_PIPELINESTAGES
#include "pcc/Partition/Passes.h.inc"

namespace {

bool isParameter(Operation *op) { return isa<WeightOp, ConstantOp>(op); }

/// A weight or constant, or a device's block of one or of a model input (an
/// all_slice moves no data): each stage makes its own instead of receiving
/// it.
bool isLocalParameter(Operation *op) {
  if (isParameter(op))
    return true;
  if (!isa<shard::AllSliceOp>(op))
    return false;
  Operation *def = op->getOperand(0).getDefiningOp();
  return !def || isLocalParameter(def);
}

/// Arithmetic of `op` as the ops state it (the planner's measure, without
/// the cluster): its GEMMs, else its work per result element.
double workOf(Operation *op) {
  if (auto c = dyn_cast<ContractionOpInterface>(op))
    return c.gemmShape().flops();
  double elements = 0;
  for (Value r : op->getResults())
    elements += double(numElements(shapeOf(r)));
  if (auto w = dyn_cast<WorkOpInterface>(op))
    return elements * w.getFlopsPerElement();
  return elements;
}

void setStage(Operation *op, int64_t stage) {
  op->setAttr(kStageAttr,
              IntegerAttr::get(IntegerType::get(op->getContext(), 64), stage));
}

} // namespace

std::optional<int64_t> stageOf(Operation *op) {
  if (auto a = op->getAttrOfType<IntegerAttr>(kStageAttr))
    return a.getInt();
  return std::nullopt;
}

LogicalResult assignStages(func::FuncOp fn, int64_t stages) {
  SmallVector<Operation *> ops;
  for (Operation &op : fn.getBody().front().without_terminator())
    if (!isParameter(&op))
      ops.push_back(&op);
  if (int64_t(ops.size()) < stages)
    return fn.emitError() << "the model has " << ops.size()
                          << " operations, fewer than " << stages
                          << " pipeline stages";
  bool planned = llvm::all_of(ops, [](Operation *op) {
    return op->hasAttr(kPlannedStageAttr);
  });
  if (planned) {
    int64_t last = 0;
    for (Operation *op : ops) {
      int64_t s = op->getAttrOfType<IntegerAttr>(kPlannedStageAttr).getInt();
      if (s < last || s >= stages)
        return op->emitError() << "planned pipeline stage " << s
                               << " is out of order (stages must be "
                                  "contiguous runs of the program, 0.."
                               << stages - 1 << ")";
      last = s;
      setStage(op, s);
      op->removeAttr(kPlannedStageAttr);
    }
    return success();
  }
  std::vector<double> work;
  for (Operation *op : ops)
    work.push_back(workOf(op));
  std::vector<int> starts = balanceStages(work, stages);
  for (size_t s = 0; s < starts.size(); ++s) {
    size_t end = s + 1 < starts.size() ? starts[s + 1] : ops.size();
    for (size_t i = starts[s]; i < end; ++i)
      setStage(ops[i], s);
  }
  return success();
}

namespace {

/// Makes each stage of @main self-contained (see the invariants above).
class StageCutter {
public:
  StageCutter(func::FuncOp fn, StringRef grid, int64_t axis, int64_t stages)
      : fn(fn), b(fn.getContext()), grid(grid), axis(axis), stages(stages) {}

  LogicalResult run();

private:
  LogicalResult stageEveryOp();
  /// The value `v` (of stage `from`) as stage `to` sees it: a receive.
  Value received(Value v, int64_t from, int64_t to);
  /// Stage `to`'s own copy of the weight or constant `def`.
  Value ownCopy(Operation *def, int64_t to, Operation *user);
  void placeTransfers();

  func::FuncOp fn;
  OpBuilder b;
  StringRef grid;
  int64_t axis, stages;
  /// First op of each stage, in program order.
  SmallVector<Operation *> firstOp;
  struct Transfer {
    Value value;
    int64_t from, to, tag;
    Operation *recv;
  };
  std::vector<Transfer> transfers;
  llvm::DenseMap<std::pair<void *, int64_t>, Value> receivedAt, copiedAt;
};

LogicalResult StageCutter::stageEveryOp() {
  Block &block = fn.getBody().front();
  // Ops the partitioner added (collectives, reshards) run with the next
  // staged op, the one they feed.
  int64_t next = stages - 1;
  for (Operation &op : llvm::reverse(block.without_terminator())) {
    if (isParameter(&op))
      continue;
    if (std::optional<int64_t> s = stageOf(&op))
      next = *s;
    else
      setStage(&op, next);
  }
  int64_t last = 0;
  firstOp.assign(stages, nullptr);
  for (Operation &op : block.without_terminator()) {
    if (isParameter(&op))
      continue;
    int64_t s = *stageOf(&op);
    if (s < last || s >= stages)
      return op.emitError() << "pipeline stage " << s << " is out of order";
    last = s;
    if (!firstOp[s])
      firstOp[s] = &op;
  }
  for (int64_t s = 0; s < stages; ++s)
    if (!firstOp[s])
      return fn.emitError() << "pipeline stage " << s << " has no operations";
  return success();
}

Value StageCutter::received(Value v, int64_t from, int64_t to) {
  auto key = std::make_pair(v.getAsOpaquePointer(), to);
  if (Value r = receivedAt.lookup(key))
    return r;
  b.setInsertionPoint(firstOp[to]);
  int64_t tag = transfers.size();
  auto recv = RecvOp::create(b, v.getLoc(), v.getType(), grid, axis, from, tag);
  setStage(recv, to);
  transfers.push_back({v, from, to, tag, recv});
  receivedAt[key] = recv.getResult();
  return recv.getResult();
}

Value StageCutter::ownCopy(Operation *def, int64_t to, Operation *user) {
  auto key = std::make_pair(static_cast<void *>(def), to);
  if (Value c = copiedAt.lookup(key))
    return c;
  b.setInsertionPoint(user);
  Operation *copy = b.clone(*def);
  setStage(copy, to);
  for (OpOperand &use : copy->getOpOperands())
    if (Operation *d = use.get().getDefiningOp(); d && isLocalParameter(d))
      use.set(ownCopy(d, to, copy));
  copiedAt[key] = copy->getResult(0);
  return copy->getResult(0);
}

/// Receives move to the start of their stage in (source, tag) order; sends
/// go at the end of the producing stage in (destination, tag) order.
void StageCutter::placeTransfers() {
  llvm::stable_sort(transfers, [](const Transfer &a, const Transfer &b) {
    return std::tie(a.to, a.from, a.tag) < std::tie(b.to, b.from, b.tag);
  });
  for (const Transfer &t : transfers)
    t.recv->moveBefore(firstOp[t.to]);
  llvm::stable_sort(transfers, [](const Transfer &a, const Transfer &b) {
    return std::tie(a.from, a.to, a.tag) < std::tie(b.from, b.to, b.tag);
  });
  Block &block = fn.getBody().front();
  for (const Transfer &t : transfers) {
    Operation *end = t.from + 1 < stages ? firstOp[t.from + 1]
                                         : block.getTerminator();
    // The first receive of the next stage starts it: send before those.
    while (end->getPrevNode() && isa<RecvOp>(end->getPrevNode()) &&
           *stageOf(end->getPrevNode()) > t.from)
      end = end->getPrevNode();
    b.setInsertionPoint(end);
    auto send = SendOp::create(b, t.value.getLoc(), t.value, grid, axis, t.to,
                               t.tag);
    setStage(send, t.from);
  }
}

LogicalResult StageCutter::run() {
  if (failed(stageEveryOp()))
    return failure();
  Block &block = fn.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    if (!isParameter(&op))
      ops.push_back(&op);
  for (Operation *op : ops) {
    int64_t to = *stageOf(op);
    for (OpOperand &use : op->getOpOperands()) {
      Operation *def = use.get().getDefiningOp();
      if (!def)
        continue; // model inputs: every device has them
      if (isParameter(def) || (isLocalParameter(def) && *stageOf(def) != to))
        use.set(ownCopy(def, to, op));
      else if (*stageOf(def) != to)
        use.set(received(use.get(), *stageOf(def), to));
    }
  }
  placeTransfers();
  for (Operation &op : llvm::make_early_inc_range(block.without_terminator()))
    if (isParameter(&op) && !stageOf(&op) && op.use_empty())
      op.erase();
  // Each output comes from the stage that computes it.
  for (auto [i, v] : llvm::enumerate(block.getTerminator()->getOperands())) {
    int64_t s = stages - 1;
    if (Operation *def = v.getDefiningOp())
      if (std::optional<int64_t> st = stageOf(def))
        s = *st;
    fn.setResultAttr(i, kStageAttr,
                     IntegerAttr::get(IntegerType::get(fn.getContext(), 64), s));
  }
  return success();
}

/// Microbatches run one after another: an op that needs values of several
/// at once (a collective over the microbatch axis) cannot run.
LogicalResult checkMicrobatchesApart(func::FuncOp fn, const Mesh &mesh) {
  int64_t mb = mesh.axisNamed(kMicrobatchAxis);
  if (mb < 0)
    return success();
  WalkResult r = fn.walk([&](Operation *op) {
    // Taking this microbatch's block of a whole value moves no data.
    if (isa<shard::AllSliceOp>(op))
      return WalkResult::advance();
    auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
    if (!axes || !llvm::is_contained(axes.asArrayRef(), int16_t(mb)))
      return WalkResult::advance();
    op->emitError() << "this step needs values of several microbatches at "
                       "once (it mixes the batch: '"
                    << op->getName()
                    << "' over the microbatch axis); compile with "
                       "--microbatches 1";
    return WalkResult::interrupt();
  });
  return failure(r.wasInterrupted());
}

struct PipelineStagesPass : impl::PipelineStagesBase<PipelineStagesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Mesh> mesh = readMesh(module);
    int64_t axis = mesh ? mesh->axisNamed("pp") : -1;
    if (axis < 0 || mesh->shape[axis] == 1)
      return;
    auto fn = module.lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      module.emitError("module has no func.func @main");
      return signalPassFailure();
    }
    if (failed(checkMicrobatchesApart(fn, *mesh)) ||
        failed(StageCutter(fn, mesh->name, axis, mesh->shape[axis]).run()))
      signalPassFailure();
  }
};

} // namespace
} // namespace pcc
