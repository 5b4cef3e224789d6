//===- GradientBuilder.h - building gradient formulas ------------*- C++ -*-===//
//
// What the gradient rules (PCCGradients.cpp) and the training-step builder
// write formulas with: pcc ops built through their type inference, scalar
// constants, and undoing numpy broadcasting. A step whose types do not
// infer is an internal error, reported once at the op being differentiated;
// building goes on with null values so a rule reads straight through.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_IR_GRADIENTBUILDER_H
#define PCC_DIALECT_PCC_IR_GRADIENTBUILDER_H

#include "pcc/Dialect/PCC/IR/PCCOps.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace pcc {

class GradientBuilder {
public:
  GradientBuilder(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() const { return loc; }
  void setLocation(mlir::Location l) { loc = l; }
  bool failed() const { return failed_; }

  /// `OpTy` on `operands` with `attrs`, its result types inferred; null
  /// (and failed()) when they do not infer or an operand is null.
  template <typename OpTy>
  mlir::Operation *build(mlir::ValueRange operands,
                         llvm::ArrayRef<mlir::NamedAttribute> attrs = {});
  template <typename OpTy>
  mlir::Value op(mlir::ValueRange operands,
                 llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    mlir::Operation *o = build<OpTy>(operands, attrs);
    return o ? o->getResult(0) : mlir::Value();
  }

  mlir::NamedAttribute named(llvm::StringRef name, mlir::Attribute a) {
    return b.getNamedAttr(name, a);
  }
  mlir::NamedAttribute i64(llvm::StringRef name, int64_t v) {
    return named(name, b.getI64IntegerAttr(v));
  }
  mlir::NamedAttribute i64s(llvm::StringRef name, llvm::ArrayRef<int64_t> v) {
    return named(name, b.getDenseI64ArrayAttr(v));
  }

  /// A rank-0 constant of `elem` (a float or integer type).
  mlir::Value scalar(mlir::Type elem, double value);
  /// A rank-0 constant of `like`'s element type.
  mlir::Value scalarLike(mlir::Value like, double value);
  /// `value` broadcast to `like`'s type (no storage: it fuses).
  mlir::Value fill(mlir::Value like, double value);

  /// Pointwise with broadcasting: an operand this builder expanded to the
  /// other's shape is read broadcast instead, so the expansion is never
  /// made (a loss's gradient over a [tokens, vocabulary] one-hot).
  mlir::Value add(mlir::Value a, mlir::Value b) {
    return op<AddOp>(broadcastOperands(a, b));
  }
  mlir::Value sub(mlir::Value a, mlir::Value b) {
    return op<SubOp>(broadcastOperands(a, b));
  }
  mlir::Value mul(mlir::Value a, mlir::Value b) {
    return op<MulOp>(broadcastOperands(a, b));
  }
  mlir::Value div(mlir::Value a, mlir::Value b) {
    return op<DivOp>(broadcastOperands(a, b));
  }
  mlir::Value neg(mlir::Value a) { return op<NegOp>({a}); }
  mlir::Value scale(mlir::Value a, double k) {
    return k == 1.0 ? a : mul(a, scalarLike(a, k));
  }

  /// alpha op(a) op(b) (pcc.gemm, every attribute given).
  mlir::Value gemm(mlir::Value a, mlir::Value b, bool transA, bool transB,
                   double alpha = 1.0);
  mlir::Value reshape(mlir::Value v, llvm::ArrayRef<int64_t> shape);
  mlir::Value expand(mlir::Value v, llvm::ArrayRef<int64_t> shape);
  /// {a, b} with an expansion dropped where the other operand has its
  /// shape.
  llvm::SmallVector<mlir::Value, 2> broadcastOperands(mlir::Value a,
                                                      mlir::Value b);
  mlir::Value transpose(mlir::Value v, llvm::ArrayRef<int64_t> perm);
  /// Swaps the last two dimensions.
  mlir::Value transposeLast2(mlir::Value v);
  mlir::Value reduceSum(mlir::Value v, llvm::ArrayRef<int64_t> axes,
                        bool keepdims);
  /// 1 where `indices` (integers, broadcastable against a `classes`-long
  /// axis `axis` of a rank-`rank` iota) equals the position on that axis,
  /// 0 elsewhere, as `elem`: the one-hot products that pick a class
  /// (cross-entropy) or sum gathered rows (gather's gradient).
  mlir::Value oneHot(mlir::Value indices, int64_t classes, int64_t rank,
                     int64_t axis, mlir::Type elem);
  /// The gradient `grad` of a broadcast result, summed back to `target`'s
  /// shape (numpy broadcasting undone).
  mlir::Value sumTo(mlir::Value grad, mlir::Value target);
  /// `grad` of a reduction's result over `axes` (kept or not) spread back
  /// over the input's shape.
  mlir::Value spread(mlir::Value grad, mlir::Value input,
                     llvm::ArrayRef<int64_t> axes);

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
  bool failed_ = false;
  /// The expansions this builder made (broadcastOperands reads through
  /// them; a forward program's own expansions keep their layouts).
  llvm::SmallPtrSet<mlir::Operation *, 16> expansions;
};

template <typename OpTy>
mlir::Operation *GradientBuilder::build(mlir::ValueRange operands,
                                        llvm::ArrayRef<mlir::NamedAttribute> attrs) {
  if (llvm::any_of(operands, [](mlir::Value v) { return !v; })) {
    failed_ = true;
    return nullptr;
  }
  mlir::MLIRContext *ctx = b.getContext();
  mlir::OperationState state(loc, OpTy::getOperationName());
  state.addOperands(operands);
  auto dict = mlir::DictionaryAttr::get(ctx, attrs);
  auto &props = state.getOrAddProperties<typename OpTy::Properties>();
  llvm::SmallVector<mlir::Type> types;
  if (mlir::failed(OpTy::setPropertiesFromAttr(
          props, dict, [&] { return mlir::emitError(loc); })) ||
      mlir::failed(OpTy::inferReturnTypes(ctx, loc, state.operands, dict,
                                          state.getRawProperties(), {},
                                          types))) {
    if (!failed_)
      mlir::emitError(loc) << "internal error: a gradient step ('"
                           << OpTy::getOperationName()
                           << "') does not type-check";
    failed_ = true;
    return nullptr;
  }
  state.addTypes(types);
  return b.create(state);
}

} // namespace pcc

#endif // PCC_DIALECT_PCC_IR_GRADIENTBUILDER_H
