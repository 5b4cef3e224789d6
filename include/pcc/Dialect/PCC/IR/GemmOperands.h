//===- GemmOperands.h - transposes a GEMM reads through its flags -*- C++
//-*-===//
//
// BLAS and cuBLAS read a transposed matrix operand for free (transA /
// transB). The code generator folds a 2-D transpose into the GEMMs that
// read it (FoldOperandTransposes.cpp) and the planner prices such a
// transpose as a view, neither run nor held: both decide by these.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_IR_GEMMOPERANDS_H
#define PCC_DIALECT_PCC_IR_GEMMOPERANDS_H

#include "pcc/Dialect/PCC/IR/PCCOps.h"

namespace pcc {

/// The matrix `v` is the 2-D transpose of, or null.
inline mlir::Value transposedMatrix(mlir::Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  if (!t || t.getPerm() != llvm::ArrayRef<int64_t>{1, 0})
    return nullptr;
  return t.getInput();
}

/// Whether the reader of `use`, a 2-D transpose's result, reads it through
/// a GEMM flag: a Gemm's A (both operands matrices) or B (a matrix in
/// every form but the rows' contraction), or a float matmul's right
/// operand (a pcc.gemm with transB); SUMMA's panels excepted.
inline bool readsTransposeAsFlag(mlir::OpOperand &use) {
  mlir::Operation *op = use.getOwner();
  auto rank = [](mlir::Value v) {
    return llvm::cast<mlir::RankedTensorType>(v.getType()).getRank();
  };
  if (auto gemm = llvm::dyn_cast<GemmOp>(op)) {
    if (gemm.getSummaAxes())
      return false;
    if (use.getOperandNumber() == 0)
      return rank(gemm.getA()) == 2 && rank(gemm.getB()) == 2;
    return use.getOperandNumber() == 1 &&
           (rank(gemm.getA()) == 2 || !gemm.getTransA());
  }
  if (auto mm = llvm::dyn_cast<MatMulOp>(op))
    return !mm.getSummaAxes() && use.getOperandNumber() == 1 &&
           rank(mm.getLhs()) >= 2 &&
           llvm::isa<mlir::FloatType>(
               llvm::cast<mlir::RankedTensorType>(mm.getLhs().getType())
                   .getElementType());
  return false;
}

/// Whether `op` is a 2-D transpose every reader takes through a GEMM flag.
inline bool isFoldedTranspose(mlir::Operation *op) {
  return op->getNumResults() == 1 && transposedMatrix(op->getResult(0)) &&
         !op->use_empty() &&
         llvm::all_of(op->getResult(0).getUses(), [](mlir::OpOperand &u) {
           return readsTransposeAsFlag(u);
         });
}

} // namespace pcc

#endif // PCC_DIALECT_PCC_IR_GEMMOPERANDS_H
