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

void convertFunction(func::FuncOp fn, Type to) {
  if (fn.isExternal())
    return;
  Block &entry = fn.front();
  OpBuilder b(fn.getContext());
  b.setInsertionPointToStart(&entry);
  llvm::SmallPtrSet<Operation *, 8> entryCasts;
  for (BlockArgument arg : entry.getArguments()) {
    Type t = convertType(arg.getType(), to);
    if (t == arg.getType() || arg.use_empty())
      continue;
    Value c = castTo(b, arg.getLoc(), arg, t);
    entryCasts.insert(c.getDefiningOp());
    arg.replaceAllUsesExcept(c, c.getDefiningOp());
  }
  for (Operation &op : entry.without_terminator()) {
    if (entryCasts.contains(&op))
      continue;
    for (Value r : op.getResults())
      r.setType(convertType(r.getType(), to));
    if (auto c = dyn_cast<ConstantOp>(op)) {
      c.setValueAttr(cast<ElementsAttr>(convertConstant(c.getValue(), to)));
    } else if (auto w = dyn_cast<WeightOp>(op)) {
      Type e = cast<RankedTensorType>(w.getType()).getElementType();
      if (w.getSourceTypeAttr() && w.getSourceTypeAttr().getValue() == e)
        w.removeSourceTypeAttr();
    } else if (auto c = dyn_cast<CastOp>(op); c && converts(c.getTo())) {
      c.setTo(to);
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
