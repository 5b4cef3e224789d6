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
