//===- Kernels.cu - GEMMs (cuBLAS), convolutions, split layer norms -------===//
//
// cuBLAS is column-major: a row-major C = op(A) op(B) is computed as the
// column-major C^T = op(B)^T op(A)^T, i.e. with the operands swapped.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "pccrt/Kernels.h"

namespace pccrt {

using namespace cuda;

void setBlasThreads(int) {}

void setTensorFloat32(bool allowed) {
  PCC_CUBLAS(cublasSetMathMode(
      blas(), allowed ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

void gemmF32(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
             float alpha, const float *a, int64_t lda, const float *b,
             int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  PCC_CUBLAS(cublasSgemm(blas(), transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                         transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha,
                         b, ldb, a, lda, &beta, c, ldc));
}

namespace {

/// Offsets in arithmetic progression (0 for a broadcast operand) are one
/// strided-batched call: their step, or -1.
int64_t progressionStep(const int64_t *off, int64_t batch) {
  int64_t s = batch > 1 ? off[1] - off[0] : 0;
  for (int64_t i = 0; i < batch; ++i)
    if (off[i] != off[0] + i * s)
      return -1;
  return s;
}

template <typename T> constexpr cudaDataType_t dataType();
template <> constexpr cudaDataType_t dataType<Half>() { return CUDA_R_16F; }
template <> constexpr cudaDataType_t dataType<BFloat16>() {
  return CUDA_R_16BF;
}
template <> constexpr cudaDataType_t dataType<float>() { return CUDA_R_32F; }

} // namespace

template <typename T, typename Out>
void gemm16(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
            float alpha, const T *a, int64_t lda, const T *b, int64_t ldb,
            float beta, Out *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  PCC_CUBLAS(cublasGemmEx(blas(), transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                          transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha,
                          b, dataType<T>(), ldb, a, dataType<T>(), lda, &beta,
                          c, dataType<Out>(), ldc, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT));
}

template <typename T, typename Out>
void batchedMatmul16(int64_t batch, const int64_t *offA, const int64_t *offB,
                     int64_t m, int64_t n, int64_t k, const T *a, const T *b,
                     Out *c) {
  if (batch == 0 || m == 0 || n == 0)
    return;
  int64_t sa = progressionStep(offA, batch), sb = progressionStep(offB, batch);
  const float one = 1.0f, zero = 0.0f;
  if (sa >= 0 && sb >= 0) {
    PCC_CUBLAS(cublasGemmStridedBatchedEx(
        blas(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b + offB[0],
        dataType<T>(), n, sb, a + offA[0], dataType<T>(), k, sa, &zero, c,
        dataType<Out>(), n, m * n, batch, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    gemm16<T, Out>(false, false, m, n, k, 1.0f, a + offA[i], k, b + offB[i], n,
                   0.0f, c + i * m * n, n);
}

#define INSTANTIATE(T, Out)                                                    \
  template void gemm16<T, Out>(bool, bool, int64_t, int64_t, int64_t, float,   \
                               const T *, int64_t, const T *, int64_t, float,  \
                               Out *, int64_t);                                \
  template void batchedMatmul16<T, Out>(int64_t, const int64_t *,              \
                                        const int64_t *, int64_t, int64_t,     \
                                        int64_t, const T *, const T *, Out *);
INSTANTIATE(Half, Half)
INSTANTIATE(BFloat16, BFloat16)
INSTANTIATE(Half, float)
INSTANTIATE(BFloat16, float)
#undef INSTANTIATE

void batchedMatmulF32(int64_t batch, const int64_t *offA, const int64_t *offB,
                      int64_t m, int64_t n, int64_t k, const float *a,
                      const float *b, float *c) {
  if (batch == 0 || m == 0 || n == 0)
    return;
  // One strided-batched call where it can; else one GEMM per batch.
  int64_t sa = progressionStep(offA, batch), sb = progressionStep(offB, batch);
  const float one = 1.0f, zero = 0.0f;
  if (sa >= 0 && sb >= 0) {
    PCC_CUBLAS(cublasSgemmStridedBatched(
        blas(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b + offB[0], n, sb,
        a + offA[0], k, sa, &zero, c, n, m * n, batch));
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    gemmF32(false, false, m, n, k, 1.0f, a + offA[i], k, b + offB[i], n, 0.0f,
            c + i * m * n, n);
}

namespace {

/// Rows (channel, ki, kj), columns output positions, of one image's group.
__global__ void im2col(const float *x, float *col, int64_t cg, int64_t h,
                       int64_t wd, int64_t kh, int64_t kw, int64_t oh,
                       int64_t ow, int64_t sh, int64_t sw, int64_t ph,
                       int64_t pw, int64_t dh, int64_t dw) {
  int64_t spatial = oh * ow, total = cg * kh * kw * spatial;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t s = t % spatial, rowIdx = t / spatial;
    int64_t kj = rowIdx % kw, ki = (rowIdx / kw) % kh, ch = rowIdx / (kw * kh);
    int64_t i = s / ow, j = s % ow;
    int64_t r = i * sh - ph + ki * dh, cc = j * sw - pw + kj * dw;
    col[t] = (r >= 0 && r < h && cc >= 0 && cc < wd) ? x[(ch * h + r) * wd + cc]
                                                     : 0.0f;
  }
}

__global__ void addChannelBias(float *y, const float *bias, int64_t channels,
                               int64_t spatial) {
  int64_t total = channels * spatial;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x)
    y[t] += bias[t / spatial];
}

} // namespace

void conv2dF32(const float *x, const float *w, const float *bias, float *y,
               int64_t n, int64_t c, int64_t h, int64_t wd, int64_t oc,
               int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
               int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
               int64_t group, float *col) {
  int64_t cg = c / group, ocg = oc / group;
  int64_t kdim = cg * kh * kw, spatial = oh * ow;
  for (int64_t img = 0; img < n; ++img)
    for (int64_t g = 0; g < group; ++g) {
      im2col<<<gridFor(kdim * spatial), 256, 0, stream()>>>(
          x + (img * c + g * cg) * h * wd, col, cg, h, wd, kh, kw, oh, ow, sh,
          sw, ph, pw, dh, dw);
      PCC_LAUNCHED();
      float *yg = y + (img * oc + g * ocg) * spatial;
      gemmF32(false, false, ocg, spatial, kdim, 1.0f, w + g * ocg * kdim, kdim,
              col, spatial, 0.0f, yg, spatial);
      if (bias) {
        addChannelBias<<<gridFor(ocg * spatial), 256, 0, stream()>>>(
            yg, bias + g * ocg, ocg, spatial);
        PCC_LAUNCHED();
      }
    }
}

namespace {

/// One block per row: the sum over this device's features (phase 0), or
/// the squared deviations from the global mean (phase 1).
__global__ void rowMoments(const float *x, double *out, const double *sums,
                           int64_t n, int64_t total, int phase) {
  __shared__ double part[256];
  int64_t row = blockIdx.x;
  double mean = phase ? sums[row] / double(total) : 0.0;
  double s = 0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    double v = x[row * n + j] - mean;
    s += phase ? v * v : v;
  }
  part[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      part[threadIdx.x] += part[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[row] = part[0];
}

__global__ void normalizeRows(const float *x, const float *scale,
                              const float *bias, float *y, const double *stats,
                              int64_t outer, int64_t n, int64_t total,
                              float eps) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       t < outer * n; t += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = t / n, j = t % n;
    float mean = float(stats[o] / double(total));
    float inv = float(1.0 / sqrt(stats[outer + o] / double(total) + eps));
    float v = (x[t] - mean) * inv * scale[j];
    y[t] = bias ? v + bias[j] : v;
  }
}

} // namespace

void layerNormSplitF32(const float *x, const float *scale, const float *bias,
                       float *y, int64_t outer, int64_t n, int64_t total,
                       float eps, Mesh &mesh, int g, double *scratch) {
  if (outer == 0)
    return;
  rowMoments<<<outer, 256, 0, stream()>>>(x, scratch, scratch, n, total, 0);
  PCC_LAUNCHED();
  allReduceSum(mesh, g, DType::F64, scratch, scratch, outer);
  rowMoments<<<outer, 256, 0, stream()>>>(x, scratch + outer, scratch, n,
                                          total, 1);
  PCC_LAUNCHED();
  allReduceSum(mesh, g, DType::F64, scratch + outer, scratch + outer, outer);
  normalizeRows<<<gridFor(outer * n), 256, 0, stream()>>>(
      x, scale, bias, y, scratch, outer, n, total, eps);
  PCC_LAUNCHED();
}

} // namespace pccrt
