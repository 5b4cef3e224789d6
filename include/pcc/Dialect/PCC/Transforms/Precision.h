//===- Precision.h - the precision a model computes in ----------*- C++ -*-===//
//
// --precision fp32|tf32|bf16|fp16: what pcc-convert-precision stores tensors
// in, and the module attribute recording it for the planner.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_TRANSFORMS_PRECISION_H
#define PCC_DIALECT_PCC_TRANSFORMS_PRECISION_H

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace pcc {

/// On the module: the --precision it was converted to ("fp32", "tf32",
/// "bf16", "fp16").
inline constexpr llvm::StringLiteral kPrecisionAttr = "pcc.precision";

/// The element type tensors are stored in under `precision`, or nothing
/// when it names no precision.
std::optional<mlir::Type> precisionStorageType(mlir::MLIRContext *ctx,
                                               llvm::StringRef precision);

} // namespace pcc

#endif // PCC_DIALECT_PCC_TRANSFORMS_PRECISION_H
