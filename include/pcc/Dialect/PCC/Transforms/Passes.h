//===- Passes.h - pcc dialect passes ----------------------------*- C++ -*-===//

#ifndef PCC_DIALECT_PCC_TRANSFORMS_PASSES_H
#define PCC_DIALECT_PCC_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "pcc/Dialect/PCC/IR/PCCDialect.h"

namespace pcc {

/// On a function result returned padded (logits over a vocabulary
/// pcc-pad-vocabulary padded): the model's shape of that result.
inline constexpr llvm::StringLiteral kUnpaddedResultAttr = "pcc.unpadded";
/// On a function whose vocabulary pcc-pad-vocabulary padded: [rows, padded
/// rows, multiple].
inline constexpr llvm::StringLiteral kPaddedVocabularyAttr =
    "pcc.padded_vocabulary";

#define GEN_PASS_DECL
#include "pcc/Dialect/PCC/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pcc/Dialect/PCC/Transforms/Passes.h.inc"

/// Canonicalization, composite raising and CSE: what runs on every
/// imported module before planning.
void buildImportCleanupPipeline(mlir::OpPassManager &pm);

/// pcc-raise-causal-masks on one function (code generation runs it on
/// the per-device program).
mlir::LogicalResult raiseCausalMasks(mlir::func::FuncOp fn);

/// The share of query-key pairs a pcc.attention computes: below 1 where it
/// hides a band (hide_from, or a hide operand pcc-raise-causal-masks would
/// raise) with an -inf fill, whose hidden pairs every kernel skips; 1
/// otherwise (a finite fill still counts in the softmax).
double visibleScoreFraction(mlir::Operation *attention);

/// Registers all pcc passes and pipelines (for pcc-opt).
void registerPCCPassesAndPipelines();

} // namespace pcc

#endif // PCC_DIALECT_PCC_TRANSFORMS_PASSES_H
