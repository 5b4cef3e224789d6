//===- ExprBuilder.h - formulas over pcc ops at import -----------*- C++ -*-===//
//
// Private to lib/pcc/Import: builds pcc ops for one node's formula, each
// step inferring its type and failure propagating to the end, so converters
// that compose ops (activations, recurrent cells) read like the ONNX
// definitions.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_LIB_IMPORT_EXPRBUILDER_H
#define PCC_LIB_IMPORT_EXPRBUILDER_H

#include "ImportContext.h"

namespace pcc::import {

/// Small expression builder over one node: every step infers its type and
/// propagates failure, so formulas read like the ONNX definitions.
class Expr {
public:
  explicit Expr(NodeContext &c) : c(c) {}

  mlir::Value k(double v) { return c.scalar(elem, v); }
  template <typename OpTy>
  mlir::Value op(mlir::Value a) {
    return ok(c.build1<OpTy>(a));
  }
  template <typename OpTy>
  mlir::Value op(mlir::Value a, mlir::Value b) {
    return ok(c.build1<OpTy>(mlir::ValueRange{a, b}));
  }
  mlir::Value where(mlir::Value cond, mlir::Value a, mlir::Value b) {
    return ok(c.build1<WhereOp>(mlir::ValueRange{cond, a, b}));
  }
  mlir::Value cast(mlir::Value a, mlir::Type to) {
    return ok(c.build1<CastOp>(a, {c.named("to", mlir::TypeAttr::get(to))}));
  }
  /// Any other built value, its failure recorded like the others'.
  mlir::Value take(mlir::FailureOr<mlir::Value> v) { return ok(v); }
  bool anyFailed() const { return failed_; }
  Results done(mlir::Value v) {
    if (failed_ || !v)
      return mlir::failure();
    return llvm::SmallVector<mlir::Value>{v};
  }

  mlir::Type elem;

private:
  mlir::Value ok(mlir::FailureOr<mlir::Value> v) {
    if (failed(v)) {
      failed_ = true;
      return c.input(0); // Keeps building; done() reports the failure.
    }
    return *v;
  }
  NodeContext &c;
  bool failed_ = false;
};

} // namespace pcc::import

#endif // PCC_LIB_IMPORT_EXPRBUILDER_H
