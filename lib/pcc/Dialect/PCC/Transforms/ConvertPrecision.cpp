//===- ConvertPrecision.cpp - store float tensors in one precision --------===//
//
// Invariant: after the pass every f32/f16/bf16 tensor inside a function body
// has the precision's element type, and the function's signature is
// unchanged (casts at entry and before the return).
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/Transforms/Passes.h"
#include "pcc/Dialect/PCC/Transforms/Precision.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace pcc {
#define GEN_PASS_DEF_CONVERTPRECISION
#include "pcc/Dialect/PCC/Transforms/Passes.h.inc"
} // namespace pcc

using namespace mlir;
using namespace pcc;

std::optional<Type> pcc::precisionStorageType(MLIRContext *ctx,
                                              llvm::StringRef precision) {
  Builder b(ctx);
  if (precision == "fp32" || precision == "tf32")
    return b.getF32Type();
  if (precision == "bf16")
    return b.getBF16Type();
  if (precision == "fp16")
    return b.getF16Type();
  return std::nullopt;
}

namespace {

bool converts(Type e) { return e.isF32() || e.isF16() || e.isBF16(); }

/// `t` with element type `to` when its elements are a float that converts.
Type convertType(Type t, Type to) {
  auto r = dyn_cast<RankedTensorType>(t);
  if (!r || !converts(r.getElementType()) || r.getElementType() == to)
    return t;
  return RankedTensorType::get(r.getShape(), to);
}

Value castTo(OpBuilder &b, Location loc, Value v, Type type) {
  Type to = cast<RankedTensorType>(type).getElementType();
  return CastOp::create(b, loc, type, v, TypeAttr::get(to)).getResult();
}

/// Rounds a float constant to `to` (nearest even); other constants as they
/// are.
Attribute convertConstant(ElementsAttr value, Type to) {
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense || !converts(dense.getElementType()) ||
      dense.getElementType() == to)
    return value;
  const llvm::fltSemantics &sem = cast<FloatType>(to).getFloatSemantics();
  return dense.mapValues(to, [&](const APFloat &v) {
    APFloat r = v;
    bool lost;
    r.convert(sem, APFloat::rmNearestTiesToEven, &lost);
    return r.bitcastToAPInt();
  });
}

/// The loss tail of `fn`: the ops whose results only scalar float outputs
/// read, directly or through other tail ops, up to (not including) the
/// GEMMs, convolutions, attention and weights that feed them. torch.autocast
/// runs losses (log-softmax, NLL, MSE, their means) in f32 while GEMMs run
/// in 16 bits; a tail kept f32 does the same, so the loss, the value a
/// training step prints and the gradient that starts its backward pass
/// keep f32's 24 bits.
llvm::DenseSet<Operation *> lossTail(func::FuncOp fn) {
  Block &entry = fn.front();
  Operation *ret = entry.getTerminator();
  SmallVector<bool> root;
  for (Type t : fn.getResultTypes()) {
    auto r = dyn_cast<RankedTensorType>(t);
    root.push_back(r && converts(r.getElementType()) && r.hasStaticShape() &&
                   r.getNumElements() == 1);
  }
  llvm::DenseSet<Operation *> tail;
  for (Operation &op : llvm::reverse(entry.without_terminator())) {
    if (op.getNumResults() == 0 ||
        isa<MatMulOp, GemmOp, ConvOp, AttentionOp, WeightOp>(op))
      continue;
    bool used = false, onlyTail = true;
    for (OpOperand &use : op.getUses()) {
      used = true;
      Operation *user = use.getOwner();
      onlyTail &=
          user == ret ? root[use.getOperandNumber()] : tail.contains(user);
    }
    if (used && onlyTail)
      tail.insert(&op);
  }
  return tail;
}

void convertFunction(func::FuncOp fn, Type to) {
  if (fn.isExternal())
    return;
  Block &entry = fn.front();
  OpBuilder b(fn.getContext());
  Type f32 = b.getF32Type();
  llvm::DenseSet<Operation *> tail =
      to == f32 ? llvm::DenseSet<Operation *>() : lossTail(fn);
  b.setInsertionPointToStart(&entry);
  llvm::SmallPtrSet<Operation *, 8> entryCasts;
  for (BlockArgument arg : entry.getArguments()) {
    Type t = convertType(arg.getType(), to);
    if (t == arg.getType() || arg.use_empty() ||
        llvm::all_of(arg.getUsers(),
                     [&](Operation *u) { return tail.contains(u); }))
      continue;
    Value c = castTo(b, arg.getLoc(), arg, t);
    entryCasts.insert(c.getDefiningOp());
    arg.replaceAllUsesExcept(c, c.getDefiningOp());
  }
  for (Operation &op : entry.without_terminator()) {
    if (entryCasts.contains(&op))
      continue;
    Type type = tail.contains(&op) ? f32 : to;
    for (Value r : op.getResults())
      r.setType(convertType(r.getType(), type));
    if (auto c = dyn_cast<ConstantOp>(op)) {
      c.setValueAttr(cast<ElementsAttr>(convertConstant(c.getValue(), type)));
    } else if (auto w = dyn_cast<WeightOp>(op)) {
      Type e = cast<RankedTensorType>(w.getType()).getElementType();
      if (w.getSourceTypeAttr() && w.getSourceTypeAttr().getValue() == e)
        w.removeSourceTypeAttr();
    } else if (auto c = dyn_cast<CastOp>(op); c && converts(c.getTo())) {
      c.setTo(type);
    }
  }
  // The tail reads 16-bit values widened (an input, as it was).
  llvm::DenseMap<Value, Value> widened;
  for (Operation &op : entry.without_terminator()) {
    if (!tail.contains(&op))
      continue;
    for (OpOperand &operand : op.getOpOperands()) {
      Value v = operand.get();
      Type t = convertType(v.getType(), f32);
      if (t == v.getType())
        continue;
      Value &wide = widened[v];
      if (!wide) {
        auto narrowing = v.getDefiningOp<CastOp>();
        if (narrowing && entryCasts.contains(narrowing) &&
            narrowing.getInput().getType() == t) {
          wide = narrowing.getInput();
        } else {
          b.setInsertionPointAfterValue(v);
          wide = castTo(b, v.getLoc(), v, t);
        }
      }
      operand.set(wide);
    }
  }
  Operation *ret = entry.getTerminator();
  b.setInsertionPoint(ret);
  for (auto [i, want] : llvm::enumerate(fn.getResultTypes())) {
    Value v = ret->getOperand(i);
    if (v.getType() != want)
      ret->setOperand(i, castTo(b, ret->getLoc(), v, want));
  }
}

struct ConvertPrecisionPass
    : pcc::impl::ConvertPrecisionBase<ConvertPrecisionPass> {
  using ConvertPrecisionBase::ConvertPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Type> to = precisionStorageType(&getContext(), precision);
    if (!to) {
      module.emitError() << "precision must be fp32, tf32, bf16 or fp16, got '"
                         << precision << "'";
      return signalPassFailure();
    }
    // Weights remember the type their file holds before they convert.
    module.walk([&](WeightOp w) {
      Type e = cast<RankedTensorType>(w.getType()).getElementType();
      if (!w.getSourceTypeAttr() && converts(e) && e != *to)
        w.setSourceTypeAttr(TypeAttr::get(e));
    });
    for (auto fn : module.getOps<func::FuncOp>())
      convertFunction(fn, *to);
    module->setAttr(kPrecisionAttr, StringAttr::get(&getContext(), precision));
  }
};

} // namespace
