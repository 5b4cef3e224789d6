//===- Kernels.h - CPU kernels called by generated code ----------*- C++ -*-===//
//
// GEMM-shaped work goes to BLAS (Kernels.cpp); data movement, reductions and
// normalizations are templates here so that generated code instantiates them
// for its element types. Elementwise chains are not here: the code generator
// fuses them into loops of its own. Shapes are passed in the canonical
// (outer, n, inner) form the emitter computes at compile time.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_KERNELS_H
#define PCCRT_KERNELS_H

#include "pccrt/Status.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

namespace pccrt {

//===----------------------------------------------------------------------===//
// BLAS-backed (Kernels.cpp)
//===----------------------------------------------------------------------===//

/// C = alpha op(A) op(B) + beta C, row-major, leading dimensions given.
void gemmF32(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
             float alpha, const float *a, int64_t lda, const float *b,
             int64_t ldb, float beta, float *c, int64_t ldc);

/// `batch` independent products C[i] = A[offA[i]] B[offB[i]] (m x k times
/// k x n), C contiguous per batch. Offsets are in elements.
void batchedMatmulF32(int64_t batch, const int64_t *offA, const int64_t *offB,
                      int64_t m, int64_t n, int64_t k, const float *a,
                      const float *b, float *c);

/// 2-D grouped convolution (NCHW, filter OIHW) by im2col + GEMM. `scratch`
/// holds (C/group)*kh*kw*oh*ow floats.
void conv2dF32(const float *x, const float *w, const float *bias, float *y,
               int64_t n, int64_t c, int64_t h, int64_t wd, int64_t oc,
               int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
               int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
               int64_t group, float *scratch);

/// Sets the BLAS thread count (0 = library default).
void setBlasThreads(int threads);

//===----------------------------------------------------------------------===//
// Pooling (NCHW, 2-D; 1-D pools use h = 1)
//===----------------------------------------------------------------------===//

inline void pool2dF32(bool isMax, const float *x, float *y, int64_t nc,
                      int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh,
                      int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                      int64_t pw, int64_t dh, int64_t dw,
                      bool countIncludePad, int64_t padEndH, int64_t padEndW) {
  for (int64_t p = 0; p < nc; ++p) {
    const float *xp = x + p * h * w;
    float *yp = y + p * oh * ow;
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        float acc = isMax ? -std::numeric_limits<float>::infinity() : 0.0f;
        int64_t count = 0;
        for (int64_t a = 0; a < kh; ++a) {
          int64_t r = i * sh - ph + a * dh;
          for (int64_t b = 0; b < kw; ++b) {
            int64_t col = j * sw - pw + b * dw;
            bool inside = r >= 0 && r < h && col >= 0 && col < w;
            if (!inside) {
              // Padding cells count toward the average only within the
              // explicit pads, never beyond them (ceil_mode overhang).
              if (!isMax && countIncludePad && r < h + padEndH &&
                  col < w + padEndW)
                ++count;
              continue;
            }
            float v = xp[r * w + col];
            if (isMax)
              acc = std::max(acc, v);
            else
              acc += v;
            ++count;
          }
        }
        yp[i * ow + j] = isMax ? acc : (count ? acc / count : 0.0f);
      }
    }
  }
}

inline void globalAvgPoolF32(const float *x, float *y, int64_t nc,
                             int64_t spatial) {
  for (int64_t p = 0; p < nc; ++p) {
    double s = 0;
    for (int64_t i = 0; i < spatial; ++i)
      s += x[p * spatial + i];
    y[p] = static_cast<float>(s / spatial);
  }
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

/// Softmax (or, with `log`, log-softmax as x - max - log(sum)) along the
/// middle axis of (outer, n, inner).
template <typename T>
void softmax(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,
             bool log = false) {
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

//===----------------------------------------------------------------------===//
// Reductions over one contiguous block of axes: (outer, n, inner) -> (outer,
// inner). Non-contiguous axis sets are reduced one block at a time.
//===----------------------------------------------------------------------===//

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

template <typename T>
void reduce(ReduceKind kind, const T *x, T *y, int64_t outer, int64_t n,
            int64_t inner) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T *xp = x + o * n * inner + i;
      Acc acc;
      switch (kind) {
      case ReduceKind::Max:
        acc = n ? Acc(xp[0]) : Acc(std::numeric_limits<T>::lowest());
        for (int64_t k = 1; k < n; ++k)
          acc = std::max<Acc>(acc, xp[k * inner]);
        break;
      case ReduceKind::Min:
        acc = n ? Acc(xp[0]) : Acc(std::numeric_limits<T>::max());
        for (int64_t k = 1; k < n; ++k)
          acc = std::min<Acc>(acc, xp[k * inner]);
        break;
      case ReduceKind::Prod:
        acc = 1;
        for (int64_t k = 0; k < n; ++k)
          acc *= xp[k * inner];
        break;
      default:
        acc = 0;
        for (int64_t k = 0; k < n; ++k)
          acc += xp[k * inner];
        if (kind == ReduceKind::Mean && n)
          acc /= n;
        break;
      }
      y[o * inner + i] = T(acc);
    }
  }
}

