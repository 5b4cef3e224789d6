//===- Propagation.h - annotate a function with shardings -------*- C++ -*-===//

#ifndef PCC_PARTITION_PROPAGATION_H
#define PCC_PARTITION_PROPAGATION_H

#include "pcc/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace pcc {

/// Called before each op's sharding rule with its operands' current layouts.
/// A strategy may change them: a weight's new layout is recorded on the
/// weight; a changed activation layout is pinned on the op
/// (kOperandShardingAttr) and the partitioner reshards to it.
using StrategyHook =
    llvm::function_ref<void(mlir::Operation *, llvm::SmallVectorImpl<TensorSharding> &)>;

/// Annotates every op result in `fn` with the layout its sharding rule
/// computes, in program order, starting from the argument and weight
/// annotations. Weights used only with one split layout are annotated with
/// it; function results get their value's layout without partial sums.
void propagateShardings(mlir::func::FuncOp fn, const Mesh &mesh,
                        StrategyHook hook = nullptr);

/// The forward values of a training step made from weights alone (a
/// transposed weight, its reshape): under ZeRO-3 a backward op that reads
/// one makes it again before it (propagateShardings), from gathers of its
/// own.
llvm::DenseSet<mlir::Value> valuesMadeOfWeights(mlir::Block &body);

} // namespace pcc

#endif // PCC_PARTITION_PROPAGATION_H
