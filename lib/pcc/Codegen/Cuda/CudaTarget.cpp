//===- CudaTarget.cpp - the CUDA back end ---------------------------------===//
//
// The emitter is the CPU target's (SourceKind::Cuda); what is the GPU's own
// is the runtime it links (libpccrt_cuda.a: cuBLAS, kernels, NCCL) and nvcc,
// which builds a fat binary for the architectures asked (sm_80 and sm_90
// unless --cuda-arch says otherwise).
//
//===----------------------------------------------------------------------===//

#include "pcc/Codegen/Cuda/CudaTarget.h"

#include "../Cpu/Toolchain.h"

#include "pcc/Codegen/Compile.h"
#include "pcc/Codegen/Cpu/CpuTarget.h"
#include "pcc/Config.h"
#include "pcc/Partition/Strategy.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace pcc {
namespace {

class CudaTarget final : public Target {
public:
  StringRef name() const override { return "cuda"; }

  std::optional<std::string> cannotRun(const ParallelPlan &plan) const override {
    // As on CPU ranks, training steps included: the runtime's GPU part
    // keeps weights, optimizer states, pipeline stashes and microbatch sums
    // in device memory.
    return whyPlanCannotBeApplied(plan);
  }

  FailureOr<EmittedModel> emit(ModuleOp module,
                               const EmitOptions &options) const override {
    return emitCuda(module, options);
  }

  LogicalResult build(Location loc, const StagedDirectory &staged,
                      ArrayRef<EmittedSource> sources,
                      const CompileOptions &options) const override {
    if (!cudaTargetAvailable())
      return emitError(loc) << "this pcc was built without the CUDA target "
                               "(no nvcc when it was configured)";
    cpu::Toolchain tc;
    tc.language = "CUDA";
    tc.compiler = PCC_NVCC;
    tc.compileFlags = {"-std=c++17", "-O3", "-w",
                       std::string("-I") + PCC_RUNTIME_INCLUDE_DIR,
                       std::string("-I") + PCC_CUDA_INCLUDE_DIR};
    for (StringRef arch : llvm::split(StringRef(options.cudaArch), ',')) {
      arch = arch.trim();
      tc.compileFlags.push_back(("-gencode=arch=compute_" + arch + ",code=sm_" +
                                 arch)
                                    .str());
    }
    tc.linkInputs.push_back(PCC_CUDA_RUNTIME_LIBRARY);
    for (StringRef flag : llvm::split(StringRef(PCC_CUDA_LINK_FLAGS), ' '))
      if (!flag.empty())
        tc.linkInputs.push_back(flag.str());
    return cpu::buildWith(tc, loc, staged, sources, options);
  }
};

} // namespace

bool cudaTargetAvailable() { return PCC_HAVE_CUDA; }

const Target &cudaTarget() {
  static const CudaTarget target;
  return target;
}

} // namespace pcc
