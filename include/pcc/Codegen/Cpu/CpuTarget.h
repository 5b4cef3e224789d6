//===- CpuTarget.h - the CPU back end ---------------------------*- C++ -*-===//
//
// C++ over the pccrt runtime: loops for fused pointwise chains, BLAS for
// GEMMs and convolutions, MPI for collectives; built by the host C++
// compiler. Runs data parallel and 1d tensor parallel plans.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_CODEGEN_CPU_CPUTARGET_H
#define PCC_CODEGEN_CPU_CPUTARGET_H

#include "pcc/Codegen/Target.h"

namespace pcc {

const Target &cpuTarget();

/// The C++ the CPU target generates for `module` (Target::emit), for tools
/// and tests that look at the code without building it.
mlir::FailureOr<EmittedModel> emitCpp(mlir::ModuleOp module,
                                      const EmitOptions &options = {});
/// The CUDA C++ of the same program for GPU ranks (the CUDA target's
/// Target::emit): the CPU emitter with fused loops as kernels.
mlir::FailureOr<EmittedModel> emitCuda(mlir::ModuleOp module,
                                       const EmitOptions &options = {});

} // namespace pcc

#endif // PCC_CODEGEN_CPU_CPUTARGET_H
