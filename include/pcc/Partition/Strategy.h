//===- Strategy.h - layouts a forced strategy gives each op -----*- C++ -*-===//

#ifndef PCC_PARTITION_STRATEGY_H
#define PCC_PARTITION_STRATEGY_H

#include "pcc/Sharding/ParallelPlan.h"
#include "pcc/Sharding/ShardingRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace pcc {

/// Why pcc-apply-plan cannot apply `plan` yet (the parts of a plan the
/// partitioner does not implement), or nothing when it can.
std::optional<std::string> whyPlanCannotBeApplied(const ParallelPlan &plan);

/// How each op of `fn` runs on the tp axis when pcc-apply-plan shards it for
/// `dp` x `tp` with Megatron-LM's layouts, keyed by op: the layouts on the
/// (dp, tp) grid with the dp splits dropped, tp as axis 0 of a one-axis
/// grid (the planner's view). Where the batch and tp splits cannot share a
/// dimension, ops run whole on tp and the layouts say so. `fn` is not
/// changed; empty if the batch does not divide by `dp`.
llvm::DenseMap<mlir::Operation *, OpSharding>
megatronShardings(mlir::func::FuncOp fn, int64_t dp, int64_t tp,
                  bool sequence = false);

/// The same for the sp axis of `dp` x `sp` sequence parallelism in `mode`
/// (sp as axis 0 of a one-axis grid): what the planner prices.
llvm::DenseMap<mlir::Operation *, OpSharding>
sequenceShardings(mlir::func::FuncOp fn, int64_t dp, int64_t sp,
                  SequenceMode mode);

/// The same for the tensor grid of a `dp` x `tp` plan in 2D / 2.5D mode
/// (depth for 2.5D): layouts on the grid's axes, numbered from 0 in the
/// program mesh's order (programMesh).
llvm::DenseMap<mlir::Operation *, OpSharding>
gridShardings(mlir::func::FuncOp fn, int64_t dp, int64_t tp, TensorMode mode,
              int64_t depth);

} // namespace pcc

#endif // PCC_PARTITION_STRATEGY_H
