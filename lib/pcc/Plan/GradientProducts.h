//===- GradientProducts.h - a linear layer's gradient products --*- C++ -*-===//
//
// Private to the planner (BackwardCollectives.cpp): the products a linear
// layer's gradient rule builds, made unattached so that their layouts can
// be inferred by the same rules the partitioner applies to the real ones.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_LIB_PLAN_GRADIENTPRODUCTS_H
#define PCC_LIB_PLAN_GRADIENTPRODUCTS_H

#include "mlir/IR/Operation.h"

#include <optional>

namespace pcc {

/// Whether `op` is a linear layer (x W with a 2-D W, or a Gemm without
/// transA), and whether its Gemm form has transB.
std::optional<bool> linearLayer(mlir::Operation *op);

/// A linear layer's weight gradient product, unattached, as its gradient
/// rule builds it (GemmOp / MatMulOp::buildGradients): X^T dY, or dY^T X
/// for a Gemm with transB (the op's result stands for dY). Null for other
/// ops. The caller destroys it.
mlir::Operation *weightGradientProduct(mlir::Operation *op);

/// Its input gradient product: dY W^T (dY W for a Gemm with transB).
mlir::Operation *inputGradientProduct(mlir::Operation *op);

} // namespace pcc

#endif // PCC_LIB_PLAN_GRADIENTPRODUCTS_H
