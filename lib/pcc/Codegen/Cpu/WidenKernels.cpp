//===- WidenKernels.cpp - f32 kernels for 16-bit tensors ------------------===//
//
// The CPU runtime's kernels (BLAS GEMMs, attention, normalizations,
// reductions, pooling) compute in f32. Around every such op on fp16 or bf16
// tensors this step casts the float operands to f32 and the results back,
// so 16-bit values are stored and f32 arithmetic runs, as the CPU side of
// --precision promises. The casts are pointwise and fuse into their
// neighbours' loops. Ops that only move bytes (gathers, slices, transposes,
// concatenations, collectives other than sums, sends) and pointwise loops
// (which compute in float themselves) keep their 16-bit types; the
// runtime's sums add 16-bit values through float. On GPU ranks matrix
// products stay 16-bit: cuBLAS multiplies them on tensor cores, accumulating
// in f32; so does attention where the tensor-core kernel takes its shape,
// and layer norm (f32 statistics over 16-bit rows). A 16-bit product that
// is only widened writes f32 directly.
//
//===----------------------------------------------------------------------===//

#include "CpuEmitter.h"

#include "pcc/Dialect/PCC/IR/Fusion.h"
#include "pcc/Dialect/PCC/IR/PCCAttrs.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace pcc::cpu {
namespace {

bool isSixteenBitFloat(Type t) {
  auto shaped = dyn_cast<ShapedType>(t);
  Type e = shaped ? shaped.getElementType() : t;
  return e.isF16() || e.isBF16();
}

/// Ops whose CPU code works on any element type as bytes, or as 16-bit
/// values directly.
bool runsOnSixteenBits(Operation *op, bool sixteenBitGemms) {
  if (sixteenBitGemms) {
    if (auto a = dyn_cast<AttentionOp>(op))
      return hasTensorCoreAttention(a);
    // layerNorm16: f32 statistics over 16-bit rows and parameters of the
    // rows' type (not a 2D split's partial sums).
    if (auto ln = dyn_cast<LayerNormOp>(op))
      return !ln.getStatAxes() && isSixteenBitFloat(ln.getType()) &&
             llvm::all_of(op->getOperandTypes(), [&](Type t) {
               return getElementTypeOrSelf(t) ==
                      getElementTypeOrSelf(ln.getType());
             });
    if (auto mm = dyn_cast<MatMulOp>(op))
      return !mm.getSummaAxes();
    if (auto g = dyn_cast<GemmOp>(op))
      return !g.getSummaAxes();
  }
  return isPointwise(op) ||
         isa<WeightOp, ConstantOp, ReshapeOp, GatherOp, ShardGatherOp,
             TransposeOp, SliceOp, ConcatOp, SplitOp, SendOp, RecvOp,
             shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
             shard::AllSliceOp, shard::AllToAllOp>(op);
}

RankedTensorType withElement(Type t, Type e) {
  auto r = cast<RankedTensorType>(t);
  return RankedTensorType::get(r.getShape(), e);
}

/// A cast of `v` to element type `to` before `at`, in `at`'s stage and
/// part of a microbatched step (prologue, backward, once per step).
Value castBefore(OpBuilder &b, Operation *at, Value v, Type to) {
  auto cast = CastOp::create(b, at->getLoc(), withElement(v.getType(), to), v,
                             TypeAttr::get(to));
  for (StringRef a : {StringRef(kStageAttr), StringRef(kPrologueAttr),
                      StringRef(kPrologueLastAttr), StringRef(kBackwardAttr),
                      StringRef(kBackwardWeightAttr),
                      StringRef(kOncePerStepAttr)})
    if (Attribute value = at->getAttr(a))
      cast->setAttr(a, value);
  return cast.getResult();
}

} // namespace

/// A 16-bit product whose only use casts it to f32 (a model's f32 logits)
/// writes f32 itself: cuBLAS stores the accumulator unrounded, and no cast
/// kernel reads and writes the result again.
void widenProductsInPlace(func::FuncOp fn) {
  SmallVector<CastOp> casts;
  fn.walk([&](CastOp c) {
    Operation *def = c.getInput().getDefiningOp();
    auto mm = dyn_cast_or_null<MatMulOp>(def);
    auto g = dyn_cast_or_null<GemmOp>(def);
    bool product =
        (mm && !mm.getSummaAxes()) || (g && !g.getSummaAxes() && !g.getC());
    if (product && def->hasOneUse() && c.getType().getElementType().isF32() &&
        isSixteenBitFloat(c.getInput().getType()) &&
        isSixteenBitFloat(def->getOperand(0).getType()))
      casts.push_back(c);
  });
  for (CastOp c : casts) {
    Value product = c.getInput();
    product.setType(c.getType());
    c.getResult().replaceAllUsesWith(product);
    c.erase();
  }
}

void widenSixteenBitKernels(func::FuncOp fn, bool sixteenBitGemms) {
  if (sixteenBitGemms)
    widenProductsInPlace(fn);
  SmallVector<Operation *> kernels;
  SmallVector<AttentionOp> tensorCoreAttention;
  fn.walk([&](Operation *op) {
    if (auto a = dyn_cast<AttentionOp>(op);
        a && sixteenBitGemms && hasTensorCoreAttention(a))
      tensorCoreAttention.push_back(a);
    if (op == fn.getOperation() || op->hasTrait<mlir::OpTrait::IsTerminator>() ||
        runsOnSixteenBits(op, sixteenBitGemms))
      return;
    if (llvm::any_of(op->getOperandTypes(), isSixteenBitFloat) ||
        llvm::any_of(op->getResultTypes(), isSixteenBitFloat))
      kernels.push_back(op);
  });
  OpBuilder b(fn.getContext());
  Type f32 = b.getF32Type();
  // The tensor-core kernel reads an additive mask in f32, like the others.
  for (AttentionOp a : tensorCoreAttention) {
    OpOperand *mask = a.getMaskMutable().empty() ? nullptr
                                                 : &a.getMaskMutable()[0];
    if (mask && isSixteenBitFloat(mask->get().getType())) {
      b.setInsertionPoint(a);
      mask->set(castBefore(b, a, mask->get(), f32));
    }
  }
  for (Operation *op : kernels) {
    b.setInsertionPoint(op);
    for (OpOperand &use : op->getOpOperands())
      if (isSixteenBitFloat(use.get().getType()))
        use.set(castBefore(b, op, use.get(), f32));
    b.setInsertionPointAfter(op);
    for (Value r : op->getResults()) {
      if (!isSixteenBitFloat(r.getType()))
        continue;
      Type storage = cast<ShapedType>(r.getType()).getElementType();
      r.setType(withElement(r.getType(), f32));
      Value narrow = castBefore(b, op, r, storage);
      r.replaceAllUsesExcept(narrow, narrow.getDefiningOp());
    }
  }
}

} // namespace pcc::cpu
