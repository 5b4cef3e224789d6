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
void bucket(MutableArrayRef<shard::AllReduceOp> group, Attribute stage) {
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
  // A pipeline's bucket runs in the stage of its gradients (the scatters
  // and accumulations they went through carry none yet).
  if (stage)
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
    // A gradient's sum over the microbatches and other axes is the
    // accumulation, then a sum over the others (as
    // pcc-accumulate-microbatches splits it): that sum joins the bucket of
    // those axes, with the gradients scattered before theirs (planReshard).
    SmallVector<shard::AllReduceOp> mixed;
    getOperation().walk([&](shard::AllReduceOp op) {
      ArrayRef<int16_t> axes = op.getGridAxes();
      if (mesh && sumsGradient(op) && axes.size() > 1 &&
          llvm::any_of(axes, [&](int16_t a) {
            return mesh->axisNames[a] == kMicrobatchAxis;
          }))
        mixed.push_back(op);
    });
    for (shard::AllReduceOp op : mixed) {
      int16_t mb = int16_t(mesh->axisNamed(kMicrobatchAxis));
      SmallVector<int16_t> rest(op.getGridAxes());
      llvm::erase(rest, mb);
      OpBuilder b(op);
      auto accumulate = shard::AllReduceOp::create(
          b, op.getLoc(), op.getInput().getType(), op.getGrid(),
          ArrayRef<int16_t>{mb}, op.getInput(), op.getReduction());
      auto sum = shard::AllReduceOp::create(
          b, op.getLoc(), op.getType(), op.getGrid(), rest,
          accumulate.getResult(), op.getReduction());
      for (Operation *o : {accumulate.getOperation(), sum.getOperation()})
        if (Attribute stage = op->getAttr(kStageAttr))
          o->setAttr(kStageAttr, stage);
      op.getResult().replaceAllUsesWith(sum.getResult());
      op.erase();
    }
    getOperation().walk([&](shard::AllReduceOp op) {
      if (!sumsGradient(op) || accumulatesOnly(op))
        return;
      // A gradient sliced or reduce-scattered for a split update (before
      // its sum over the other axes: planReshard; a grouped split's
      // scatter between reshapes), and summed over the microbatches before
      // that, is so where it is made, so its sum can wait for the bucket's
      // other gradients.
      SmallVector<Operation *, 2> chain;
      Operation *def = op.getInput().getDefiningOp();
      auto splitsOrAccumulates = [&](Operation *o) {
        auto sum = dyn_cast_or_null<shard::AllReduceOp>(o);
        return (isa_and_nonnull<shard::AllSliceOp, shard::ReduceScatterOp,
                                 ReshapeOp>(o) ||
                (sum && accumulatesOnly(sum))) &&
               o->hasOneUse();
      };
      while (splitsOrAccumulates(def)) {
        chain.push_back(def);
        def = def->getOperand(0).getDefiningOp();
      }
      // The gradient's stage (its chain's carry none yet).
      Operation *root = def ? def : op.getInput().getDefiningOp();
      Attribute stage = root ? root->getAttr(kStageAttr) : Attribute();
      // (Collectives the partitioner made carry no stage yet: they run in
      // their operand's, pcc-pipeline-stages.)
      if (!chain.empty() && def && llvm::all_of(chain, [&](Operation *o) {
            Attribute own = o->getAttr(kStageAttr);
            return o->getBlock() == def->getBlock() && (!own || own == stage);
          }))
        for (Operation *o : llvm::reverse(chain)) {
          o->moveAfter(def);
          def = o;
        }
      auto key = std::make_tuple(
          Attribute(op.getGridAttr()), Attribute(op.getGridAxesAttr()),
          Attribute(op.getReductionAttr()),
          typeOf(op.getInput()).getElementType(),
          stage);
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
          bucket(b.sums, std::get<4>(key));
  }
};

} // namespace
} // namespace pcc
