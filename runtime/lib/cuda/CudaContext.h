//===- CudaContext.h - the GPU a rank computes on ----------------*- C++ -*-===//
//
// Private to the CUDA runtime: the rank's compute stream and cuBLAS handle,
// checked calls (a failed call is one "error:" line naming the call, then
// the job ends), device copies of generated code's constant tables, and the
// flag kernels raise on bad data (read after each run).
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_LIB_CUDA_CUDACONTEXT_H
#define PCCRT_LIB_CUDA_CUDACONTEXT_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace pccrt::cuda {

/// Every kernel, copy, GEMM and NCCL collective of the rank runs here, in
/// order.
cudaStream_t stream();
cublasHandle_t blas();
/// cuBLASLt (GEMMs with epilogues) and its workspace, made once so that no
/// GEMM allocates while a graph is recorded.
cublasLtHandle_t blasLt();
void *blasLtWorkspace();
size_t blasLtWorkspaceBytes();

/// Ends the job after "error: [rank R: ]CALL failed: WHAT".
[[noreturn]] void fail(const char *call, const char *what);
const char *blasStatusName(cublasStatus_t s);

#define PCC_CUDA(call)                                                         \
  do {                                                                         \
    cudaError_t pccStatus_ = (call);                                           \
    if (pccStatus_ != cudaSuccess)                                             \
      ::pccrt::cuda::fail(#call, cudaGetErrorString(pccStatus_));              \
  } while (0)
#define PCC_CUBLAS(call)                                                       \
  do {                                                                         \
    cublasStatus_t pccStatus_ = (call);                                        \
    if (pccStatus_ != CUBLAS_STATUS_SUCCESS)                                   \
      ::pccrt::cuda::fail(#call, ::pccrt::cuda::blasStatusName(pccStatus_));   \
  } while (0)
/// After a kernel launch: a bad configuration fails at the launch.
#define PCC_LAUNCHED() PCC_CUDA(cudaGetLastError())

/// A device copy of `bytes` of host memory that never changes (a static
/// table of generated code), made on first use and kept.
const void *deviceTable(const void *host, size_t bytes);

/// What kernels report about bad data: the first bad gather index, read
/// and cleared by synchronizeDevice(). Device memory.
/// The first bad index a kernel met: `bad` is which kernel's (0 none).
struct DeviceErrors {
  enum : int { kNone, kGather, kScatterND };
  int bad;
  long long index, axis;
};
DeviceErrors *deviceErrors();

/// Grid size for a grid-stride loop over `n` items.
inline unsigned gridFor(int64_t n, int threads = 256) {
  int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks);
}

} // namespace pccrt::cuda

#endif // PCCRT_LIB_CUDA_CUDACONTEXT_H
