//===- Device.cpp - CPU ranks compute in host memory ----------------------===//
//
// And communicate over MPI, on the host buffers they compute in.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Device.h"

#include "../mpi/MpiCommunicator.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace pccrt {

void prepareProcess(char **argv) {
  // Debian's OpenBLAS 0.3.21 does not know CPUs newer than it (Sapphire
  // Rapids) and falls back to its SSE3 kernels, 2.5x slower GEMMs there:
  // run again with the newest kernels it has that the CPU runs.
  if (std::getenv("OPENBLAS_CORETYPE") ||
      std::strcmp(openblas_get_corename(), "Prescott") != 0)
    return;
  const char *core = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                     : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                       : nullptr;
  if (!core)
    return;
  setenv("OPENBLAS_CORETYPE", core, 1);
  execv("/proc/self/exe", argv);
  // Running on with the old kernels is still right.
}

std::string startDevice(CommKind comm) {
  if (comm == CommKind::Nccl)
    return "--comm nccl needs GPU ranks; CPU ranks communicate over MPI";
  return "";
}

std::string deviceName() { return "cpu"; }

bool deviceIsHost() { return true; }

void runStep(void (*step)(void *), void *context, bool) { step(context); }

void *allocateDeviceBytes(size_t bytes) {
  return std::aligned_alloc(256, (bytes + 255) / 256 * 256 + (bytes ? 0 : 256));
}

void freeDeviceBytes(void *p) { std::free(p); }

void copyBytes(void *dst, const void *src, int64_t bytes) {
  if (dst != src && bytes > 0)
    std::memcpy(dst, src, bytes);
}

void copyRows(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
              int64_t rowBytes, int64_t rows) {
  char *d = static_cast<char *>(dst);
  const char *s = static_cast<const char *>(src);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(d + r * dstPitch, s + r * srcPitch, rowBytes);
}

void copyToDevice(void *dst, const void *src, int64_t bytes) {
  copyBytes(dst, src, bytes);
}

void copyToHost(void *dst, const void *src, int64_t bytes) {
  copyBytes(dst, src, bytes);
}

void synchronizeDevice() {}

std::unique_ptr<Communicator> makeGroupCommunicator(int64_t color,
                                                    int64_t index,
                                                    int64_t size) {
  return makeMpiGroupCommunicator(color, index, size);
}

} // namespace pccrt
