//===- GridKernels.cpp - normalizations over a split axis -----------------===//
//
// Colossal-AI's 2D / 2.5D layer norms, one device's part: a layer norm
// whose hidden dimension is split all-reduces each row's sum, then its
// squared deviations. A softmax over a split axis (a vocabulary-parallel
// head's log-softmax) gathers each line's max and sum of exponentials.
// (SUMMA, common to targets, is in Summa.cpp.)
//
//===----------------------------------------------------------------------===//

#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"
#include "pccrt/SoftmaxStats.h"

#include "ExpSum.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace pccrt {

void layerNormSplitF32(const float *x, const float *scale, const float *bias,
                       float *y, int64_t outer, int64_t n, int64_t total,
                       float eps, Mesh &mesh, int g, double *scratch) {
  for (int64_t o = 0; o < outer; ++o) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j)
      s += x[o * n + j];
    scratch[o] = s;
  }
  allReduceSum(mesh, g, DType::F64, scratch, scratch, outer);
  for (int64_t o = 0; o < outer; ++o) {
    double mean = scratch[o] / double(total), v = 0;
    for (int64_t j = 0; j < n; ++j) {
      double d = x[o * n + j] - mean;
      v += d * d;
    }
    scratch[outer + o] = v;
  }
  allReduceSum(mesh, g, DType::F64, scratch + outer, scratch + outer, outer);
  for (int64_t o = 0; o < outer; ++o) {
    float mean = float(scratch[o] / double(total));
    float inv = float(1.0 / std::sqrt(scratch[outer + o] / double(total) + eps));
    for (int64_t j = 0; j < n; ++j) {
      float v = (x[o * n + j] - mean) * inv * scale[j];
      y[o * n + j] = bias ? v + bias[j] : v;
    }
  }
}

template <typename T>
void softmaxSplit(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,
                  bool log, Mesh &mesh, int g, double *scratch) {
  int64_t lines = outer * inner;
  double *mine = scratch, *all = scratch + 2 * lines;
  auto line = [&](int64_t l) { return (l / inner) * n * inner + l % inner; };
  // Contiguous f32 lines take their exponentials from the vectorised loop,
  // into y (rescaled below for a softmax, overwritten for a log-softmax).
  constexpr bool isFloat = std::is_same_v<T, float>;
  bool vectorised = isFloat && inner == 1;
  for (int64_t l = 0; l < lines; ++l) {
    const T *xp = x + line(l);
    T mx = -std::numeric_limits<T>::infinity();
    for (int64_t k = 0; k < n; ++k)
      mx = std::max(mx, xp[k * inner]);
    double sum = 0;
    if constexpr (isFloat)
      if (vectorised)
        sum = expShiftedSum(xp, y + line(l), n, mx);
    if (!vectorised)
      for (int64_t k = 0; k < n; ++k)
        sum += std::exp(xp[k * inner] - mx);
    mine[2 * l] = mx;
    mine[2 * l + 1] = sum;
  }
  allGather(mesh, g, mine, all, 1, 2 * lines * int64_t(sizeof(double)));
  int64_t devices = groupSize(mesh, g);
  for (int64_t l = 0; l < lines; ++l) {
    double mx, sum;
    mergeSoftmaxStats(all + 2 * l, devices, 2 * lines, mx, sum);
    const T *xp = x + line(l);
    T *yp = y + line(l);
    if (log) {
      T shift = T(mx + std::log(sum));
      for (int64_t k = 0; k < n; ++k)
        yp[k * inner] = xp[k * inner] - shift;
      continue;
    }
    if (vectorised) {
      // y holds e^(x - this block's max): rescaled to the line's; 0 where
      // the block holds nothing visible (its y are NaNs).
      if (mine[2 * l] == -HUGE_VAL) {
        std::fill(yp, yp + n, T(0));
        continue;
      }
      T factor = T(std::exp(mine[2 * l] - mx) / sum);
      for (int64_t k = 0; k < n; ++k)
        yp[k] *= factor;
      continue;
    }
    T m = T(mx), inv = T(1.0 / sum);
    for (int64_t k = 0; k < n; ++k)
      yp[k * inner] = std::exp(xp[k * inner] - m) * inv;
  }
}

template void softmaxSplit<float>(const float *, float *, int64_t, int64_t,
                                  int64_t, bool, Mesh &, int, double *);
template void softmaxSplit<double>(const double *, double *, int64_t, int64_t,
                                   int64_t, bool, Mesh &, int, double *);

} // namespace pccrt
