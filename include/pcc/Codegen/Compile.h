//===- Compile.h - build a model executable ---------------------*- C++ -*-===//

#ifndef PCC_CODEGEN_COMPILE_H
#define PCC_CODEGEN_COMPILE_H

#include "pcc/Codegen/Target.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace pcc {

/// What one CPU rank is assumed to hold unless --device-memory says
/// otherwise: 64 GiB.
inline constexpr int64_t kDefaultCpuDeviceMemory = int64_t(64) << 30;

struct CompileOptions {
  /// Directory to create (or replace, if it holds only an earlier pcc
  /// output: see pcc/Support/OutputFiles.h).
  std::string outputDir = "out";
  /// The model the module was imported from (named in plan.json; never
  /// inside the output directory).
  std::string modelPath;
  /// The bytes behind `pcc.weight "name"` (dense, little-endian, bools one
  /// byte each); false with `error` set when missing or unreadable. The back
  /// end knows no model format: the driver reads them through the importer
  /// (pcc/Import/WeightReader.h).
  ReadWeightFn readWeight;
  /// The back end; the driver's choice (the CPU one unless told).
  const Target *target = nullptr;
  int devices = 1;
  /// Extra flags for the C++ compiler (e.g. -march=native).
  std::string cxxFlags;
  /// GPU architectures the CUDA target builds for ("80,90": sm_80, sm_90).
  std::string cudaArch = "80,90";
  /// C++ compilers run at once for large models (0: one per core).
  unsigned jobs = 0;
  /// Generated source per translation unit (see EmitOptions).
  size_t unitBytes = EmitOptions().unitBytes;
  /// Memory of one device (a CPU rank): every tensor and each device's total
  /// must fit (0: no limit).
  int64_t deviceMemoryBytes = kDefaultCpuDeviceMemory;
};

struct CompileReport {
  int64_t arenaBytes = 0, unsharedBytes = 0, weightsBytes = 0;
  int fusedLoops = 0, fusedOps = 0, kernelCalls = 0;
  double codegenSeconds = 0, cxxSeconds = 0;
};

/// Generates the target's program, writes it, the weights file and
/// plan.json, and builds DIR/model with the target's toolchain. On failure
/// nothing is left in DIR.
mlir::LogicalResult compileToExecutable(mlir::ModuleOp module,
                                        const CompileOptions &options,
                                        CompileReport &report);

} // namespace pcc

#endif // PCC_CODEGEN_COMPILE_H
