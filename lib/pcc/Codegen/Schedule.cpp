//===- Schedule.cpp - what runs where, and in which storage ---------------===//

#include "pcc/Codegen/Schedule.h"

#include "pcc/Dialect/PCC/IR/Fusion.h"
#include "pcc/Dialect/PCC/IR/PCCAttrs.h"
#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <tuple>

using namespace mlir;

namespace pcc {
namespace {


/// A training step stores its new parameters and optimizer states last
/// (TrainStep.cpp), which would keep every new value live to the end of the
/// step. Each assign runs instead right after its value is made and the last
/// read of its weight before it: the same reads see the same values.
void hoistAssigns(Schedule &s) {
  llvm::DenseMap<Operation *, SmallVector<Operation *>> after;
  llvm::DenseSet<Operation *> moved;
  for (Operation *op : s.ops) {
    auto assign = dyn_cast<AssignOp>(op);
    if (!assign)
      continue;
    int64_t at = s.position[op];
    Operation *anchor = nullptr;
    auto later = [&](Operation *o) {
      auto it = s.position.find(o);
      if (it == s.position.end())
        return;
      if (!anchor || it->second > s.position[anchor])
        anchor = o;
    };
    later(assign.getValue().getDefiningOp());
    bool readAfter = false;
    for (Operation *user : assign.getTarget().getUsers()) {
      if (user == op)
        continue;
      auto it = s.position.find(user);
      if (it != s.position.end() && it->second > at)
        readAfter = true;
      later(user);
    }
    // A microbatched step's parts (prologue, each microbatch's forward and
    // backward, the once-per-step update) stay in order: an assign after
    // the last microbatch is not moved into them.
    if (readAfter || !anchor || !sameStepPart(anchor, op))
      continue;
    after[anchor].push_back(op);
    moved.insert(op);
  }
  if (moved.empty())
    return;
  SmallVector<Operation *> order;
  std::function<void(Operation *)> place = [&](Operation *op) {
    order.push_back(op);
    for (Operation *a : after.lookup(op))
      place(a);
  };
  for (Operation *op : s.ops)
    if (!moved.contains(op))
      place(op);
  s.ops = std::move(order);
  for (auto [i, op] : llvm::enumerate(s.ops))
    s.position[op] = i;
}

/// Fusion, from the last op backwards so a user's root is known.
void groupFusedOps(Schedule &s) {
  for (Operation *op : llvm::reverse(s.ops)) {
    Operation *root = op;
    if (Operation *user = fusedUser(op))
      root = s.rootOf.lookup(user);
    s.rootOf[op] = root;
  }
  for (Operation *op : s.ops)
    if (isPointwise(op))
      s.members[s.rootOf[op]].push_back(op);
}

/// Contractions that run as the product of their user's group.
void absorbEpilogues(Schedule &s, AbsorbsEpilogueFn absorbs) {
  for (Operation *op : s.ops) {
    if (isPointwise(op) || op->getNumResults() != 1 || !op->hasOneUse())
      continue;
    Operation *user = *op->getUsers().begin();
    if (!isPointwise(user) || !s.position.count(user) ||
        user->hasAttr(kBackwardAttr) != op->hasAttr(kBackwardAttr) ||
        user->hasAttr(kBackwardWeightAttr) !=
            op->hasAttr(kBackwardWeightAttr) ||
        user->hasAttr(kPrologueAttr) != op->hasAttr(kPrologueAttr))
      continue;
    Operation *root = s.rootOf.lookup(user);
    if (s.productOf.count(root) || !absorbs(op, s.members[root]))
      continue;
    s.rootOf[op] = root;
    s.productOf[root] = op;
  }
}

/// Returned results written straight into their output buffers: where the
/// program runs once per call, each output's value made by an op here.
void placeOutputs(Schedule &s, Block &block, std::optional<int64_t> stage) {
  if (stage)
    return;
  for (Operation *op : s.ops)
    if (op->hasAttr(kPrologueAttr) || op->hasAttr(kBackwardAttr) ||
        op->hasAttr(kOncePerStepAttr))
      return;
  for (auto [k, v] : llvm::enumerate(block.getTerminator()->getOperands())) {
    Operation *def = v.getDefiningOp();
    if (def && s.position.count(def) && !s.isFusedAway(def) &&
        !isa<WeightOp, ConstantOp, ReshapeOp>(def) && !s.outputIndex.count(v))
      s.outputIndex[v] = k;
  }
}

/// A new parameter or optimizer state whose pointwise loop reads the old one
/// only at its own index, with no read of the old one after the loop: the
/// loop writes the new value over the old (an AdamW update of a weight was
/// a loop into a buffer and a copy back, five passes over the weight's
/// bytes where three do).
void updateInPlace(Schedule &s) {
  for (Operation *op : s.ops) {
    auto assign = dyn_cast<AssignOp>(op);
    if (!assign)
      continue;
    Value v = assign.getValue(), target = assign.getTarget();
    Operation *def = v.getDefiningOp();
    Operation *weight = target.getDefiningOp<WeightOp>();
    if (!def || !weight || !s.position.count(weight) ||
        !s.position.count(def) || !isPointwise(def) || s.isFusedAway(def) ||
        s.productOf.count(def) || s.outputIndex.count(v) ||
        s.storedIn.count(v) || v.getType() != target.getType())
      continue;
    // Parts of a microbatched step repeat differently (a forward runs once
    // per microbatch, the update once per step): the loop must run where
    // the assign does, or it would write the new value more than once.
    if (!sameStepPart(def, op))
      continue;
    int64_t at = s.position[def];
    bool safe = llvm::all_of(target.getUsers(), [&](Operation *user) {
      if (user == op)
        return true;
      if (!s.position.count(user) || isa<ReshapeOp, AssignOp>(user))
        return false;
      Operation *root = s.rootOf.lookup(user);
      // In the loop, elementwise at the loop's shape: read at its index.
      if (root == def)
        return user->getResult(0).getType() == v.getType();
      return s.position[root] < at;
    });
    if (safe)
      s.storedIn[v] = target;
  }
}

/// Storage and live ranges of every value the schedule keeps in the arena.
void assignStorage(Schedule &s, Block &block, func::FuncOp fn,
                   std::optional<int64_t> stage) {
  auto at = [&](Operation *op) { return s.position[s.rootOf.lookup(op)]; };
  for (Operation *op : s.ops) {
    if (isa<WeightOp, ConstantOp>(op) || s.isFusedAway(op))
      continue;
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      Value base = reshape.getInput();
      s.aliasOf[reshape.getResult()] =
          s.aliasOf.lookup(base) ? s.aliasOf.lookup(base) : base;
      continue;
    }
    for (Value r : op->getResults()) {
      if (s.outputIndex.count(r) || s.storedIn.count(r))
        continue;
      s.bufferIndex[r] = s.buffers.size();
      s.buffers.push_back({at(op), at(op), tensorBytes(r)});
    }
  }
  auto extend = [&](Value v, int64_t pos) {
    Value base = s.aliasOf.lookup(v) ? s.aliasOf.lookup(v) : v;
    auto it = s.bufferIndex.find(base);
    if (it != s.bufferIndex.end())
      s.buffers[it->second].end = std::max(s.buffers[it->second].end, pos);
  };
  for (Operation *op : s.ops) {
    for (Value operand : op->getOperands())
      extend(operand, at(op));
    // A prologue's results serve every microbatch run after it.
    if (op->hasAttr(kPrologueAttr))
      for (Value r : op->getResults())
        extend(r, s.ops.size());
  }
  for (auto [i, v] : llvm::enumerate(block.getTerminator()->getOperands()))
    if (!stage || outputStage(fn, i) == *stage)
      extend(v, s.ops.size());
}

} // namespace

