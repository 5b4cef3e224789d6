//===- StageBalance.h - contiguous stages of least maximum cost -*- C++ -*-===//

#ifndef PCC_SUPPORT_STAGEBALANCE_H
#define PCC_SUPPORT_STAGEBALANCE_H

#include "llvm/ADT/ArrayRef.h"

#include <vector>

namespace pcc {

/// Splits `cost` (per unit, non-negative) into `parts` contiguous non-empty
/// runs (fewer when there are fewer units) minimising the largest run sum,
/// to a relative 1e-12; returns the first unit of each run, ascending from 0.
std::vector<int> balanceStages(llvm::ArrayRef<double> cost, int parts);

} // namespace pcc

#endif // PCC_SUPPORT_STAGEBALANCE_H
