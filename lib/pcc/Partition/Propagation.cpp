//===- Propagation.cpp - annotate a function with shardings ---------------===//
//
// One forward walk: each op's layout follows from its operands' (through
// inferOpSharding), so every annotation is one the partitioner reproduces.
//
//===----------------------------------------------------------------------===//

#include "pcc/Partition/Propagation.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Partition/Passes.h"
#include "pcc/Sharding/ShardingRules.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace pcc {

#define GEN_PASS_DEF_PROPAGATESHARDING
#include "pcc/Partition/Passes.h.inc"

void propagateShardings(func::FuncOp fn, const Mesh &mesh, StrategyHook hook) {
  // Layouts each weight is used with (to annotate single-layout weights).
  llvm::DenseMap<Operation *, SmallVector<TensorSharding>> weightUses;
  for (Operation &op : fn.getBody().front().without_terminator()) {
    if (isa<WeightOp, ConstantOp>(op))
      continue;
    SmallVector<TensorSharding> in;
    for (Value v : op.getOperands())
      in.push_back(shardingOf(v));
    if (hook) {
      SmallVector<TensorSharding> before = in;
      hook(&op, in);
      bool pinned = false;
      for (auto [v, old, now] : llvm::zip(op.getOperands(), before, in)) {
        if (old == now)
          continue;
        if (v.getDefiningOp<WeightOp>())
          setSharding(v, mesh, now);
        else
          pinned = true;
      }
      // An activation cannot be re-annotated for one user: the op keeps
      // the layouts it runs on, and the partitioner reshards to them.
      if (pinned)
        setOperandShardings(&op, kOperandShardingAttr, mesh, in);
    }
    OpSharding s = inferOpSharding(&op, in, mesh);
    for (auto [r, layout] : llvm::zip(op.getResults(), s.results))
      setSharding(r, mesh, layout);
    for (auto [v, layout] : llvm::zip(op.getOperands(), s.operands))
      if (auto w = v.getDefiningOp<WeightOp>())
        weightUses[w].push_back(layout);
  }
  for (auto &[op, uses] : weightUses) {
    Value w = op->getResult(0);
    if (!shardingOf(w).isReplicated())
      continue;
    const TensorSharding &first = uses.front();
    if (!first.isReplicated() && first.partial.empty() &&
        llvm::all_of(uses, [&](const TensorSharding &u) { return u == first; }))
      setSharding(w, mesh, first);
  }
  Operation *ret = fn.getBody().front().getTerminator();
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    TensorSharding s = shardingOf(v);
    s.partial.clear();
    fn.setResultAttr(i, kShardingAttr, toAttr(fn.getContext(), mesh, s));
  }
}

namespace {

struct PropagateShardingPass
    : impl::PropagateShardingBase<PropagateShardingPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Mesh> mesh = readMesh(module);
    if (!mesh) {
      module.emitError("sharding propagation needs a shard.grid in the module");
      return signalPassFailure();
    }
    for (auto fn : module.getOps<func::FuncOp>())
      propagateShardings(fn, *mesh);
  }
};

} // namespace
} // namespace pcc
