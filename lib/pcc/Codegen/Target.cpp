//===- Target.cpp - what the CPU back end runs ----------------------------===//

#include "pcc/Codegen/Target.h"

#include "pcc/Partition/Strategy.h"

namespace pcc {

std::optional<std::string> cpuCannotRun(const ParallelPlan &plan) {
  // The emitter and runtime run every partitioned program; what partitioning
  // cannot apply yet is the limit, plus training, which nothing runs yet.
  if (auto why = whyPlanCannotBeApplied(plan))
    return why;
  if (plan.train)
    return std::string("training steps are priced by `pcc plan` but not "
                       "compiled (inference only)");
  return std::nullopt;
}

} // namespace pcc
