//===- ProductGradients.cpp - layouts of a step's backward products -----===//

#include "ProductGradients.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Sharding/ParallelPlan.h"
#include "pcc/Sharding/Reshard.h"
#include "pcc/Sharding/ShardingRules.h"

using namespace mlir;

namespace pcc {
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

/// `v` is `original` or activation recompute's clone of it (selective
/// recompute keeps a product and clones what it reads).
static bool sameOrRecomputed(Value v, Value original) {
  if (v == original)
    return true;
  auto made = dyn_cast<OpResult>(v), was = dyn_cast<OpResult>(original);
  if (!made || !was || made.getResultNumber() != was.getResultNumber())
    return false;
  Attribute of = made.getOwner()->getAttr(kRecomputeOfAttr);
  return of && of == was.getOwner()->getAttr(kForwardIdAttr);
}

bool CubeGradients::place(Operation &op, SmallVectorImpl<TensorSharding> &in,
                          const Mesh &mesh) {
  if (!cube || !isa<MatMulOp, GemmOp>(op) || in.size() < 2)
    return false;
  // A recomputed product's gradients read the clone's operands: note the
  // clone in the original's place.
  Attribute id = op.getAttr(kForwardIdAttr);
  if (!id)
    id = op.getAttr(kRecomputeOfAttr);
  if (id) {
    note(op, id, in, mesh);
    return false;
  }
  auto it = products.find(op.getAttr(kGradientOfAttr));
  if (it == products.end())
    return false;
  const Product &p = it->second;
  auto isX = [&](Value v) { return sameOrRecomputed(v, p.x); };
  auto isW = [&](Value v) { return sameOrRecomputed(v, p.w); };
  bool readsX = llvm::any_of(op.getOperands(), isX),
       readsW = llvm::any_of(op.getOperands(), isW);
  if (readsX == readsW)
    return false;
  for (auto [v, s] : llvm::zip(op.getOperands(), in))
    s = isX(v) ? p.xRead : isW(v) ? p.wRead : p.dyRead;
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
  // (A gemm's C is added after the product is reduce-scattered: the
  // product's rows.)
  TensorSharding dy = productBeforeBias(s);
  dy.partial.clear();
  products[id] = {op.getOperand(0), op.getOperand(1), in[0], in[1], dy};
}

void gatherCheaperFactor(Operation &op, SmallVectorImpl<TensorSharding> &in,
                         const Mesh &mesh, const TensorSharding *dest) {
  SmallVector<TensorSharding> best =
      cheaperGatheredOperands(&op, in, mesh, dest);
  if (llvm::equal(best, in))
    return;
  in.assign(best.begin(), best.end());
  setOperandShardings(&op, kOperandShardingAttr, mesh, in);
}

} // namespace pcc
