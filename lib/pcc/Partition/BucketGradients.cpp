//===- BucketGradients.cpp - gradients summed in few all-reduces ----------===//
//
// Invariant: every element is summed over the same devices as before, so
// the step computes the same values; only the number of collective calls
// changes. A bucket's all-reduce goes right after the last gradient it
// holds, which precedes every optimizer op that reads any of them.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/GradientBuilder.h"
#include "pcc/Dialect/PCC/IR/PCCAttrs.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Partition/Passes.h"
#include "pcc/Sharding/ParallelPlan.h"
#include "pcc/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace pcc {

#define GEN_PASS_DEF_BUCKETGRADIENTS
#include "pcc/Partition/Passes.h.inc"

namespace {

/// Whether every reader of `v` is an optimizer op, or a scatter, gather or
/// reshape of it (planReshard's next steps: a gradient split where its
/// update is not) that only optimizer ops read.
bool readByOptimizer(Value v) {
  return !v.use_empty() && llvm::all_of(v.getUsers(), [](Operation *u) {
    if (isa<shard::ReduceScatterOp, shard::AllGatherOp, ReshapeOp>(u))
      return readByOptimizer(u->getResult(0));
    return u->hasAttr(kOptimizerAttr);
  });
}

/// An all-reduce that sums a gradient for the optimizer.
bool sumsGradient(shard::AllReduceOp op) {
  Value in = op.getInput();
  Operation *def = in.getDefiningOp();
  return def && !def->hasAttr(kOptimizerAttr) &&
         readByOptimizer(op.getResult()) &&
         isa<FloatType>(typeOf(in).getElementType());
}

/// The first op in the block that reads `op`'s sum.
Operation *firstUser(shard::AllReduceOp op) {
  Operation *first = nullptr;
  for (Operation *u : op.getResult().getUsers())
    if (!first || u->isBeforeInBlock(first))
      first = u;
  return first;
}

/// Joins `group` (same grid, axes, reduction and element type) into one
/// all-reduce.
void bucket(MutableArrayRef<shard::AllReduceOp> group) {
  // After the last gradient of the bucket (all precede the optimizer).
  Operation *last = nullptr;
  for (shard::AllReduceOp op : group) {
    Operation *def = op.getInput().getDefiningOp();
    if (!last || last->isBeforeInBlock(def))
      last = def;
  }
  OpBuilder b(last->getContext());
  b.setInsertionPointAfter(last);
  GradientBuilder g(b, group.front().getLoc());
  SmallVector<Value> flat;
  for (shard::AllReduceOp op : group)
    flat.push_back(
        g.reshape(op.getInput(), {numElements(shapeOf(op.getInput()))}));
  Value joined = g.op<ConcatOp>(flat, {g.i64("axis", 0)});
  shard::AllReduceOp first = group.front();
  auto sum = shard::AllReduceOp::create(
      b, first.getLoc(), joined.getType(), first.getGridAttr(),
      first.getGridAxesAttr(), joined, first.getReductionAttr());
  int64_t at = 0;
  Operation *lastCreated = nullptr;
  for (shard::AllReduceOp op : group) {
    ArrayRef<int64_t> shape = shapeOf(op.getInput());
    int64_t n = numElements(shape);
    Value part = g.op<SliceOp>({sum.getResult()},
                               {g.i64s("starts", {at}), g.i64s("sizes", {n}),
                                g.i64s("steps", {1})});
    at += n;
    Value whole = g.reshape(part, shape);
    lastCreated =
        whole.getDefiningOp() ? whole.getDefiningOp() : part.getDefiningOp();
    op.getResult().replaceAllUsesWith(whole);
  }
  // Erased last: the builder inserts before the op after `last`, which may
  // be one of them.
  for (shard::AllReduceOp op : group)
    op.erase();
  // A pipeline's bucket runs in the stage of its gradients.
  if (Attribute stage = last->getAttr(kStageAttr))
    for (Operation *o = last->getNextNode(); o; o = o->getNextNode()) {
      o->setAttr(kStageAttr, stage);
      if (o == lastCreated)
        break;
    }
}

struct BucketGradientsPass
    : impl::BucketGradientsBase<BucketGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Buckets in program order per (grid, axes, reduction, element type,
    // pipeline stage).
    struct Bucket {
      SmallVector<shard::AllReduceOp> sums;
      int64_t bytes = 0;
      /// Its last gradient and the first reader of any: its sum runs
      /// between them.
      Operation *lastMade = nullptr, *firstRead = nullptr;
    };
    llvm::MapVector<
        std::tuple<Attribute, Attribute, Attribute, Type, Attribute>,
        SmallVector<Bucket>>
        groups;
    // A sum over the microbatch axis alone is an accumulation in place
    // (pcc-accumulate-microbatches), not a call: joining those would only
    // copy every gradient into a bucket.
    std::optional<Mesh> mesh;
    if (auto module = getOperation()->getParentOfType<ModuleOp>())
      mesh = readMesh(module);
    auto accumulatesOnly = [&](shard::AllReduceOp op) {
      ArrayRef<int16_t> axes = op.getGridAxes();
      return mesh && !axes.empty() && llvm::all_of(axes, [&](int16_t a) {
               return mesh->axisNames[a] == kMicrobatchAxis;
             });
    };
    getOperation().walk([&](shard::AllReduceOp op) {
      if (!sumsGradient(op) || accumulatesOnly(op))
        return;
      // A gradient sliced or reduce-scattered for a split update (before
      // its sum over the other axes: planReshard) is so where it is made,
      // so its sum can wait for the bucket's other gradients.
      Operation *split = op.getInput().getDefiningOp();
      if (isa_and_nonnull<shard::AllSliceOp, shard::ReduceScatterOp>(split))
        if (Operation *def = split->getOperand(0).getDefiningOp();
            def && def->getBlock() == split->getBlock() &&
            def->getAttr(kStageAttr) == split->getAttr(kStageAttr))
          split->moveAfter(def);
      auto key = std::make_tuple(
          Attribute(op.getGridAttr()), Attribute(op.getGridAxesAttr()),
          Attribute(op.getReductionAttr()),
          typeOf(op.getInput()).getElementType(),
          op.getInput().getDefiningOp()->getAttr(kStageAttr));
      auto &buckets = groups[key];
      int64_t bytes = tensorBytes(op.getInput());
      Operation *made = op.getInput().getDefiningOp(), *read = firstUser(op);
      // The bucket's sum runs after its last gradient and before the first
      // reader of any.
      auto fits = [&](const Bucket &b) {
        Operation *last = b.lastMade->isBeforeInBlock(made) ? made : b.lastMade;
        Operation *first = read->isBeforeInBlock(b.firstRead) ? read : b.firstRead;
        return b.bytes + bytes <= bucketBytes && last->isBeforeInBlock(first);
      };
      if (buckets.empty() || !fits(buckets.back()))
        buckets.push_back({{}, 0, made, read});
      Bucket &b = buckets.back();
      b.sums.push_back(op);
      b.bytes += bytes;
      if (b.lastMade->isBeforeInBlock(made))
        b.lastMade = made;
      if (read->isBeforeInBlock(b.firstRead))
        b.firstRead = read;
    });
    for (auto &[key, buckets] : groups)
      for (Bucket &b : buckets)
        if (b.sums.size() > 1)
          bucket(b.sums);
  }
};

} // namespace
} // namespace pcc
