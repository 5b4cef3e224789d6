//===- Target.h - what a back end runs ---------------------------*- C++ -*-===//
//
// The one statement of which plans a back end runs. The planner marks
// candidates runnable by it (and searches only those when compiling), pcc
// refuses forced plans by it, and plan reports print it.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_CODEGEN_TARGET_H
#define PCC_CODEGEN_TARGET_H

#include "pcc/Sharding/ParallelPlan.h"

#include <optional>
#include <string>

namespace pcc {

/// Why the CPU back end (the partitioner, the C++ emitter and the MPI
/// runtime) cannot run `plan`, or nothing when it can.
std::optional<std::string> cpuCannotRun(const ParallelPlan &plan);

} // namespace pcc

#endif // PCC_CODEGEN_TARGET_H
