//===- ProductGradients.cpp - layouts of a step's backward products
//--------===//

#include "ProductGradients.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Sharding/ParallelPlan.h"
#include "pcc/Sharding/Reshard.h"
#include "pcc/Sharding/ShardingRules.h"

using namespace mlir;

namespace pcc {
namespace {

/// Bytes one device sends and receives to run `op` as `s` on operands laid
/// out as `in`, its partial result summed over the axes `isTp` picks after,
/// and brought to `dest` where the result's destination is known (ring
/// collectives: an all-reduce moves twice its buffer). Partial sums over
/// other axes (dp: the gradient's bucket) cost every choice alike.
double movedBytes(Operation *op, ArrayRef<TensorSharding> in,
                  const OpSharding &s, const Mesh &mesh,
                  function_ref<bool(int64_t)> isTp,
                  const TensorSharding *dest) {
  double bytes = 0;
  auto add = [&](const TensorSharding &from, const TensorSharding &to,
                 Value v) {
    bytes += stepsMovedBytes(planReshard(from, to), tensorBytes(v), mesh);
  };
  for (auto [v, from, to] : llvm::zip(op->getOperands(), in, s.operands))
    add(from, to, v);
  for (auto [v, r] : llvm::zip(op->getResults(), s.results)) {
    TensorSharding from = r, to = dest ? *dest : r;
    for (TensorSharding *t : {&from, &to})
      llvm::erase_if(t->partial, [&](int64_t a) { return !isTp(a); });
    to.partial.clear();
    add(from, to, v);
  }
  return bytes;
}

} // namespace

void WeightGradientDestinations::note(
    Operation &op, ArrayRef<TensorSharding> in,
    const llvm::DenseSet<Value> &fromWeights) {
  Attribute id = op.getAttr(kForwardIdAttr);
  if (!id || !isa<MatMulOp, GemmOp>(op) || in.size() < 2)
    return;
  Value w = op.getOperand(1);
  if (w.getDefiningOp<WeightOp>() || fromWeights.contains(w))
    read[id] = {llvm::to_vector(shapeOf(w)), in[1]};
}

const TensorSharding *WeightGradientDestinations::of(Operation &op) const {
  auto it = read.find(op.getAttr(kGradientOfAttr));
  if (it == read.end() || op.getNumResults() != 1 ||
      shapeOf(op.getResult(0)) != ArrayRef<int64_t>(it->second.first))
    return nullptr;
  return &it->second.second;
}

CubeGradients::CubeGradients(const Mesh &mesh)
    : cube(mesh.axisNamed("tp_x") >= 0) {}

bool CubeGradients::place(Operation &op, SmallVectorImpl<TensorSharding> &in,
                          const Mesh &mesh) {
  if (!cube || !isa<MatMulOp, GemmOp>(op) || in.size() < 2)
    return false;
  if (Attribute id = op.getAttr(kForwardIdAttr)) {
    note(op, id, in, mesh);
    return false;
  }
  auto it = products.find(op.getAttr(kGradientOfAttr));
  if (it == products.end())
    return false;
  const Product &p = it->second;
  bool readsX = llvm::is_contained(op.getOperands(), p.x),
       readsW = llvm::is_contained(op.getOperands(), p.w);
  if (readsX == readsW)
    return false;
  for (auto [v, s] : llvm::zip(op.getOperands(), in))
    s = v == p.x ? p.xRead : v == p.w ? p.wRead : p.dyRead;
  setOperandShardings(&op, kOperandShardingAttr, mesh, in);
  return true;
}

void CubeGradients::note(Operation &op, Attribute id,
                         ArrayRef<TensorSharding> in, const Mesh &mesh) {
  if (in[1].dims.size() != 2 || shardingOf(op.getOperand(1)) == in[1])
    return;
  OpSharding s = inferOpSharding(&op, in, mesh);
  if (!cubeContraction(&op, s))
    return;
  TensorSharding dy = s.results[0];
  dy.partial.clear();
  products[id] = {op.getOperand(0), op.getOperand(1), in[0], in[1], dy};
}

void gatherCheaperFactor(Operation &op, SmallVectorImpl<TensorSharding> &in,
                         const Mesh &mesh, const TensorSharding *dest) {
  if (llvm::any_of(in,
                   [](const TensorSharding &t) { return !t.partial.empty(); }))
    return;
  // The tensor axes that split features: 1D's, or a grid's (2.5D's depth
  // splits the batch: its weight gradients' sums are the bucket's).
  auto isTp = [&](int64_t a) { return splitsFeatures(mesh.axisNames[a]); };
  SmallVector<TensorSharding> best(in.begin(), in.end());
  double bestBytes =
      movedBytes(&op, in, inferOpSharding(&op, in, mesh), mesh, isTp, dest);
  for (unsigned k = 0; k < in.size(); ++k)
    for (int64_t axis = 0; axis < int64_t(mesh.shape.size()); ++axis) {
      if (!isTp(axis))
        continue;
      SmallVector<TensorSharding> other(in.begin(), in.end());
      if (!other[k].gatherAxes([&](int64_t a) { return a == axis; }))
        continue;
      OpSharding s = inferOpSharding(&op, other, mesh);
      // Moved from the operands as they are to what this choice reads.
      double bytes = movedBytes(&op, in, s, mesh, isTp, dest);
      if (bytes < bestBytes) {
        bestBytes = bytes;
        best = std::move(other);
      }
    }
  if (llvm::equal(best, in))
    return;
  in.assign(best.begin(), best.end());
  setOperandShardings(&op, kOperandShardingAttr, mesh, in);
}

} // namespace pcc
