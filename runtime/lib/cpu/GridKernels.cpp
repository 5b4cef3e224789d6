//===- GridKernels.cpp - SUMMA and split layer norms on tensor grids ------===//
//
// Colossal-AI's 2D / 2.5D linear layers and layer norms, one device's part.
// SUMMA (van de Geijn and Watts 1997): on a q x q grid, step k broadcasts
// the left blocks of grid column k along the rows and the weight blocks of
// grid row k along the columns; every device accumulates its product. Only
// one panel of each is held at a time. A layer norm whose hidden dimension
// is split all-reduces each row's sum, then its squared deviations.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"

#include <cmath>
#include <cstring>

namespace pccrt {

void summaF32(const float *x, const float *w, float *y, int64_t m, int64_t k,
              int64_t n, bool transB, float alpha, float beta, Mesh &mesh,
              int alongRow, int alongCol, float *scratch) {
  int64_t q = groupSize(mesh, alongRow);
  int64_t myCol = groupIndex(mesh, alongRow), myRow = groupIndex(mesh, alongCol);
  float *xPanel = scratch, *wPanel = scratch + m * k;
  for (int64_t step = 0; step < q; ++step) {
    if (myCol == step)
      std::memcpy(xPanel, x, m * k * sizeof(float));
    if (myRow == step)
      std::memcpy(wPanel, w, k * n * sizeof(float));
    broadcast(mesh, alongRow, step, xPanel, m * k * sizeof(float));
    broadcast(mesh, alongCol, step, wPanel, k * n * sizeof(float));
    gemmF32(false, transB, m, n, k, alpha, xPanel, k, wPanel, transB ? k : n,
            step == 0 ? beta : 1.0f, y, n);
  }
}

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
