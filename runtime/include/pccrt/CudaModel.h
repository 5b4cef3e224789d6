//===- CudaModel.h - what generated CUDA code calls besides kernels -*- C++ -*-===//
//
// Generated CUDA code (pcc --target cuda) calls the kernels of Kernels.h on
// device pointers, launches its own fused elementwise kernels on the rank's
// stream, and reads weights through deviceWeight.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_CUDAMODEL_H
#define PCCRT_CUDAMODEL_H

#include "pccrt/Device.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace pccrt {

/// The rank's compute stream: every kernel, copy and collective runs on it.
cudaStream_t rankStream();
/// Ends the job with a one-line error when the launch of `kernel` failed.
void checkLaunch(const char *kernel);
/// The device copy of bytes [offset, offset + bytes) of the weights file
/// mapped at `weights`: uploaded at first use (a rank uploads only the
/// blocks it reads), then kept.
const char *deviceWeight(const char *weights, int64_t offset, int64_t bytes);

/// Blocks of 256 threads for a grid-stride loop over `n` items.
inline unsigned gridSize(int64_t n) {
  int64_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks);
}

#ifdef __CUDACC__
/// V consecutive elements, loaded and stored as one access (fused kernels
/// take V elements a thread where their operands allow).
template <typename T, int V> struct alignas(sizeof(T) * V) Pack { T v[V]; };
template <int V, typename T> __device__ inline Pack<T, V> loadPack(const T *p) {
  return *reinterpret_cast<const Pack<T, V> *>(p);
}
template <int V, typename T>
__device__ inline void storePack(T *p, const Pack<T, V> &x) {
  *reinterpret_cast<Pack<T, V> *>(p) = x;
}
/// Whether every pointer is aligned for Pack<T, V> accesses.
template <int V, typename... Ts>
__device__ inline bool packAligned(const Ts *...p) {
  return ((reinterpret_cast<uintptr_t>(p) % (sizeof(Ts) * V) == 0) && ...);
}
#endif

} // namespace pccrt

#endif // PCCRT_CUDAMODEL_H
