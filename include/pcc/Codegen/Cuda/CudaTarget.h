//===- CudaTarget.h - the CUDA back end -------------------------*- C++ -*-===//
//
// CUDA C++ over the pccrt runtime's GPU part: the CPU target's program
// (same schedule, arena, weights file and runtime API), with fused pointwise
// chains as generated kernels, GEMMs on cuBLAS, collectives on NCCL (or
// staged through host memory over MPI); built by nvcc as a fat binary.
// Runs every plan the CPU target runs.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_CODEGEN_CUDA_CUDATARGET_H
#define PCC_CODEGEN_CUDA_CUDATARGET_H

#include "pcc/Codegen/Target.h"

namespace pcc {

const Target &cudaTarget();

/// Whether this pcc was built with the CUDA target (nvcc at configure time).
bool cudaTargetAvailable();

} // namespace pcc

#endif // PCC_CODEGEN_CUDA_CUDATARGET_H
