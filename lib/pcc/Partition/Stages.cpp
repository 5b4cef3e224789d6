//===- Stages.cpp - pipeline stages of a program --------------------------===//
//
// Invariants after pcc-pipeline-stages:
// - every op of @main but the terminator has a `pcc.stage`; an inference
//   program's stages are non-decreasing in program order, a training step's
//   run forward in order, back in reverse order (each backward op in the
//   stage of the op it differentiates), then the update (each parameter's in
//   the stage that uses it);
// - an op uses only values of its own stage, model inputs, or weights and
//   constants of its own stage;
// - a value one stage needs from another arrives by a pcc.recv at the start
//   of the receiving segment (a maximal run of ops of one stage in program
//   order), sent by a pcc.send at the end of the producing segment. Every
//   device runs its ops in program order, a send never waits for its
//   receiver (the runtime buffers it) and a receive waits only for a send
//   earlier in program order: the exchange cannot deadlock.
// - interleaved 1F1B (pp x V stages, stage s on device s % pp): a device
//   runs its stages' microbatches in the runtime's schedule
//   (pccrt/PipelineSchedule.h), whose forwards and backwards finish under
//   the same rule, and their updates stage by stage, which
//   checkVirtualOrder proves cannot wait in a cycle.
//
//===----------------------------------------------------------------------===//

#include "pcc/Partition/Stages.h"
#include "pcc/Autodiff/TrainStep.h"
#include "pcc/Partition/Passes.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Sharding/ParallelPlan.h"
#include "pcc/Support/StageBalance.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallBitVector.h"

#include <functional>

using namespace mlir;

namespace pcc {

#define GEN_PASS_DEF_PIPELINESTAGES
#include "pcc/Partition/Passes.h.inc"

namespace {

bool isParameter(Operation *op) { return isa<WeightOp, ConstantOp>(op); }

/// The ops that compute from constants alone (side-effect-free pcc ops:
/// T5's clamped relative distances, which both stacks read), found in one
/// pass in program order: as cheap to make again in a stage as to receive,
/// and the planner prices them made where they are read.
llvm::DenseSet<Operation *> madeOfConstants(func::FuncOp fn) {
  llvm::DenseSet<Operation *> made;
  for (Operation &op : fn.getBody().front().without_terminator())
    if (isa<PCCDialect>(op.getDialect()) && !isParameter(&op) &&
        isMemoryEffectFree(&op) && op.getNumResults() == 1 &&
        op.getNumOperands() > 0 && llvm::all_of(op.getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return def && (isa<ConstantOp>(def) || made.contains(def));
        }))
      made.insert(&op);
  return made;
}

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

} // namespace

void setStage(Operation *op, int64_t stage) {
  op->setAttr(kStageAttr,
              IntegerAttr::get(IntegerType::get(op->getContext(), 64), stage));
}

std::optional<int64_t> stageOf(Operation *op) {
  if (auto a = op->getAttrOfType<IntegerAttr>(kStageAttr))
    return a.getInt();
  return std::nullopt;
}

