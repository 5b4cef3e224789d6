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

/// Stores the weight behind `v` so that `v` is laid out as `now`: `v` is
/// the weight, or a view of it (the transpose of MatMul(x, Transpose(W)),
/// as exports without constant folding write nn.Linear; a mixed-precision
/// step's cast of its master), while the weight is still replicated or
/// already stored so. Each device then keeps, trains and updates only its
/// part.
bool storeThrough(mlir::Value v, const TensorSharding &now, const Mesh &mesh);

/// The forward values of a training step made from weights alone (a
/// transposed weight, its reshape): under ZeRO-3 a backward op that reads
/// one makes it again before it (propagateShardings), from gathers of its
/// own.
llvm::DenseSet<mlir::Value> valuesMadeOfWeights(mlir::Block &body);

} // namespace pcc

#endif // PCC_PARTITION_PROPAGATION_H
