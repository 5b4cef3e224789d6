//===- StageBalance.h - contiguous stages of least maximum cost -*- C++ -*-===//

#ifndef PCC_SUPPORT_STAGEBALANCE_H
#define PCC_SUPPORT_STAGEBALANCE_H

#include "llvm/ADT/ArrayRef.h"

#include <vector>

namespace pcc {

/// Splits `cost` (per unit, non-negative) into `parts` contiguous non-empty
/// runs (fewer when there are fewer units) minimising the largest run sum,
/// to a relative 1e-12; returns the first unit of each run, ascending from 0.
/// Where that optimum needs fewer runs than `parts`, of the ways tried to
/// make up the rest, the one whose busiest device is least loaded when run
/// s goes to device s % `devices` (interleaved 1F1B's chunks). With more
/// runs than devices, the cut is then evened out over the devices: units
/// moved across run boundaries while that lowers the busiest device's load,
/// no run growing past the largest.
std::vector<int> balanceStages(llvm::ArrayRef<double> cost, int parts,
                               int devices);
/// The cut before that last step.
std::vector<int> leastLargestStages(llvm::ArrayRef<double> cost, int parts,
                                    int devices);

} // namespace pcc

#endif // PCC_SUPPORT_STAGEBALANCE_H
