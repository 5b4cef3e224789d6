//===- Kernels.cpp - BLAS-backed CPU kernels ------------------------------===//

#include "pccrt/Kernels.h"

#include <cblas.h>


namespace pccrt {

void setTensorFloat32(bool) {}

void setBlasThreads(int threads) {
  if (threads > 0)
    openblas_set_num_threads(threads);
}

void gemmF32(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
             float alpha, const float *a, int64_t lda, const float *b,
             int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0 ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

void batchedMatmulF32(int64_t batch, const int64_t *offA, const int64_t *offB,
                      int64_t m, int64_t n, int64_t k, const float *a,
                      const float *b, float *c) {
  for (int64_t i = 0; i < batch; ++i)
    gemmF32(false, false, m, n, k, 1.0f, a + offA[i], k, b + offB[i], n, 0.0f,
            c + i * m * n, n);
}

void conv2dF32(const float *x, const float *w, const float *bias, float *y,
               int64_t n, int64_t c, int64_t h, int64_t wd, int64_t oc,
               int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
               int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
               int64_t group, float *col) {
  int64_t cg = c / group, ocg = oc / group;
  int64_t kdim = cg * kh * kw, spatial = oh * ow;
  for (int64_t img = 0; img < n; ++img) {
    for (int64_t g = 0; g < group; ++g) {
      const float *xg = x + (img * c + g * cg) * h * wd;
      // im2col: rows are (channel, ki, kj), columns output positions.
      for (int64_t ch = 0; ch < cg; ++ch)
        for (int64_t ki = 0; ki < kh; ++ki)
          for (int64_t kj = 0; kj < kw; ++kj) {
            float *row = col + ((ch * kh + ki) * kw + kj) * spatial;
            for (int64_t i = 0; i < oh; ++i) {
              int64_t r = i * sh - ph + ki * dh;
              for (int64_t j = 0; j < ow; ++j) {
                int64_t cc = j * sw - pw + kj * dw;
                row[i * ow + j] = (r >= 0 && r < h && cc >= 0 && cc < wd)
                                      ? xg[(ch * h + r) * wd + cc]
                                      : 0.0f;
              }
            }
          }
      float *yg = y + (img * oc + g * ocg) * spatial;
      gemmF32(false, false, ocg, spatial, kdim, 1.0f, w + g * ocg * kdim, kdim,
              col, spatial, 0.0f, yg, spatial);
      if (bias)
        for (int64_t o = 0; o < ocg; ++o)
          for (int64_t s = 0; s < spatial; ++s)
            yg[o * spatial + s] += bias[g * ocg + o];
    }
  }
}

} // namespace pccrt
