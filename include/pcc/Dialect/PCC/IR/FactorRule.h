//===- FactorRule.h - an op's computation as factors -------------*- C++ -*-===//
//
// How an op computes, as in Shardy and GSPMD: every operand and result
// dimension is tied to a factor (a loop of the computation) or to none (it
// must be whole on every device). A factor split over mesh axes splits every
// dimension tied to it; a split reduction factor (a matmul's K) leaves the
// result a partial sum over those axes. Ops state their rule through
// ShardingRuleOpInterface; pcc/Sharding/ShardingRules.h applies it.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_IR_FACTORRULE_H
#define PCC_DIALECT_PCC_IR_FACTORRULE_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/SmallVector.h"

namespace pcc {

/// A dimension's tie to a factor; a dimension of `mult` groups is tied with
/// groups multiplied by `mult` (split's input along its axis).
struct DimRef {
  int factor = -1;
  int64_t mult = 1;
};

struct FactorRule {
  int numFactors = 0;
  /// Per operand and result, per dimension.
  llvm::SmallVector<llvm::SmallVector<DimRef>> operands, results;
  llvm::SmallBitVector reduction;
  /// The op adds an operand after its reduction (gemm's C): a split
  /// reduction is summed before that operand is added, so it counts once.
  bool sumBeforeLastOperand = false;

  /// Every dimension of `op`'s operands and results untied.
  explicit FactorRule(mlir::Operation *op);
  int add(bool isReduction = false) {
    reduction.resize(numFactors + 1);
    reduction[numFactors] = isReduction;
    return numFactors++;
  }
};

/// Broadcasting pointwise ops: result dims are factors; an operand dim of the
/// same size (right-aligned) is tied to it, a size-1 dim that broadcasts is
/// not.
FactorRule pointwiseFactorRule(mlir::Operation *op);

/// Result dim `d` tied to every operand's dim `d` of the same size, except
/// the dims `whole` names.
FactorRule sameShapeFactorRule(mlir::Operation *op,
                               llvm::function_ref<bool(int64_t)> whole);

} // namespace pcc

#endif // PCC_DIALECT_PCC_IR_FACTORRULE_H
