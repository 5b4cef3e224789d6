//===- FoldHeadTransposes.cpp - attention reads heads in place ------------===//
//
// Exports split heads as x.view(B, S, H, D).transpose(1, 2) before
// attention and merge them with the inverse transpose after: four strided
// copies of [B, S, H, D] per attention. The tensor-core kernel can address
// the heads in place, so on GPU ranks an attention it runs whose query, key
// and value are such transposes and whose only use is the merging one
// takes the transposes' inputs and gives the merged result (`seq_first`);
// transposes left without uses go. An IR rewrite, so the memory plan sees
// the buffers the kernel reads and writes.
//
//===----------------------------------------------------------------------===//

#include "CpuEmitter.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace pcc::cpu {
namespace {

/// `v`'s defining transpose when it swaps the sequence and head axes of a
/// rank-4 tensor.
TransposeOp headSwap(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  return t && llvm::equal(t.getPerm(), ArrayRef<int64_t>{0, 2, 1, 3})
             ? t
             : TransposeOp();
}

} // namespace

void foldHeadTransposes(func::FuncOp fn) {
  SmallVector<AttentionOp> candidates;
  fn.walk([&](AttentionOp a) {
    auto merge = a->hasOneUse() ? dyn_cast<TransposeOp>(*a->user_begin())
                                : TransposeOp();
    if (hasTensorCoreAttention(a) && !a.getSeqFirst() && !a.getMask() &&
        !a.getHide() && !a.getRingAxes() && headSwap(a.getQuery()) &&
        headSwap(a.getKey()) && headSwap(a.getValue()) && merge &&
        headSwap(merge.getResult()))
      candidates.push_back(a);
  });
  OpBuilder b(fn.getContext());
  for (AttentionOp a : candidates) {
    auto merge = cast<TransposeOp>(*a->getUsers().begin());
    TransposeOp q = headSwap(a.getQuery()), k = headSwap(a.getKey()),
                v = headSwap(a.getValue());
    b.setInsertionPoint(merge);
    auto folded = cast<AttentionOp>(b.clone(*a.getOperation()));
    folded.getQueryMutable().assign(q.getInput());
    folded.getKeyMutable().assign(k.getInput());
    folded.getValueMutable().assign(v.getInput());
    folded.setSeqFirst(true);
    folded.getResult().setType(merge.getType());
    merge.getResult().replaceAllUsesWith(folded.getResult());
    merge.erase();
    a.erase();
    llvm::SmallPtrSet<Operation *, 3> split{q, k, v};
    for (Operation *t : split)
      if (t->use_empty())
        t->erase();
  }
}

} // namespace pcc::cpu
