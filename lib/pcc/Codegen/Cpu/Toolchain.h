//===- Toolchain.h - the C++ compiler that builds CPU models ----*- C++ -*-===//

#ifndef PCC_CODEGEN_CPU_TOOLCHAIN_H
#define PCC_CODEGEN_CPU_TOOLCHAIN_H

#include "pcc/Codegen/Target.h"

namespace pcc::cpu {

/// Compiles and links the generated units into the staged `model` against
/// the runtime: one compiler run for one unit; otherwise each unit to an
/// object in parallel, then a link.
mlir::LogicalResult buildExecutable(mlir::Location loc,
                                    const StagedDirectory &staged,
                                    llvm::ArrayRef<EmittedSource> sources,
                                    const CompileOptions &options);

} // namespace pcc::cpu

#endif // PCC_CODEGEN_CPU_TOOLCHAIN_H
