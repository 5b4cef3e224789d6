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
// A fused QKV projection then splits its [B, S, 3 H D] result along the
// features into Q, K and V: three strided copies. Where an operand of such
// an attention is a reshaped block of the features of a [B, S, F] tensor,
// the attention reads that tensor's heads in place (`head_offsets`), and a
// split left without uses goes.
//
//===----------------------------------------------------------------------===//

#include "CpuEmitter.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace pcc::cpu {
namespace {

/// Where `v` (a seq_first operand [B, S, H, D]) is a reshaped block of
/// features of a [B, S, F] tensor: that tensor and the block's first head.
std::optional<std::pair<Value, int64_t>> featureBlock(Value v) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  auto split =
      reshape ? reshape.getInput().getDefiningOp<SplitOp>() : SplitOp();
  if (!split)
    return std::nullopt;
  ArrayRef<int64_t> in = typeOf(split.getInput()).getShape();
  ArrayRef<int64_t> heads = typeOf(v).getShape();
  int64_t d = heads.back();
  if (in.size() != 3 || split.getAxis() != 2 || in[0] != heads[0] ||
      in[1] != heads[1] || in[2] % d != 0)
    return std::nullopt;
  int64_t offset = 0;
  for (auto [i, size] : llvm::enumerate(split.getSizes())) {
    if (split.getResult(i) == reshape.getInput())
      break;
    offset += size;
  }
  if (offset % d != 0)
    return std::nullopt;
  return std::make_pair(split.getInput(), offset / d);
}

/// Seq_first attentions read the heads of split projections in place.
void readHeadsInPlace(func::FuncOp fn) {
  OpBuilder b(fn.getContext());
  llvm::DenseMap<Value, Value> asHeads; // [B, S, F] -> [B, S, F / D, D]
  llvm::SetVector<Operation *> maybeDead;
  fn.walk([&](AttentionOp a) {
    if (!a.getSeqFirst() || a.getHeadOffsets())
      return;
    SmallVector<int64_t> offsets(3, 0);
    bool any = false;
    for (OpOperand *operand :
         {&a.getQueryMutable(), &a.getKeyMutable(), &a.getValueMutable()}) {
      auto block = featureBlock(operand->get());
      if (!block)
        continue;
      auto [whole, first] = *block;
      Value &heads = asHeads[whole];
      if (!heads) {
        auto split = operand->get()
                         .getDefiningOp<ReshapeOp>()
                         .getInput()
                         .getDefiningOp<SplitOp>();
        ArrayRef<int64_t> in = typeOf(whole).getShape();
        int64_t d = typeOf(operand->get()).getShape().back();
        SmallVector<int64_t> shape{in[0], in[1], in[2] / d, d};
        b.setInsertionPoint(split);
        auto r =
            ReshapeOp::create(b, split.getLoc(), typeOf(whole).clone(shape),
                              whole, b.getDenseI64ArrayAttr(shape));
        // Pipeline stages and prologues: where the split ran.
        r->setDiscardableAttrs(split->getDiscardableAttrDictionary());
        heads = r.getResult();
      }
      Operation *view = operand->get().getDefiningOp();
      offsets[operand->getOperandNumber()] = first;
      operand->set(heads);
      maybeDead.insert(view);
      any = true;
    }
    if (any)
      a.setHeadOffsets(offsets);
  });
  for (Operation *view : maybeDead) {
    if (!view->use_empty())
      continue;
    Operation *split = view->getOperand(0).getDefiningOp();
    view->erase();
    if (split->use_empty())
      split->erase();
  }
}

} // namespace

void foldHeadTransposes(func::FuncOp fn) {
  SmallVector<AttentionOp> candidates;
  fn.walk([&](AttentionOp a) {
    auto merge = a->hasOneUse() ? dyn_cast<TransposeOp>(*a->user_begin())
                                : TransposeOp();
    if (hasTensorCoreAttention(a) && !a.getSeqFirst() && !a.getRingAxes() &&
        headSwap(a.getQuery()) && headSwap(a.getKey()) &&
        headSwap(a.getValue()) && merge && headSwap(merge.getResult()))
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
  readHeadsInPlace(fn);
}

} // namespace pcc::cpu