LogicalResult assignStages(func::FuncOp fn, int64_t stages, int64_t devices) {
  if (devices <= 0)
    devices = stages;
  // A training step's forward ops are cut; its backward and update follow.
  SmallVector<Operation *> forward, ops;
  for (Operation &op : fn.getBody().front().without_terminator()) {
    if (op.hasAttr(kGradientOfAttr) || op.hasAttr(kOptimizerAttr) ||
        isa<AssignOp>(op))
      continue;
    forward.push_back(&op);
    if (!isParameter(&op))
      ops.push_back(&op);
  }
  bool training =
      forward.size() + 1 < fn.getBody().front().getOperations().size();
  // What only rearranges weights (MatMul(x, Transpose(W)) in training-mode
  // exports, a mask) runs in the stage that uses it: the weight lives there.
  llvm::DenseSet<Operation *> weightOnly;
  for (Operation *op : ops)
    if (op->getNumOperands() > 0 &&
        llvm::all_of(op->getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return def && (isParameter(def) || weightOnly.contains(def));
        }))
      weightOnly.insert(op);
  auto finish = [&] {
    for (Operation *op : llvm::reverse(ops)) {
      if (!weightOnly.contains(op))
        continue;
      std::optional<int64_t> first;
      for (Operation *user : op->getUsers())
        if (std::optional<int64_t> s = stageOf(user);
            s && !user->hasAttr(kGradientOfAttr))
          first = std::min(first.value_or(*s), *s);
      if (first)
        setStage(op, *first);
    }
    return training ? stageTrainingStep(fn, forward, stages, devices)
                    : success();
  };
  if (int64_t(ops.size()) < stages)
    return fn.emitError() << "the model has " << ops.size()
                          << " operations, fewer than " << stages
                          << " pipeline stages";
  // Weight-only ops made after planning (a mixed-precision step's casts
  // of its master weights) need no planned stage: they run with a reader.
  bool planned = llvm::all_of(ops, [&](Operation *op) {
    return op->hasAttr(kPlannedStageAttr) || weightOnly.contains(op);
  });
  if (planned) {
    int64_t last = 0;
    for (Operation *op : ops) {
      auto at = op->getAttrOfType<IntegerAttr>(kPlannedStageAttr);
      int64_t s = at ? at.getInt() : 0;
      // Weight-only ops sit wherever the exporter put them; finish() moves
      // them to their first reader's stage.
      if (weightOnly.contains(op) && s < stages) {
        setStage(op, s);
        op->removeAttr(kPlannedStageAttr);
        continue;
      }
      if (s < last || s >= stages)
        return op->emitError() << "planned pipeline stage " << s
                               << " is out of order (stages must be "
                                  "contiguous runs of the program, 0.."
                               << stages - 1 << ")";
      last = s;
      setStage(op, s);
      op->removeAttr(kPlannedStageAttr);
    }
    return finish();
  }
  std::vector<double> work;
  for (Operation *op : ops)
    work.push_back(workOf(op));
  std::vector<int> starts = balanceStages(work, stages, stages);
  for (size_t s = 0; s < starts.size(); ++s) {
    size_t end = s + 1 < starts.size() ? starts[s + 1] : ops.size();
    for (size_t i = starts[s]; i < end; ++i)
      setStage(ops[i], s);
  }
  return finish();
}

void stageAddedOps(func::FuncOp fn, int64_t stages) {
  // The stage that reads each weight, where only one does (by name: stages
  // may hold copies of it). A training step updates the weight there.
  llvm::StringMap<std::optional<int64_t>> weightStage;
  fn.walk([&](WeightOp w) {
    for (Operation *user : w->getUsers())
      if (std::optional<int64_t> s = stageOf(user)) {
        auto [it, inserted] = weightStage.try_emplace(w.getName(), *s);
        if (!inserted && it->second != s)
          it->second = std::nullopt; // several stages: no single home
      }
  });
  // Ops the partitioner added (collectives, reshards) run with the next
  // staged op, the one they feed; but one that reads a weight (the bias a
  // row-parallel product adds after its all-reduce) runs, with what feeds
  // it, where that weight's readers run: the bias stays one value, updated
  // where it is read.
  // An op whose value only leaves the program (the loss's sum over
  // microbatches) runs where its inputs are made instead.
  int64_t next = stages - 1;
  for (Operation &op :
       llvm::reverse(fn.getBody().front().without_terminator())) {
    if (isParameter(&op))
      continue;
    if (std::optional<int64_t> s = stageOf(&op)) {
      next = *s;
      continue;
    }
    if (llvm::none_of(op.getUsers(),
                      [](Operation *u) { return stageOf(u).has_value(); })) {
      std::optional<int64_t> made;
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp())
          if (std::optional<int64_t> s = stageOf(def); s && !isParameter(def))
            made = std::max(made.value_or(*s), *s);
      if (made) {
        setStage(&op, *made);
        continue;
      }
    }
    if (!isLocalParameter(&op))
      for (Value v : op.getOperands())
        if (auto w = v.getDefiningOp<WeightOp>())
          if (auto it = weightStage.find(w.getName());
              it != weightStage.end() && it->second)
            next = std::min(next, *it->second);
    setStage(&op, next);
  }
}

namespace {

/// Makes each stage of @main self-contained (see the invariants above).
class StageCutter {
public:
  StageCutter(func::FuncOp fn, StringRef grid, int64_t axis, int64_t devices,
              int64_t stages)
      : fn(fn), b(fn.getContext()), grid(grid), axis(axis), devices(devices),
        stages(stages) {}

