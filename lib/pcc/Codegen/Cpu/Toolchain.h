//===- Toolchain.h - the C++ compiler that builds CPU models ----*- C++ -*-===//

#ifndef PCC_CODEGEN_CPU_TOOLCHAIN_H
#define PCC_CODEGEN_CPU_TOOLCHAIN_H

#include "pcc/Codegen/Target.h"

namespace pcc::cpu {

/// A compiler that builds model executables: the CPU target's C++ compiler
/// or the CUDA target's nvcc.
struct Toolchain {
  /// "C++" or "CUDA", for messages.
  std::string language;
  std::string compiler;
  /// Flags of every compilation, before the sources.
  llvm::SmallVector<std::string> compileFlags;
  /// The runtime archive and libraries, after the objects.
  llvm::SmallVector<std::string> linkInputs;
};

/// Compiles and links the generated units into the staged `model` with
/// `toolchain`: one compiler run for one unit; otherwise each unit to an
/// object in parallel, then a link.
mlir::LogicalResult buildWith(const Toolchain &toolchain, mlir::Location loc,
                              const StagedDirectory &staged,
                              llvm::ArrayRef<EmittedSource> sources,
                              const CompileOptions &options);

/// Compiles and links the generated units into the staged `model` against
/// the runtime: one compiler run for one unit; otherwise each unit to an
/// object in parallel, then a link.
mlir::LogicalResult buildExecutable(mlir::Location loc,
                                    const StagedDirectory &staged,
                                    llvm::ArrayRef<EmittedSource> sources,
                                    const CompileOptions &options);

} // namespace pcc::cpu

#endif // PCC_CODEGEN_CPU_TOOLCHAIN_H
