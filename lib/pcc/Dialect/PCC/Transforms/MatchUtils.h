//===- MatchUtils.h - matching helpers of the raising patterns --*- C++ -*-===//
//
// Private to lib/pcc/Dialect/PCC/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_TRANSFORMS_MATCHUTILS_H
#define PCC_DIALECT_PCC_TRANSFORMS_MATCHUTILS_H

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <optional>

namespace pcc {

/// The value of a splat float constant, if `v` is one.
inline std::optional<double> splatValue(mlir::Value v) {
  mlir::DenseFPElementsAttr attr;
  if (!v || !mlir::matchPattern(v, mlir::m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  return attr.getSplatValue<llvm::APFloat>().convertToDouble();
}

inline bool isSplat(mlir::Value v, double expected) {
  mlir::DenseFPElementsAttr attr;
  if (!v || !mlir::matchPattern(v, mlir::m_Constant(&attr)) || !attr.isSplat())
    return false;
  llvm::APFloat got = attr.getSplatValue<llvm::APFloat>();
  llvm::APFloat want(expected);
  bool lost = false;
  want.convert(got.getSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
  double g = got.convertToDouble(), w = want.convertToDouble();
  return std::abs(g - w) <= 1e-6 * std::abs(w);
}

/// Op of type OpTy defining `v` whose result has a single use.
template <typename OpTy>
OpTy singleUse(mlir::Value v) {
  auto op = v.getDefiningOp<OpTy>();
  return op && op->hasOneUse() ? op : OpTy();
}

/// For a commutative binary op, the operand that is not `known`.
inline mlir::Value other(mlir::Operation *op, mlir::Value known) {
  return op->getOperand(0) == known ? op->getOperand(1) : op->getOperand(0);
}

/// Adds the pattern raising Q Kt / scale / masks / softmax / V chains to
/// pcc.attention (RaiseAttention.cpp).
void populateRaiseAttentionPatterns(mlir::RewritePatternSet &patterns);

/// Adds the pattern raising written-out tanh GELU to pcc.gelu
/// (RaiseTanhGelu.cpp).
void populateRaiseTanhGeluPatterns(mlir::RewritePatternSet &patterns);

} // namespace pcc

#endif // PCC_DIALECT_PCC_TRANSFORMS_MATCHUTILS_H
