//===- Normalizations.cu - softmax, layer norm, batch norm ----------------===//
//
// One thread per row (softmax: per (outer, inner) line; layer norm: per
// row), statistics in double as on the CPU: simple and exact to the CPU
// kernels' arithmetic order, not yet the one-pass warp kernels.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "../cpu/ElementTypes.h"
#include "pccrt/Kernels.h"

namespace pccrt {
namespace {

using namespace cuda;

__device__ float expOf(float x) { return expf(x); }
__device__ double expOf(double x) { return exp(x); }
__device__ float logOf(float x) { return logf(x); }
__device__ double logOf(double x) { return log(x); }

template <typename T>
__global__ void softmaxLines(const T *x, T *y, int64_t outer, int64_t n,
                             int64_t inner, bool log) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       t < outer * inner; t += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = t / inner, i = t % inner;
    const T *xp = x + o * n * inner + i;
    T *yp = y + o * n * inner + i;
    T mx = -INFINITY;
    for (int64_t k = 0; k < n; ++k)
      mx = xp[k * inner] > mx ? xp[k * inner] : mx;
    T sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      T e = expOf(T(xp[k * inner] - mx));
      yp[k * inner] = e;
      sum += e;
    }
    if (log) {
      T shift = mx + logOf(sum);
      for (int64_t k = 0; k < n; ++k)
        yp[k * inner] = xp[k * inner] - shift;
      continue;
    }
    T inv = T(1) / sum;
    for (int64_t k = 0; k < n; ++k)
      yp[k * inner] *= inv;
  }
}

template <typename T>
__global__ void layerNormRows(const T *x, const T *scale, int64_t scaleN,
                              const T *bias, int64_t biasN, T *y,
                              int64_t outer, int64_t n, float eps) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outer;
       o += int64_t(gridDim.x) * blockDim.x) {
    const T *xp = x + o * n;
    T *yp = y + o * n;
    double mean = 0;
    for (int64_t k = 0; k < n; ++k)
      mean += xp[k];
    mean /= n;
    double var = 0;
    for (int64_t k = 0; k < n; ++k) {
      double d = xp[k] - mean;
      var += d * d;
    }
    var /= n;
    T inv = T(1.0 / sqrt(var + eps));
    T m = T(mean);
    for (int64_t k = 0; k < n; ++k) {
      T v = (xp[k] - m) * inv * scale[scaleN == 1 ? 0 : k];
      yp[k] = bias ? v + bias[biasN == 1 ? 0 : k] : v;
    }
  }
}

template <typename T>
__global__ void batchNormElements(const T *x, const T *scale, const T *bias,
                                  const T *mean, const T *var, T *y, int64_t n,
                                  int64_t c, int64_t spatial, float eps) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       t < n * c * spatial; t += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = (t / spatial) % c;
    T a = scale[ch] / sqrt(var[ch] + T(eps));
    T b = bias[ch] - mean[ch] * a;
    y[t] = x[t] * a + b;
  }
}

} // namespace

template <typename T>
void softmax(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,
             bool log) {
  softmaxLines<<<gridFor(outer * inner, 128), 128, 0, stream()>>>(
      x, y, outer, n, inner, log);
  PCC_LAUNCHED();
}

template <typename T>
void layerNorm(const T *x, const T *scale, int64_t scaleN, const T *bias,
               int64_t biasN, T *y, int64_t outer, int64_t n, float eps) {
  layerNormRows<<<gridFor(outer, 128), 128, 0, stream()>>>(
      x, scale, scaleN, bias, biasN, y, outer, n, eps);
  PCC_LAUNCHED();
}

template <typename T>
void batchNorm(const T *x, const T *scale, const T *bias, const T *mean,
               const T *var, T *y, int64_t n, int64_t c, int64_t spatial,
               float eps) {
  batchNormElements<<<gridFor(n * c * spatial), 256, 0, stream()>>>(
      x, scale, bias, mean, var, y, n, c, spatial, eps);
  PCC_LAUNCHED();
}

#define INSTANTIATE(T)                                                         \
  template void softmax<T>(const T *, T *, int64_t, int64_t, int64_t, bool);   \
  template void layerNorm<T>(const T *, const T *, int64_t, const T *,         \
                             int64_t, T *, int64_t, int64_t, float);           \
  template void batchNorm<T>(const T *, const T *, const T *, const T *,       \
                             const T *, T *, int64_t, int64_t, int64_t, float);
PCCRT_FOR_EACH_FLOAT_TYPE(INSTANTIATE)
#undef INSTANTIATE

} // namespace pccrt
