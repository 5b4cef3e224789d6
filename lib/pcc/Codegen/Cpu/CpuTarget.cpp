//===- CpuTarget.cpp - the CPU back end -----------------------------------===//

#include "pcc/Codegen/Cpu/CpuTarget.h"

#include "Toolchain.h"

#include "pcc/Partition/Strategy.h"

using namespace mlir;

namespace pcc {
namespace {

class CpuTarget final : public Target {
public:
  StringRef name() const override { return "cpu"; }

  std::optional<std::string> cannotRun(const ParallelPlan &plan) const override {
    // The emitter and runtime run every partitioned program, training
    // steps included: what partitioning cannot apply yet is the limit.
    return whyPlanCannotBeApplied(plan);
  }

  FailureOr<EmittedModel> emit(ModuleOp module,
                               const EmitOptions &options) const override {
    return emitCpp(module, options);
  }

  LogicalResult build(Location loc, const StagedDirectory &staged,
                      ArrayRef<EmittedSource> sources,
                      const CompileOptions &options) const override {
    return cpu::buildExecutable(loc, staged, sources, options);
  }
};

} // namespace

const Target &cpuTarget() {
  static const CpuTarget target;
  return target;
}

} // namespace pcc
