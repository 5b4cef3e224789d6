//===- Stages.h - pipeline stages of a program ------------------*- C++ -*-===//
//
// A pipelined program is cut into runs of ops in program order (an
// inference program: one per coordinate of the grid's pp axis; a training
// step's backward pass runs the stages back in reverse order); each op
// carries its stage as
// `pcc.stage`. pcc-apply-plan cuts the global program (at the planner's
// boundaries when it recorded them, else balancing the ops' work);
// pcc-partition keeps the attribute; pcc-pipeline-stages then makes each
// stage self-contained (sends, receives, its own copies of shared weights).
//
//===----------------------------------------------------------------------===//

#ifndef PCC_PARTITION_STAGES_H
#define PCC_PARTITION_STAGES_H

#include "pcc/Dialect/PCC/IR/PCCAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace pcc {

/// The planner's stage for an op, read by pcc-apply-plan.
inline constexpr llvm::StringLiteral kPlannedStageAttr = "pcc.planned_stage";

/// `op`'s stage, if it has one.
std::optional<int64_t> stageOf(mlir::Operation *op);

/// Cuts the compute ops of `fn` into `stages` contiguous runs: the planner's
/// (kPlannedStageAttr on every compute op) or balanced by work. Fails with an
/// error when `fn` has fewer compute ops than stages or the planner's
/// stages are not contiguous.
/// A training step's backward ops go in the stage of the op they
/// differentiate, its update in the stage of the parameter it updates.
/// Stage s runs on pipeline device s % `devices` (interleaved 1F1B when
/// there are more stages than devices; 0: one stage per device).
mlir::LogicalResult assignStages(mlir::func::FuncOp fn, int64_t stages,
                                 int64_t devices = 0);

/// Gives the ops the partitioner added (without a stage) the stage of the
/// next staged op, the one they feed, or an earlier one: the first stage
/// that reads a weight the added op reads.
void stageAddedOps(mlir::func::FuncOp fn, int64_t stages);

void setStage(mlir::Operation *op, int64_t stage);

/// Whether `op` is a collective over the microbatch axis `mb` alone: what
/// the runtime accumulates across a step's runs (Microbatches.cpp).
bool acrossMicrobatches(mlir::Operation *op, int64_t mb);

/// The stages of a training step's backward and update ops, once its
/// forward ops (`forward`, in program order) have theirs
/// (TrainingStages.cpp).
mlir::LogicalResult stageTrainingStep(mlir::func::FuncOp fn,
                                      llvm::ArrayRef<mlir::Operation *> forward,
                                      int64_t stages, int64_t devices);

} // namespace pcc

#endif // PCC_PARTITION_STAGES_H
