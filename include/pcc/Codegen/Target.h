//===- Target.h - what a back end is ----------------------------*- C++ -*-===//
//
// A back end (target) states once which plans it runs, turns a per-device
// module into source for its device, and builds that source into the model
// executable. Everything around it (the schedule, the weights file,
// plan.json, the staged output directory) is shared: see Compile.h.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_CODEGEN_TARGET_H
#define PCC_CODEGEN_TARGET_H

#include "pcc/Codegen/WeightsFile.h"
#include "pcc/Sharding/ParallelPlan.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace pcc {

class StagedDirectory;
struct CompileOptions;

/// One generated translation unit.
struct EmittedSource {
  std::string name, text;
};

/// What a target made of a per-device module.
struct EmittedModel {
  /// The units the target's build compiles; the first is the model's main
  /// unit (the build fingerprint is defined at its top).
  std::vector<EmittedSource> sources;
  WeightsTable weights;
  /// Scratch arena after liveness-based reuse, and what it would be without.
  int64_t arenaBytes = 0;
  int64_t unsharedBytes = 0;
  int fusedLoops = 0;
  int fusedOps = 0;
  int kernelCalls = 0;
  /// Collectives in one run, and the bytes each device sends into them.
  int allReduces = 0, allGathers = 0, reduceScatters = 0, allSlices = 0,
      allToAlls = 0;
  /// Of those, the ones a step runs once (a training step's prologue and
  /// update), not once per microbatch.
  int onceAllReduces = 0, onceAllGathers = 0, onceReduceScatters = 0,
      onceAllToAlls = 0;
  int64_t collectiveBytes = 0;
  /// Sends between pipeline stages in one run (one microbatch), over all
  /// stages, and their bytes.
  int sends = 0;
  int64_t sendBytes = 0;
  /// Shifts of key/value blocks around a ring in one run: n - 1 per ring
  /// attention over n devices.
  int ringShifts = 0;
  /// SUMMA's broadcasts in one run: 2q per product on a q x q grid.
  int broadcasts = 0;
  /// What a device of each pipeline stage holds (one entry without stages):
  /// the weights it reads, its arena, and per microbatch in flight the
  /// stash (what its backward reads of its forward, kept when a schedule
  /// runs the two apart).
  struct StageMemory {
    int64_t weightsBytes = 0, arenaBytes = 0, stashBytes = 0;
    /// A zero-bubble step's slot of what W reads (per microbatch whose W
    /// runs after later microbatches' passes).
    int64_t weightStashBytes = 0;
  };
  std::vector<StageMemory> stageMemory;
};

struct EmitOptions {
  /// Bytes one device holds; a tensor or a device's total beyond it is an
  /// error at the op (0: no limit).
  int64_t deviceMemoryBytes = 0;
  /// Generated source per translation unit before the code is split into
  /// several, which compile in parallel.
  size_t unitBytes = 256 << 10;
};

class Target {
public:
  virtual ~Target() = default;
  /// As --target names it.
  virtual llvm::StringRef name() const = 0;
  /// Why this back end (its partitioning, code generator and runtime) cannot
  /// run `plan`, or nothing when it can. The planner searches only plans a
  /// target runs when compiling, and pcc refuses forced plans by it.
  virtual std::optional<std::string>
  cannotRun(const ParallelPlan &plan) const = 0;
  /// Generates the program for the per-device module; unsupported ops or
  /// types and tensors beyond a device's memory are errors at the op. The
  /// source uses the macro PCC_BUILD_FINGERPRINT, which the build defines.
  virtual mlir::FailureOr<EmittedModel>
  emit(mlir::ModuleOp module, const EmitOptions &options) const = 0;
  /// Compiles and links the written `sources` into `staged`'s `model`.
  virtual mlir::LogicalResult build(mlir::Location loc,
                                    const StagedDirectory &staged,
                                    llvm::ArrayRef<EmittedSource> sources,
                                    const CompileOptions &options) const = 0;
};

} // namespace pcc

#endif // PCC_CODEGEN_TARGET_H
