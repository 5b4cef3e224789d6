//===- Propagation.cpp - annotate a function with shardings ---------------===//
//
// One forward walk: each op's layout follows from its operands' (through
// inferOpSharding), so every annotation is one the partitioner reproduces.
//
//===----------------------------------------------------------------------===//

#include "pcc/Partition/Propagation.h"

#include "TrainingPropagation.h"
#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Partition/Passes.h"
#include "pcc/Sharding/ShardingRules.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace mlir;

namespace pcc {

#define GEN_PASS_DEF_PROPAGATESHARDING
#include "pcc/Partition/Passes.h.inc"

bool storeThrough(Value v, const TensorSharding &now, const Mesh &mesh) {
  if (v.getDefiningOp<WeightOp>()) {
    TensorSharding current = shardingOf(v);
    if (!current.isReplicated() && current != now)
      return false;
    setSharding(v, mesh, now);
    return true;
  }
  TensorSharding before = now;
  Value in;
  if (auto t = v.getDefiningOp<TransposeOp>();
      t && t.getPerm() == ArrayRef<int64_t>{1, 0}) {
    in = t.getInput();
    std::swap(before.dims[0], before.dims[1]);
  } else if (auto c = v.getDefiningOp<CastOp>();
             c && isa<FloatType>(c.getTo()) &&
             isa<FloatType>(typeOf(c.getInput()).getElementType())) {
    in = c.getInput();
  }
  if (!in || !storeThrough(in, before, mesh))
    return false;
  setSharding(v, mesh, now);
  return true;
}

namespace {

/// A view of a weight that an op asks for in layout `now` while it is
/// still as inferred (`old`): the weight is stored so that the view is
/// made in `now` (storeThrough).
bool storeView(Value v, const TensorSharding &old, const TensorSharding &now,
               const Mesh &mesh) {
  if (v.getDefiningOp<WeightOp>() || !now.partial.empty() ||
      shardingOf(v) != old)
    return false;
  return storeThrough(v, now, mesh);
}

/// `to` only splits dimensions `from` keeps whole (no sums): a block of
/// `from` each device cuts out without communicating.
bool refines(const TensorSharding &from, const TensorSharding &to) {
  if (!from.partial.empty() || !to.partial.empty() ||
      from.dims.size() != to.dims.size())
    return false;
  for (auto [f, t] : llvm::zip(from.dims, to.dims))
    if (f != t && f.isSplit())
      return false;
  return true;
}

/// Whether `v` is made from model inputs and constants alone by a few
/// pointwise ops (a loss's one-hot of its labels): cheap to make in any
/// layout.
bool madeFromInputs(Value v, int depth = 0) {
  Operation *def = v.getDefiningOp();
  if (!def || isa<ConstantOp>(def))
    return true;
  if ((!def->hasTrait<OpTrait::Pointwise>() && !isa<ReshapeOp>(def)) ||
      def->getNumResults() != 1 || depth == 4)
    return false;
  return llvm::all_of(def->getOperands(),
                      [&](Value u) { return madeFromInputs(u, depth + 1); });
}

/// Lays out the pointwise op making `v` (and the pointwise ops before it
/// that only it reads) so that `v` comes out as `want`, its operands cut
/// from what they are: the op is pinned to those operand layouts. Whether
/// it did; `reader` is the one op that has read `v` so far.
bool remake(Value v, const TensorSharding &want, Operation *reader,
            const Mesh &mesh) {
  Operation *def = v.getDefiningOp();
  if (!def || !def->hasTrait<OpTrait::Pointwise>() ||
      !llvm::all_of(v.getUsers(), [&](Operation *u) {
        return u == reader || (u->getBlock() == reader->getBlock() &&
                               reader->isBeforeInBlock(u));
      }))
    return false;
  ArrayRef<int64_t> shape = shapeOf(v);
  SmallVector<TensorSharding> in;
  for (Value u : def->getOperands()) {
    // Right-aligned: a broadcast (size-1) dimension stays whole.
    ArrayRef<int64_t> us = shapeOf(u);
    TensorSharding mine = TensorSharding::replicated(us.size());
    size_t off = shape.size() - us.size();
    for (size_t d = 0; d < us.size(); ++d)
      if (us[d] == shape[d + off])
        mine.dims[d] = want.dims[d + off];
    TensorSharding now = shardingOf(u);
    if (mine != now && !refines(now, mine))
      return false;
    in.push_back(mine);
  }
  OpSharding s = inferOpSharding(def, in, mesh);
  if (s.results.size() != 1 || s.results[0] != want ||
      ArrayRef<TensorSharding>(s.operands) != ArrayRef<TensorSharding>(in))
    return false;
  // Operands made the same way are made in their block too; others (an
  // input, a constant) are cut at this op.
  for (auto [u, mine] : llvm::zip(def->getOperands(), in))
    if (shardingOf(u) != mine && madeFromInputs(u))
      remake(u, mine, def, mesh);
  setOperandShardings(def, kOperandShardingAttr, mesh, in);
  setSharding(v, mesh, want);
  return true;
}

} // namespace

void propagateShardings(func::FuncOp fn, const Mesh &mesh, StrategyHook hook) {
  // Layouts each weight is used with (to annotate single-layout weights).
  llvm::DenseMap<Operation *, SmallVector<TensorSharding>> weightUses;
  TrainingPropagation training(fn, mesh);
  // A weight that every op so far read in one split layout is stored so.
  auto settle = [&](Operation *w) {
    Value v = w->getResult(0);
    auto it = weightUses.find(w);
    if (it == weightUses.end() || !shardingOf(v).isReplicated())
      return;
    const TensorSharding &first = it->second.front();
    if (!first.isReplicated() && first.partial.empty() &&
        llvm::all_of(it->second,
                     [&](const TensorSharding &u) { return u == first; }))
      setSharding(v, mesh, first);
  };
  for (Operation &op : fn.getBody().front().without_terminator()) {
    if (isa<WeightOp, ConstantOp>(op))
      continue;
    // The update reads a parameter as it is stored (Megatron's split
    // biases are updated split, not updated whole and gathered).
    if (op.hasAttr(kOptimizerAttr))
      for (Value v : op.getOperands())
        if (auto w = v.getDefiningOp<WeightOp>(); w && !w.getZeros())
          settle(w);
    training.placeStored(op);
    // A stored value counts as a use of its weight in the value's layout.
    if (auto assign = dyn_cast<AssignOp>(op)) {
      TensorSharding s = shardingOf(assign.getValue());
      s.partial.clear();
      weightUses[assign.getTarget().getDefiningOp()].push_back(s);
      continue;
    }
    SmallVector<TensorSharding> in;
    for (Value v : op.getOperands())
      in.push_back(shardingOf(v));
    if (hook) {
      SmallVector<TensorSharding> before = in;
      hook(&op, in);
      // A strategy's layouts must be layouts: each grid axis at most once,
      // dividing the tensor. Otherwise the op runs as its rule says, with
      // none of the strategy's choices for it.
      bool valid = true;
      for (auto [v, now] : llvm::zip(op.getOperands(), in)) {
        SmallVector<int64_t> axes(now.partial.begin(), now.partial.end());
        for (const DimSharding &d : now.dims)
          axes.append(d.axes.begin(), d.axes.end());
        llvm::sort(axes);
        valid &= std::adjacent_find(axes.begin(), axes.end()) == axes.end() &&
                 divides(shapeOf(v), now, mesh);
      }
      if (!valid) {
        in = before;
        for (StringRef marker :
             {kSummaAttr, kSplitStatsAttr, kRingAttentionAttr,
              kScatterBeforeBiasAttr})
          op.removeAttr(marker);
      }
      bool pinned = false;
      for (auto [v, old, now] : llvm::zip(op.getOperands(), before, in)) {
        if (old == now)
          continue;
        // A weight takes the layout its op reads, unless the hook stored
        // it another way or an earlier reader placed it (then the op's
        // layout is pinned, like an activation's, and the partitioner
        // gathers it at use: a 3D layer's recomputed clone reads its
        // weight as the forward did, from the 1/q^3 part it is stored in).
        if (v.getDefiningOp<WeightOp>() && shardingOf(v) == old &&
            old.isReplicated())
          setSharding(v, mesh, now);
        else if (!storeView(v, old, now, mesh))
          pinned = true;
      }
      // An activation cannot be re-annotated for one user: the op keeps
      // the layouts it runs on, and the partitioner reshards to them.
      if (pinned)
        setOperandShardings(&op, kOperandShardingAttr, mesh, in);
    }
    bool strategyPinned = op.hasAttr(kOperandShardingAttr);
    training.adjustOperands(op, in, strategyPinned);
    OpSharding s = inferOpSharding(&op, in, mesh);
    // A value made from inputs and constants alone (a cross-entropy's
    // one-hot of the labels), or a broadcast, that this op, its first
    // reader, asks for in a block: made in that block, not made whole and
    // cut (the one-hot of a vocabulary-parallel head's classes, and its
    // gradient's broadcast, are [tokens, vocabulary]).
    bool remade = false;
    for (auto [k, v] : llvm::enumerate(op.getOperands()))
      if (k < s.operands.size() && s.operands[k] != in[k] &&
          refines(in[k], s.operands[k]) &&
          (madeFromInputs(v) || v.getDefiningOp<ExpandOp>()) &&
          remake(v, s.operands[k], &op, mesh)) {
        in[k] = s.operands[k];
        remade = true;
      }
    if (remade) {
      if (op.hasAttr(kOperandShardingAttr))
        setOperandShardings(&op, kOperandShardingAttr, mesh, in);
      s = inferOpSharding(&op, in, mesh);
    }
    for (auto [r, layout] : llvm::zip(op.getResults(), s.results))
      setSharding(r, mesh, layout);
    for (auto [v, layout] : llvm::zip(op.getOperands(), s.operands))
      if (auto w = v.getDefiningOp<WeightOp>())
        weightUses[w].push_back(layout);
  }
  for (auto &use : weightUses)
    settle(use.first);
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
