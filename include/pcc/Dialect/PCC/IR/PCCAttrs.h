//===- PCCAttrs.h - pcc dialect attributes ----------------------*- C++ -*-===//

#ifndef PCC_DIALECT_PCC_IR_PCCATTRS_H
#define PCC_DIALECT_PCC_IR_PCCATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include "llvm/ADT/StringRef.h"

namespace pcc {

/// Roles of mesh axes, in the one rank order: ranks are row-major over a
/// mesh's axes in this order (pipeline slowest, tensor fastest), so a tensor
/// group is a run of neighbouring ranks (one node) and pipeline stages lie
/// furthest apart. #pcc.plan lists its axes in this order; the planner
/// prices groups by it; meshForDegrees (Sharding.h) builds it; the runtime
/// numbers devices row-major over the mesh.
inline constexpr llvm::StringLiteral kAxisRoles[] = {"pp", "dp", "sp", "tp"};

/// The pipeline stage an op runs in (an i64 attribute; on a function
/// result, the stage that returns it). See pcc/Partition/Stages.h.
inline constexpr llvm::StringLiteral kStageAttr = "pcc.stage";
/// On the ops of a training step's optimizer update (after the backward
/// pass): ZeRO runs them on each device's part of the states.
inline constexpr llvm::StringLiteral kOptimizerAttr = "pcc.optimizer";
/// On a training step's forward op that has a gradient, a number
/// (kForwardIdAttr); on the backward ops its gradient rule made, the same
/// number (kGradientOfAttr): a pipeline runs them in the op's stage.
inline constexpr llvm::StringLiteral kForwardIdAttr = "pcc.forward_id";
inline constexpr llvm::StringLiteral kGradientOfAttr = "pcc.gradient_of";
/// On activation recompute's clone of a forward op, the original's
/// kForwardIdAttr: the gradient ops of the original read the clone's
/// results, and their layouts follow the clone's.
inline constexpr llvm::StringLiteral kRecomputeOfAttr = "pcc.recompute_of";
/// On the forward ops of a repeated layer (copy k of the block the planner
/// finds, an i64): activation recompute keeps each layer's input and
/// recomputes the rest in the backward pass (pcc/Autodiff/Recompute.h).
inline constexpr llvm::StringLiteral kLayerAttr = "pcc.layer";
/// On the ops of a step that streams microbatches and that run once per
/// step, after the last microbatch (the optimizer update, the loss over the
/// whole batch): see pcc-accumulate-microbatches.
inline constexpr llvm::StringLiteral kOncePerStepAttr = "pcc.once_per_step";
/// On the backward ops of a step streaming microbatches (those of gradient
/// rules, and what reads their values): a pipeline schedule (1F1B) runs a
/// microbatch's backward apart from its forward.
inline constexpr llvm::StringLiteral kBackwardAttr = "pcc.backward";
/// On the backward ops (kBackwardAttr too) of a zero-bubble step
/// (ParallelPlan::zeroBubble) that make only weights' gradients (W): each
/// microbatch's backward runs as B (the rest: what reaches another stage)
/// and then W, which the ZB-H1 schedule defers.
inline constexpr llvm::StringLiteral kBackwardWeightAttr =
    "pcc.backward_weight";
/// On the ops a step streaming microbatches runs in its prologue: a first
/// pass over the microbatches before their forward and backward passes, for
/// sums over the whole batch that depend on the inputs alone (the count of
/// targets a cross-entropy averages over) and that every microbatch's
/// gradient needs. Their results stay in the arena for the whole step.
inline constexpr llvm::StringLiteral kPrologueAttr = "pcc.prologue";
/// On prologue ops that read a prologue sum whole (a collective over other
/// axes of the sum over microbatches): they run in the last prologue run
/// only, once a step.
inline constexpr llvm::StringLiteral kPrologueLastAttr = "pcc.prologue_last";

/// Whether two ops run in the same part of a microbatched step (prologue,
/// forward, B, W, once per step): what fusion and pipeline segments keep
/// apart.
inline bool sameStepPart(mlir::Operation *a, mlir::Operation *b) {
  for (llvm::StringRef attr : {kPrologueAttr, kBackwardAttr,
                               kBackwardWeightAttr, kOncePerStepAttr})
    if (a->hasAttr(attr) != b->hasAttr(attr))
      return false;
  return true;
}

} // namespace pcc

#define GET_ATTRDEF_CLASSES
#include "pcc/Dialect/PCC/IR/PCCAttrs.h.inc"

#endif // PCC_DIALECT_PCC_IR_PCCATTRS_H