template <typename T>
void argReduce(bool isMax, const T *x, int64_t *y, int64_t outer, int64_t n,
               int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T *xp = x + o * n * inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < n; ++k)
        if (isMax ? xp[k * inner] > xp[best * inner]
                  : xp[k * inner] < xp[best * inner])
          best = k;
      y[o * inner + i] = best;
    }
  }
}

//===----------------------------------------------------------------------===//
// Data movement, by element size
//===----------------------------------------------------------------------===//

/// out[o, j, i] = in[o, idx[j] - offset, i] with negative indices wrapped by
/// globalDim. The table holds entries [offset, offset + axisDim) of an axis
/// of globalDim entries (all of it unless it is one device's block of a
/// vocabulary-parallel embedding); indices outside the block give zeros, so
/// summing over the devices yields the whole gather. Returns false (and
/// records an error) on an index outside the global axis.
template <typename Index>
bool gather(size_t elem, const char *in, const Index *idx, char *out,
            int64_t outer, int64_t axisDim, int64_t numIdx, int64_t inner,
            int64_t offset = 0, int64_t globalDim = -1) {
  if (globalDim < 0)
    globalDim = axisDim;
  size_t row = inner * elem;
  for (int64_t j = 0; j < numIdx; ++j) {
    int64_t k = static_cast<int64_t>(idx[j]);
    if (k < -globalDim || k >= globalDim) {
      kernelError("gather index " + std::to_string(idx[j]) +
                  " out of range for an axis of size " +
                  std::to_string(globalDim));
      return false;
    }
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < numIdx; ++j) {
      int64_t k = static_cast<int64_t>(idx[j]);
      k = (k < 0 ? k + globalDim : k) - offset;
      char *dst = out + (o * numIdx + j) * row;
      if (k >= 0 && k < axisDim)
        std::memcpy(dst, in + (o * axisDim + k) * row, row);
      else
        std::memset(dst, 0, row);
    }
  return true;
}

/// General strided copy over the output index space `shape`:
/// out[c] = in[base + sum(c_d * inStride_d)] (strides in elements, may be
/// negative). Serves slice (strides scaled by steps) and transpose (permuted
/// strides).
void stridedCopy(size_t elem, const char *in, char *out, int rank,
                 const int64_t *shape, int64_t base, const int64_t *inStride);

/// Copies between a whole tensor (outer, sum(sizes), inner) and its parts
/// (outer, sizes[p], inner) along one axis: into the whole if `join`
/// (concat), out of it otherwise (split).
inline void copyParts(bool join, size_t elem, char *whole, int numParts,
                      char *const *parts, const int64_t *sizes,
                      int64_t outer, int64_t inner) {
  int64_t total = 0;
  for (int p = 0; p < numParts; ++p)
    total += sizes[p];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t at = 0;
    for (int p = 0; p < numParts; ++p) {
      size_t bytes = sizes[p] * inner * elem;
      char *w = whole + (o * total + at) * inner * elem;
      char *part = parts[p] + o * bytes;
      join ? std::memcpy(w, part, bytes) : std::memcpy(part, w, bytes);
      at += sizes[p];
    }
  }
}

inline void concat(size_t elem, int numParts, const char *const *parts,
                   const int64_t *sizes, char *out, int64_t outer,
                   int64_t inner) {
  copyParts(true, elem, out, numParts, const_cast<char *const *>(parts), sizes,
            outer, inner);
}

inline void split(size_t elem, const char *in, int numParts, char *const *parts,
                  const int64_t *sizes, int64_t outer, int64_t inner) {
  copyParts(false, elem, const_cast<char *>(in), numParts, parts, sizes, outer,
            inner);
}

template <typename T>
void trilu(const T *x, T *y, int64_t batch, int64_t rows, int64_t cols,
           bool upper, int64_t k) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        int64_t i = (b * rows + r) * cols + c;
        bool keep = upper ? c - r >= k : c - r <= k;
        y[i] = keep ? x[i] : T(0);
      }
}

} // namespace pccrt

#endif // PCCRT_KERNELS_H