  LogicalResult run();

private:
  LogicalResult findSegments();
  /// The value `v` (of segment `from`) as segment `to` sees it: a receive,
  /// shared by the later segments of `to`'s stage.
  Value received(Value v, int64_t from, int64_t to);
  /// Stage `to`'s own copy of the weight or constant `def`.
  Value ownCopy(Operation *def, int64_t to, Operation *user);
  /// Whether each stage makes its own `op` (a local parameter, a value
  /// made of constants, or a sum over the batch made of the model's inputs
  /// alone, such as the loss's count of targets) rather than receiving it.
  bool madeInEachStage(Operation *op) const {
    return isLocalParameter(op) || constantValues.contains(op) ||
           inputSums.contains(op);
  }
  void placeTransfers();
  LogicalResult checkVirtualOrder();

  func::FuncOp fn;
  OpBuilder b;
  StringRef grid;
  int64_t axis, devices, stages;
  /// Maximal runs of ops of one stage, in program order.
  struct Segment {
    Operation *first, *last;
    int64_t stage;
  };
  SmallVector<Segment> segments;
  llvm::DenseMap<Operation *, int64_t> segmentOf;
  struct Transfer {
    Value value;
    int64_t from, to, tag;
    Operation *recv;
  };
  std::vector<Transfer> transfers;
  llvm::DenseMap<std::pair<void *, int64_t>, Value> receivedAt, copiedAt;
  llvm::DenseSet<Operation *> constantValues, inputSums;
};

LogicalResult StageCutter::findSegments() {
  stageAddedOps(fn, stages);
  llvm::SmallBitVector seen(stages);
  for (Operation &op : fn.getBody().front().without_terminator()) {
    if (isParameter(&op))
      continue;
    int64_t s = *stageOf(&op);
    if (s < 0 || s >= stages)
      return op.emitError() << "pipeline stage " << s << " is out of range";
    // The ops that run once per step start segments of their own.
    Operation *last = segments.empty() ? nullptr : segments.back().last;
    if (!last || segments.back().stage != s || !sameStepPart(last, &op))
      segments.push_back({&op, &op, s});
    segments.back().last = &op;
    segmentOf[&op] = segments.size() - 1;
    seen.set(s);
  }
  for (int64_t s = 0; s < stages; ++s)
    if (!seen.test(s))
      return fn.emitError() << "pipeline stage " << s << " has no operations";
  return success();
}

Value StageCutter::received(Value v, int64_t from, int64_t to) {
  int64_t stage = segments[to].stage;
  auto key = std::make_pair(v.getAsOpaquePointer(), stage);
  if (Value r = receivedAt.lookup(key))
    return r;
  b.setInsertionPoint(segments[to].first);
  int64_t tag = transfers.size();
  auto recv = RecvOp::create(b, v.getLoc(), v.getType(), grid, axis,
                             segments[from].stage, tag);
  setStage(recv, stage);
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
    if (Operation *d = use.get().getDefiningOp(); d && madeInEachStage(d))
      use.set(ownCopy(d, to, copy));
  copiedAt[key] = copy->getResult(0);
  return copy->getResult(0);
}

/// Receives go to the start of their segment in (source, tag) order; sends
/// to the end of the producing segment in (destination, tag) order.
void StageCutter::placeTransfers() {
  llvm::stable_sort(transfers, [](const Transfer &a, const Transfer &b) {
    return std::tie(a.to, a.from, a.tag) < std::tie(b.to, b.from, b.tag);
  });
  for (const Transfer &t : transfers)
    t.recv->moveBefore(segments[t.to].first);
  llvm::stable_sort(transfers, [](const Transfer &a, const Transfer &b) {
    return std::tie(a.from, a.to, a.tag) < std::tie(b.from, b.to, b.tag);
  });
  SmallVector<Operation *> end;
  for (const Segment &s : segments)
    end.push_back(s.last);
  for (const Transfer &t : transfers) {
    b.setInsertionPointAfter(end[t.from]);
    auto send = SendOp::create(b, t.value.getLoc(), t.value, grid, axis,
                               segments[t.to].stage, t.tag);
    setStage(send, segments[t.from].stage);
    end[t.from] = send;
    // Transfers run in their segments' phases (prologue, forward, backward,
    // once per step).
    for (StringRef phase : {kPrologueAttr, kBackwardAttr, kBackwardWeightAttr,
                            kOncePerStepAttr}) {
      if (Attribute a = segments[t.from].first->getAttr(phase))
        send->setAttr(phase, a);
      if (Attribute a = segments[t.to].first->getAttr(phase))
        t.recv->setAttr(phase, a);
    }
  }
}

/// With interleaved 1F1B a device runs its stages' forwards in stage order
/// and backwards in reverse (the schedule's), and its stages' updates one
/// stage after another (stage d, d + devices, ...), not in program order: a
/// forward may only wait for an earlier stage's forward, a backward for a
/// later stage's backward, and the update's transfers must not make two
/// updates wait for each other.
LogicalResult StageCutter::checkVirtualOrder() {
  if (stages == devices)
    return success();
  for (const Transfer &t : transfers) {
    Operation *from = segments[t.from].first, *to = segments[t.to].first;
    auto phase = [](Operation *op) {
      return op->hasAttr(kOncePerStepAttr) ? 2
             : op->hasAttr(kBackwardAttr)  ? 1
                                           : 0;
    };
    int64_t a = segments[t.from].stage, b = segments[t.to].stage;
    bool against = phase(from) == phase(to) &&
                   ((phase(to) == 0 && a > b) || (phase(to) == 1 && a < b));
    if (against)
      return t.recv->emitError()
             << "interleaved pipeline: stage " << b << "'s "
             << (phase(to) ? "backward" : "forward") << " reads a value of "
             << "stage " << a << "'s, which its schedule runs later; compile "
             << "without --pp-virtual";
  }
  SmallVector<SmallVector<int64_t>> next(stages);
  for (int64_t s = 0; s + devices < stages; ++s)
    next[s].push_back(s + devices);
  for (const Transfer &t : transfers)
    if (t.recv->hasAttr(kOncePerStepAttr))
      next[segments[t.from].stage].push_back(segments[t.to].stage);
  // Depth-first search for a cycle (0: unseen, 1: on the path, 2: done).
  SmallVector<int> state(stages, 0);
  std::function<bool(int64_t)> cyclic = [&](int64_t s) {
    state[s] = 1;
    for (int64_t t : next[s])
      if (state[t] == 1 || (state[t] == 0 && cyclic(t)))
        return true;
    state[s] = 2;
    return false;
  };
  for (int64_t s = 0; s < stages; ++s)
    if (state[s] == 0 && cyclic(s))
      return fn.emitError()
             << "interleaved pipeline: the updates of stage " << s
             << " and of another stage on its device wait for each other "
                "(values both send after the last microbatch); compile "
                "without --pp-virtual";
  return success();
}

LogicalResult StageCutter::run() {
  if (failed(findSegments()))
    return failure();
  constantValues = madeOfConstants(fn);
  // The step's sums over the whole batch (pcc.prologue) are read where
  // microbatches cannot send them; those of inputs alone each stage makes.
  Block &block = fn.getBody().front();
  for (Operation &op : block.without_terminator())
    if (op.hasAttr(kPrologueAttr) && op.getNumResults() == 1 &&
        llvm::all_of(op.getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return !def || madeInEachStage(def);
        }))
      inputSums.insert(&op);
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
      if (isParameter(def) || (madeInEachStage(def) && *stageOf(def) != to))
        use.set(ownCopy(def, to, op));
      else if (*stageOf(def) != to && def->hasAttr(kPrologueAttr))
        return op->emitError("pipeline training: a sum over the batch that "
                             "the step computes first is read by another "
                             "stage; compile with --microbatches 1");
      else if (*stageOf(def) != to)
        use.set(
            received(use.get(), segmentOf.lookup(def), segmentOf.lookup(op)));
    }
  }
  placeTransfers();
  if (failed(checkVirtualOrder()))
    return failure();
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
/// at once (a collective over the microbatch axis) cannot run, but in a
/// training step's accumulation across runs (pcc-accumulate-microbatches).
LogicalResult checkMicrobatchesApart(func::FuncOp fn, const Mesh &mesh,
                                     bool training) {
  int64_t mb = mesh.axisNamed(kMicrobatchAxis);
  if (mb < 0)
    return success();
  WalkResult r = fn.walk([&](Operation *op) {
    // Taking this microbatch's block of a whole value moves no data.
    if (isa<shard::AllSliceOp>(op))
      return WalkResult::advance();
    if (training && acrossMicrobatches(op, mb))
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
    std::optional<ParallelPlan> plan = readPlan(module);
    int64_t stages = mesh->shape[axis] * (plan ? plan->virtualStages : 1);
    auto fn = module.lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      module.emitError("module has no func.func @main");
      return signalPassFailure();
    }
    if (failed(checkMicrobatchesApart(fn, *mesh,
                                      module->hasAttr(kTrainStepAttr))) ||
        failed(
            StageCutter(fn, mesh->name, axis, mesh->shape[axis], stages).run()))
      signalPassFailure();
  }
};

} // namespace
} // namespace pcc
