//===- GpuKernels.h - what GPU ranks run as one kernel ----------*- C++ -*-===//
//
// Facts about the GPU back end's kernels that the code generator (which
// emits them) and the planner (which prices them) must agree on: which
// attentions run on tensor cores, the head-axis transposes that kernel
// reads through, and the column biases a GEMM epilogue adds.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_IR_GPUKERNELS_H
#define PCC_DIALECT_PCC_IR_GPUKERNELS_H

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

namespace pcc {

/// GPU ranks run `op` on 16-bit tensors with the tensor-core kernel
/// (attention16): query and value heads of 64 or 128 features, no ring.
inline bool hasTensorCoreAttention(AttentionOp op) {
  mlir::Type e = elementTypeOf(op.getQuery());
  int64_t d = shapeOf(op.getQuery()).back();
  return (e.isF16() || e.isBF16()) && !op.getRingAxes() &&
         shapeOf(op.getValue()).back() == d && (d == 64 || d == 128);
}

/// `v`'s defining transpose when it swaps the sequence and head axes of a
/// rank-4 tensor ([B, S, H, D] <-> [B, H, S, D]).
inline TransposeOp headSwap(mlir::Value v) {
  auto t = v ? v.getDefiningOp<TransposeOp>() : TransposeOp();
  return t && llvm::equal(t.getPerm(), llvm::ArrayRef<int64_t>{0, 2, 1, 3})
             ? t
             : TransposeOp();
}

/// A bias along the columns of an [..., n] product: n values, every
/// leading dimension 1.
inline bool isColumnBias(llvm::ArrayRef<int64_t> shape, int64_t n) {
  return !shape.empty() && shape.back() == n && numElements(shape) == n;
}

} // namespace pcc

#endif // PCC_DIALECT_PCC_IR_GPUKERNELS_H
