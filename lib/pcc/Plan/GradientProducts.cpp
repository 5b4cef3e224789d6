//===- GradientProducts.cpp - a linear layer's gradient products ----------===//

#include "GradientProducts.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace pcc {
namespace {

/// pcc.gemm(l, r) with `transA` / `transB`, unattached: a gradient product
/// as a gradient rule would build it, for its layouts only. Null if it does
/// not type-check.
Operation *unattachedGemm(Operation *near, Value l, Value r, bool ta, bool tb) {
  MLIRContext *ctx = near->getContext();
  Builder b(ctx);
  OperationState state(near->getLoc(), GemmOp::getOperationName());
  state.addOperands({l, r});
  DictionaryAttr attrs =
      b.getDictionaryAttr({b.getNamedAttr("alpha", b.getF32FloatAttr(1.0f)),
                           b.getNamedAttr("beta", b.getF32FloatAttr(1.0f)),
                           b.getNamedAttr("transA", b.getBoolAttr(ta)),
                           b.getNamedAttr("transB", b.getBoolAttr(tb))});
  auto &props = state.getOrAddProperties<GemmOp::Properties>();
  SmallVector<Type, 1> types;
  if (failed(GemmOp::setPropertiesFromAttr(
          props, attrs, [&] { return emitError(near->getLoc()); })) ||
      failed(GemmOp::inferReturnTypes(ctx, near->getLoc(), state.operands,
                                      attrs, state.getRawProperties(), {},
                                      types)))
    return nullptr;
  state.addTypes(types);
  return Operation::create(state);
}

} // namespace

std::optional<bool> linearLayer(Operation *op) {
  if (auto g = dyn_cast<GemmOp>(op))
    return g.getTransA() ? std::nullopt : std::optional<bool>(g.getTransB());
  if (isa<MatMulOp>(op) && shapeOf(op->getOperand(1)).size() == 2 &&
      shapeOf(op->getOperand(0)).size() >= 2)
    return false;
  return std::nullopt;
}

Operation *weightGradientProduct(Operation *op) {
  std::optional<bool> tb = linearLayer(op);
  if (!tb)
    return nullptr;
  Value x = op->getOperand(0), y = op->getResult(0);
  return unattachedGemm(op, *tb ? y : x, *tb ? x : y, true, false);
}

Operation *inputGradientProduct(Operation *op) {
  std::optional<bool> tb = linearLayer(op);
  if (!tb)
    return nullptr;
  return unattachedGemm(op, op->getResult(0), op->getOperand(1), false, !*tb);
}

} // namespace pcc