int64_t stageCount(func::FuncOp fn) {
  int64_t stages = 1;
  fn.walk([&](Operation *op) {
    if (auto s = op->getAttrOfType<IntegerAttr>(kStageAttr))
      stages = std::max(stages, s.getInt() + 1);
  });
  return stages;
}

int64_t outputStage(func::FuncOp fn, unsigned i) {
  auto s = fn.getResultAttrOfType<IntegerAttr>(i, kStageAttr);
  return s ? s.getInt() : 0;
}

Schedule scheduleFunction(func::FuncOp fn, ScratchBytesFn scratchBytes,
                          std::optional<int64_t> stage,
                          AbsorbsEpilogueFn absorbs) {
  Schedule s;
  Block &block = fn.getBody().front();
  for (Operation &op : block.without_terminator()) {
    if (stage) {
      auto at = op.getAttrOfType<IntegerAttr>(kStageAttr);
      if (!at || at.getInt() != *stage)
        continue;
    }
    s.position[&op] = s.ops.size();
    s.ops.push_back(&op);
  }
  hoistAssigns(s);
  groupFusedOps(s);
  if (absorbs)
    absorbEpilogues(s, absorbs);
  placeOutputs(s, block, stage);
  updateInPlace(s);
  assignStorage(s, block, fn, stage);
  for (Operation *op : s.ops) {
    if (int64_t bytes = scratchBytes(op)) {
      s.scratchIndex[op] = s.buffers.size();
      s.buffers.push_back({s.position[op], s.position[op], bytes});
    }
  }
  for (const BufferRequest &b : s.buffers)
    s.unsharedBytes += (b.bytes + 63) / 64 * 64;
  s.arenaBytes = planBuffers(s.buffers);
  return s;
}

LogicalResult checkTensorSizes(func::FuncOp fn, int64_t limit) {
  auto check = [&](Value v, Location loc, StringRef what) -> LogicalResult {
    if (!limit || tensorBytes(v) <= limit)
      return success();
    return emitError(loc) << what << " " << typeOf(v) << " needs "
                          << tensorBytes(v)
                          << " bytes on one device, more than the "
                          << limit << " bytes a device holds (--device-memory)";
  };
  for (BlockArgument a : fn.getArguments())
    if (failed(check(a, a.getLoc(), "input")))
      return failure();
  for (Operation &op : fn.getBody().front().without_terminator())
    for (Value r : op.getResults())
      if (failed(check(r, op.getLoc(), "result")))
        return failure();
  return success();
}

LogicalResult checkDeviceMemory(func::FuncOp fn, int64_t arenaBytes,
                                int64_t weights, int64_t limit) {
  int64_t io = 0;
  for (Value v : fn.getArguments())
    io += tensorBytes(v);
  for (Value v : fn.getBody().front().getTerminator()->getOperands())
    io += tensorBytes(v);
  int64_t total = arenaBytes + weights + io;
  if (!limit || total <= limit)
    return success();
  return fn.emitError() << "the model needs " << total
                        << " bytes on each device (scratch " << arenaBytes
                        << ", weights " << weights
                        << ", inputs and outputs " << io << "), more than the "
                        << limit << " bytes a device holds (--device-memory)";
}

} // namespace pcc
