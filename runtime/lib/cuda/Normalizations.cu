//===- Normalizations.cu - softmax, layer norm, batch norm ----------------===//
//
// Contiguous rows (layer norm; softmax over the last axis) take one warp
// each: coalesced loads, statistics combined by warp shuffles, in double
// for f32 layer norm as on the CPU, in f32 for 16-bit rows (layerNorm16).
// Softmax over an inner axis (rare: the last axis is the one models use)
// keeps one thread per (outer, inner) line.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "../cpu/ElementTypes.h"
#include "pccrt/Kernels.h"
#include "pccrt/SoftmaxStats.h"

namespace pccrt {
namespace {

using namespace cuda;

__device__ float expOf(float x) { return expf(x); }
__device__ double expOf(double x) { return exp(x); }
__device__ float logOf(float x) { return logf(x); }
__device__ double logOf(double x) { return log(x); }

constexpr int kWarpsPerBlock = 4;

template <typename A> __device__ A warpSum(A v) {
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename A> __device__ A warpMax(A v) {
  for (int o = 16; o > 0; o /= 2) {
    A w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

/// The warp's row, or -1 past the last one.
__device__ int64_t warpRow(int64_t rows) {
  int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  return row < rows ? row : -1;
}

unsigned warpBlocks(int64_t rows) {
  return unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

/// Softmax of contiguous rows of n, a warp per row.
template <typename T>
__global__ void softmaxRows(const T *x, T *y, int64_t rows, int64_t n,
                            bool log) {
  int64_t row = warpRow(rows);
  if (row < 0)
    return;
  int lane = threadIdx.x % 32;
  const T *xp = x + row * n;
  T *yp = y + row * n;
  T mx = -INFINITY;
  for (int64_t k = lane; k < n; k += 32)
    mx = xp[k] > mx ? xp[k] : mx;
  mx = warpMax(mx);
  T sum = 0;
  for (int64_t k = lane; k < n; k += 32)
    sum += expOf(T(xp[k] - mx));
  sum = warpSum(sum);
  if (log) {
    T shift = mx + logOf(sum);
    for (int64_t k = lane; k < n; k += 32)
      yp[k] = xp[k] - shift;
    return;
  }
  T inv = T(1) / sum;
  for (int64_t k = lane; k < n; k += 32)
    yp[k] = expOf(T(xp[k] - mx)) * inv;
}

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

/// A split softmax's local statistics: each line's (max, sum of
/// exp(x - max)) over this device's block, a warp per line.
template <typename T>
__global__ void softmaxBlockStats(const T *x, double *pairs, int64_t outer,
                                  int64_t n, int64_t inner) {
  int64_t l = warpRow(outer * inner);
  if (l < 0)
    return;
  int lane = threadIdx.x % 32;
  const T *xp = x + (l / inner) * n * inner + l % inner;
  T mx = -INFINITY;
  for (int64_t k = lane; k < n; k += 32)
    mx = xp[k * inner] > mx ? xp[k * inner] : mx;
  mx = warpMax(mx);
  double sum = 0;
  for (int64_t k = lane; k < n; k += 32)
    sum += expOf(T(xp[k * inner] - mx));
  sum = warpSum(sum);
  if (lane == 0) {
    pairs[2 * l] = mx;
    pairs[2 * l + 1] = sum;
  }
}

/// Each line's whole statistics from the group's gathered pairs, into
/// `shift` (max, and log(sum) + max or 1 / sum).
__global__ void softmaxMergeStats(const double *all, double *shift,
                                  int64_t lines, int64_t devices, bool log) {
  for (int64_t l = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; l < lines;
       l += int64_t(gridDim.x) * blockDim.x) {
    double mx, sum;
    mergeSoftmaxStats(all + 2 * l, devices, 2 * lines, mx, sum);
    shift[2 * l] = mx;
    shift[2 * l + 1] = log ? mx + ::log(sum) : 1.0 / sum;
  }
}

template <typename T>
__global__ void softmaxApplyStats(const T *x, T *y, const double *shift,
                                  int64_t outer, int64_t n, int64_t inner,
                                  bool log) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       t < outer * n * inner; t += int64_t(gridDim.x) * blockDim.x) {
    int64_t l = (t / (n * inner)) * inner + t % inner;
    y[t] = log ? T(x[t] - T(shift[2 * l + 1]))
               : T(expOf(T(x[t] - T(shift[2 * l]))) * T(shift[2 * l + 1]));
  }
}

template <typename T>
__global__ void layerNormRows(const T *x, const T *scale, int64_t scaleN,
                              const T *bias, int64_t biasN, T *y,
                              int64_t outer, int64_t n, float eps) {
  int64_t o = warpRow(outer);
  if (o < 0)
    return;
  int lane = threadIdx.x % 32;
  const T *xp = x + o * n;
  T *yp = y + o * n;
  double mean = 0;
  for (int64_t k = lane; k < n; k += 32)
    mean += xp[k];
  mean = warpSum(mean) / n;
  double var = 0;
  for (int64_t k = lane; k < n; k += 32) {
    double d = xp[k] - mean;
    var += d * d;
  }
  var = warpSum(var) / n;
  T inv = T(1.0 / sqrt(var + eps));
  T m = T(mean);
  for (int64_t k = lane; k < n; k += 32) {
    T v = (xp[k] - m) * inv * scale[scaleN == 1 ? 0 : k];
    yp[k] = bias ? v + bias[biasN == 1 ? 0 : k] : v;
  }
}

/// Eight 16-bit values from 16 bytes, as float.
template <typename T> __device__ void widen8(const T *p, float (&v)[8]) {
  uint4 raw = *reinterpret_cast<const uint4 *>(p);
  const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i)
    v[i] = float(e[i]);
}

/// layerNormRows for 16-bit rows: f32 statistics (two passes: the mean,
/// then the squared deviations, each re-read from L1), f32 arithmetic and
/// one rounding of each result, as torch autocast's layer norm. With
/// `vector`, rows are read and written 8 elements (16 bytes) at a time.
template <typename T>
__global__ void layerNormRows16(const T *x, const T *scale, int64_t scaleN,
                                const T *bias, int64_t biasN, T *y,
                                int64_t outer, int64_t n, float eps,
                                bool vector) {
  int64_t o = warpRow(outer);
  if (o < 0)
    return;
  int lane = threadIdx.x % 32;
  const T *xp = x + o * n;
  T *yp = y + o * n;
  float sum = 0;
  if (vector) {
    for (int64_t k = 8 * lane; k < n; k += 8 * 32) {
      float v[8];
      widen8(xp + k, v);
#pragma unroll
      for (int i = 0; i < 8; ++i)
        sum += v[i];
    }
  } else {
    for (int64_t k = lane; k < n; k += 32)
      sum += float(xp[k]);
  }
  float mean = warpSum(sum) / float(n), var = 0;
  if (vector) {
    for (int64_t k = 8 * lane; k < n; k += 8 * 32) {
      float v[8];
      widen8(xp + k, v);
#pragma unroll
      for (int i = 0; i < 8; ++i)
        var += (v[i] - mean) * (v[i] - mean);
    }
  } else {
    for (int64_t k = lane; k < n; k += 32) {
      float d = float(xp[k]) - mean;
      var += d * d;
    }
  }
  float inv = rsqrtf(warpSum(var) / float(n) + eps);
  if (!vector) {
    for (int64_t k = lane; k < n; k += 32) {
      float v = (float(xp[k]) - mean) * inv * float(scale[scaleN == 1 ? 0 : k]);
      yp[k] = T(bias ? v + float(bias[biasN == 1 ? 0 : k]) : v);
    }
    return;
  }
  for (int64_t k = 8 * lane; k < n; k += 8 * 32) {
    float v[8], g[8], b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    widen8(xp + k, v);
    widen8(scale + k, g);
    if (bias)
      widen8(bias + k, b);
    uint4 packed;
    T *out = reinterpret_cast<T *>(&packed);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      out[i] = T((v[i] - mean) * inv * g[i] + b[i]);
    *reinterpret_cast<uint4 *>(yp + k) = packed;
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
  if (outer * n * inner == 0)
    return;
  if (inner == 1) {
    softmaxRows<<<warpBlocks(outer), 32 * kWarpsPerBlock, 0, stream()>>>(
        x, y, outer, n, log);
    PCC_LAUNCHED();
    return;
  }
  softmaxLines<<<gridFor(outer * inner, 128), 128, 0, stream()>>>(
      x, y, outer, n, inner, log);
  PCC_LAUNCHED();
}

template <typename T>
void softmaxSplit(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,
                  bool log, Mesh &mesh, int g, double *scratch) {
  int64_t lines = outer * inner;
  double *mine = scratch, *all = scratch + 2 * lines;
  if (lines > 0) {
    softmaxBlockStats<<<warpBlocks(lines), 32 * kWarpsPerBlock, 0, stream()>>>(
        x, mine, outer, n, inner);
    PCC_LAUNCHED();
  }
  allGather(mesh, g, mine, all, 1, 2 * lines * int64_t(sizeof(double)));
  if (lines == 0)
    return;
  softmaxMergeStats<<<gridFor(lines, 128), 128, 0, stream()>>>(
      all, mine, lines, groupSize(mesh, g), log);
  PCC_LAUNCHED();
  softmaxApplyStats<<<gridFor(lines * n, 256), 256, 0, stream()>>>(
      x, y, mine, outer, n, inner, log);
  PCC_LAUNCHED();
}
template void softmaxSplit<float>(const float *, float *, int64_t, int64_t,
                                  int64_t, bool, Mesh &, int, double *);
template void softmaxSplit<double>(const double *, double *, int64_t, int64_t,
                                   int64_t, bool, Mesh &, int, double *);

template <typename T>
void layerNorm(const T *x, const T *scale, int64_t scaleN, const T *bias,
               int64_t biasN, T *y, int64_t outer, int64_t n, float eps) {
  if (outer * n == 0)
    return;
  layerNormRows<<<warpBlocks(outer), 32 * kWarpsPerBlock, 0, stream()>>>(
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

template <typename T>
void layerNorm16(const T *x, const T *scale, int64_t scaleN, const T *bias,
                 int64_t biasN, T *y, int64_t outer, int64_t n, float eps) {
  if (outer * n == 0)
    return;
  auto at16 = [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
  };
  // Every row starts 16-byte aligned, and the affine parameters are whole.
  bool vector = n % 8 == 0 && at16(x) && at16(y) && scaleN == n &&
                at16(scale) && (!bias || (biasN == n && at16(bias)));
  layerNormRows16<<<warpBlocks(outer), 32 * kWarpsPerBlock, 0, stream()>>>(
      x, scale, scaleN, bias, biasN, y, outer, n, eps, vector);
  PCC_LAUNCHED();
}
template void layerNorm16<Half>(const Half *, const Half *, int64_t,
                                const Half *, int64_t, Half *, int64_t,
                                int64_t, float);
template void layerNorm16<BFloat16>(const BFloat16 *, const BFloat16 *,
                                    int64_t, const BFloat16 *, int64_t,
                                    BFloat16 *, int64_t, int64_t, float);

#define INSTANTIATE(T)                                                         \
  template void softmax<T>(const T *, T *, int64_t, int64_t, int64_t, bool);   \
  template void layerNorm<T>(const T *, const T *, int64_t, const T *,         \
                             int64_t, T *, int64_t, int64_t, float);           \
  template void batchNorm<T>(const T *, const T *, const T *, const T *,       \
                             const T *, T *, int64_t, int64_t, int64_t, float);
PCCRT_FOR_EACH_FLOAT_TYPE(INSTANTIATE)
#undef INSTANTIATE

} // namespace pccrt
