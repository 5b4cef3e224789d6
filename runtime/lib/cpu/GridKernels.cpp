//===- GridKernels.cpp - split layer norms on tensor grids ----------------===//
//
// Colossal-AI's 2D / 2.5D layer norms, one device's part: a layer norm
// whose hidden dimension is split all-reduces each row's sum, then its
// squared deviations. (SUMMA, common to targets, is in Summa.cpp.)
//
//===----------------------------------------------------------------------===//

#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"

#include <cmath>
#include <cstring>

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

} // namespace pccrt
