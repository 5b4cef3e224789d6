//===- Device.cpp - CPU ranks compute in host memory ----------------------===//
//
// And communicate over MPI, on the host buffers they compute in.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Device.h"

#include "pccrt/BlasCore.h"
#include "pccrt/Float16.h"

#include "../mpi/MpiCommunicator.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>

namespace pccrt {

void prepareProcess(char **argv) {
  rerunWithBetterBlas(argv, openblas_get_corename());
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

namespace {

template <typename T> void add(void *acc, const void *in, int64_t count) {
  T *a = static_cast<T *>(acc);
  const T *x = static_cast<const T *>(in);
  for (int64_t i = 0; i < count; ++i)
    a[i] = T(float(a[i]) + float(x[i]));
}

} // namespace

bool addInto(DType type, void *acc, const void *in, int64_t count) {
  float *a = static_cast<float *>(acc);
  const float *x = static_cast<const float *>(in);
  switch (type) {
  case DType::F32:
    for (int64_t i = 0; i < count; ++i)
      a[i] += x[i];
    return true;
  case DType::F64: {
    double *ad = static_cast<double *>(acc);
    const double *xd = static_cast<const double *>(in);
    for (int64_t i = 0; i < count; ++i)
      ad[i] += xd[i];
    return true;
  }
  case DType::BF16:
    add<BFloat16>(acc, in, count);
    return true;
  case DType::F16:
    add<Half>(acc, in, count);
    return true;
  default:
    return false;
  }
}

void fetchWeights(char *) {}

std::unique_ptr<Communicator> makeGroupCommunicator(int64_t color,
                                                    int64_t index,
                                                    int64_t size) {
  return makeMpiGroupCommunicator(color, index, size);
}

} // namespace pccrt
