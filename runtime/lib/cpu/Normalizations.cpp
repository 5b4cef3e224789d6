//===- Normalizations.cpp - softmax, layer and batch norm -------------------===//
//
// Instantiated for the floating-point element types generated code uses.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Kernels.h"

#include "ElementTypes.h"
#include "ExpSum.h"
#include "pccrt/Status.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace pccrt {

/// Softmax (or, with `log`, log-softmax as x - max - log(sum)) along the
/// middle axis of (outer, n, inner).
template <typename T>
void softmax(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,
             bool log) {
  // Contiguous f32 rows (the last axis): exponentials vectorised.
  if constexpr (std::is_same_v<T, float>) {
    if (inner == 1) {
      for (int64_t o = 0; o < outer; ++o) {
        const float *xp = x + o * n;
        float *yp = y + o * n;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t k = 0; k < n; ++k)
          mx = std::max(mx, xp[k]);
        float sum = expShiftedSum(xp, yp, n, mx);
        if (log) {
          float shift = mx + std::log(sum);
          for (int64_t k = 0; k < n; ++k)
            yp[k] = xp[k] - shift;
          continue;
        }
        float inv = 1.0f / sum;
        for (int64_t k = 0; k < n; ++k)
          yp[k] *= inv;
      }
      return;
    }
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T *xp = x + o * n * inner + i;
      T *yp = y + o * n * inner + i;
      T mx = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < n; ++k)
        mx = std::max(mx, xp[k * inner]);
      T sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        T e = std::exp(xp[k * inner] - mx);
        yp[k * inner] = e;
        sum += e;
      }
      if (log) {
        T shift = mx + std::log(sum);
        for (int64_t k = 0; k < n; ++k)
          yp[k * inner] = xp[k * inner] - shift;
        continue;
      }
      T inv = T(1) / sum;
      for (int64_t k = 0; k < n; ++k)
        yp[k * inner] *= inv;
    }
  }
}

/// Normalizes each row of n elements; scale/bias have n elements, or 1
/// (broadcast), or are null (bias only).
template <typename T>
void layerNorm(const T *x, const T *scale, int64_t scaleN, const T *bias,
               int64_t biasN, T *y, int64_t outer, int64_t n, float eps) {
  for (int64_t o = 0; o < outer; ++o) {
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
    T inv = T(1.0 / std::sqrt(var + eps));
    T m = T(mean);
    for (int64_t k = 0; k < n; ++k) {
      T v = (xp[k] - m) * inv * scale[scaleN == 1 ? 0 : k];
      yp[k] = bias ? v + bias[biasN == 1 ? 0 : k] : v;
    }
  }
}

template <typename T>
void batchNorm(const T *x, const T *scale, const T *bias, const T *mean,
               const T *var, T *y, int64_t n, int64_t c, int64_t spatial,
               float eps) {
  for (int64_t ch = 0; ch < c; ++ch) {
    T a = scale[ch] / std::sqrt(var[ch] + T(eps));
    T b = bias[ch] - mean[ch] * a;
    for (int64_t i = 0; i < n; ++i) {
      const T *xp = x + (i * c + ch) * spatial;
      T *yp = y + (i * c + ch) * spatial;
      for (int64_t s = 0; s < spatial; ++s)
        yp[s] = xp[s] * a + b;
    }
  }
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
