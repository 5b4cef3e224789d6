//===- Compile.h - build a model executable ---------------------*- C++ -*-===//

#ifndef PCC_CODEGEN_COMPILE_H
#define PCC_CODEGEN_COMPILE_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace pcc {

struct CompileOptions {
  /// Directory to create (or replace, if it holds an earlier pcc output).
  std::string outputDir = "out";
  /// The ONNX model the module was imported from (weights are read there).
  std::string modelPath;
  int devices = 1;
  /// The strategy the module was partitioned with (plan.json).
  int dp = 1, tp = 1;
  /// Extra flags for the C++ compiler (e.g. -march=native).
  std::string cxxFlags;
};

struct CompileReport {
  int64_t arenaBytes = 0, unsharedBytes = 0, weightsBytes = 0;
  int fusedLoops = 0, fusedOps = 0, kernelCalls = 0;
  double codegenSeconds = 0, cxxSeconds = 0;
};

/// Emits C++, writes the weights file and plan.json, and compiles and links
/// DIR/model against the runtime. On failure nothing is left in DIR.
mlir::LogicalResult compileToExecutable(mlir::ModuleOp module,
                                        const CompileOptions &options,
                                        CompileReport &report);

} // namespace pcc

#endif // PCC_CODEGEN_COMPILE_H
