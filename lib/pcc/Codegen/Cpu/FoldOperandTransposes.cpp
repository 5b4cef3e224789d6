//===- FoldOperandTransposes.cpp - GEMMs read transposed matrices ---------===//
//
// Exports without constant folding (the documented way to export for
// training) write nn.Linear as MatMul(x, Transpose(W)): a strided copy of
// every weight each step, held in the arena while its readers run, for
// what BLAS and cuBLAS do for free with a transposed operand. A GEMM that
// reads a 2-D transpose as a matrix operand (GemmOperands.h) takes the
// transpose's input with its transA / transB flag flipped instead; a float
// matmul of such a right operand becomes a pcc.gemm with transB (the rows
// of a left operand of rank > 2 kept: GemmOp's rows form). A transpose left
// without readers goes. An IR rewrite on a device's program, so the memory
// plan sees only the buffers the kernels read.
//
//===----------------------------------------------------------------------===//

#include "CpuEmitter.h"

#include "pcc/Dialect/PCC/IR/GemmOperands.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace pcc::cpu {

void foldOperandTransposes(func::FuncOp fn) {
  llvm::SetVector<Operation *> transposes;
  SmallVector<OpOperand *> folds;
  fn.walk([&](Operation *op) {
    if (!isa<GemmOp, MatMulOp>(op))
      return;
    for (OpOperand &use : op->getOpOperands())
      if (transposedMatrix(use.get()) && readsTransposeAsFlag(use))
        folds.push_back(&use);
  });
  OpBuilder b(fn.getContext());
  for (OpOperand *use : folds) {
    Operation *op = use->getOwner();
    Value matrix = transposedMatrix(use->get());
    transposes.insert(use->get().getDefiningOp());
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      use->set(matrix);
      if (use->getOperandNumber() == 0)
        gemm.setTransA(!gemm.getTransA());
      else
        gemm.setTransB(!gemm.getTransB());
      continue;
    }
    auto mm = cast<MatMulOp>(op);
    b.setInsertionPoint(mm);
    auto gemm = GemmOp::create(b, mm.getLoc(), mm.getType(), mm.getLhs(),
                               matrix, /*c=*/nullptr, b.getF32FloatAttr(1.0f),
                               b.getF32FloatAttr(1.0f), b.getBoolAttr(false),
                               b.getBoolAttr(true), /*summa_axes=*/nullptr);
    // Pipeline stages, forward and gradient tags: as the matmul's.
    gemm->setDiscardableAttrs(mm->getDiscardableAttrDictionary());
    mm.getResult().replaceAllUsesWith(gemm.getResult());
    mm.erase();
  }
  for (Operation *t : transposes)
    if (t->use_empty())
      t->erase();
}

} // namespace pcc::cpu
