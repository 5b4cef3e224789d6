//===- GemmEpilogue.cu - GEMMs with bias and residual in cuBLASLt -------===//
//
// A projection's bias and a residual add are a pass over the result each
// when a kernel applies them after the GEMM; cuBLASLt applies them while
// the result is still in registers (D = alpha A B + beta C, then the bias
// epilogue). Row-major c = a b is the column-major c^T = b^T a^T, as in
// Kernels.cu. Each shape's descriptors and algorithm are found once.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "pccrt/Kernels.h"

#include <cublasLt.h>

#include <map>
#include <tuple>

namespace pccrt {

using namespace cuda;

namespace {

template <typename T> constexpr cudaDataType_t ltType();
template <> constexpr cudaDataType_t ltType<Half>() { return CUDA_R_16F; }
template <> constexpr cudaDataType_t ltType<BFloat16>() { return CUDA_R_16BF; }

/// The largest power of two up to 256 dividing `p`'s address: what the
/// algorithm may assume of the buffer.
uint32_t alignmentOf(const void *p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al)
    al /= 2;
  return al;
}

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  bool found = false;
};

using Key = std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, bool, bool, uint32_t, uint32_t,
                       uint32_t, uint32_t, uint32_t>;

/// Descriptors and the heuristic's first algorithm for one call shape.
template <typename T>
Plan &planFor(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              int64_t lda, int64_t ldb, int64_t ldc, const T *a, const T *b,
              const T *bias, const T *addend, T *c) {
  static std::map<Key, Plan> plans;
  Key key{int(ltType<T>()),
          transA,
          transB,
          m,
          n,
          k,
          lda,
          ldb,
          ldc,
          bias != nullptr,
          addend != nullptr,
          alignmentOf(a),
          alignmentOf(b),
          alignmentOf(c),
          addend ? alignmentOf(addend) : 256u,
          bias ? alignmentOf(bias) : 256u};
  auto [it, fresh] = plans.try_emplace(key);
  Plan &p = it->second;
  if (!fresh)
    return p;
  cudaDataType_t t = ltType<T>();
  PCC_CUBLAS(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // cuBLAS's A is our b, its B our a.
  cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                    opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  PCC_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                            &opA, sizeof(opA)));
  PCC_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                            &opB, sizeof(opB)));
  if (bias) {
    cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS;
    PCC_CUBLAS(cublasLtMatmulDescSetAttribute(
        p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
    PCC_CUBLAS(cublasLtMatmulDescSetAttribute(
        p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &t, sizeof(t)));
  }
  PCC_CUBLAS(
      cublasLtMatrixLayoutCreate(&p.a, t, transB ? k : n, transB ? n : k, ldb));
  PCC_CUBLAS(
      cublasLtMatrixLayoutCreate(&p.b, t, transA ? m : k, transA ? k : m, lda));
  PCC_CUBLAS(cublasLtMatrixLayoutCreate(&p.c, t, n, m, ldc));
  cublasLtMatmulPreference_t pref;
  PCC_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  size_t workspace = blasLtWorkspaceBytes();
  PCC_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
      sizeof(workspace)));
  uint32_t alA = alignmentOf(b), alB = alignmentOf(a),
           alC = addend ? alignmentOf(addend) : alignmentOf(c),
           alD = alignmentOf(c);
  PCC_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alA, sizeof(alA)));
  PCC_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alB, sizeof(alB)));
  PCC_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alC, sizeof(alC)));
  PCC_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alD, sizeof(alD)));
  cublasLtMatmulHeuristicResult_t result = {};
  int count = 0;
  // No algorithm for this shape, alignment or bias type: the fallback.
  if (bias)
    PCC_CUBLAS(cublasLtMatmulDescSetAttribute(
        p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  // The heuristic does not ask how the bias is aligned: vector loads of a
  // misaligned one go to the fallback.
  if ((!bias || alignmentOf(bias) >= 16) &&
      cublasLtMatmulAlgoGetHeuristic(blasLt(), p.desc, p.a, p.b, p.c, p.c, pref,
                                     1, &result,
                                     &count) == CUBLAS_STATUS_SUCCESS &&
      count > 0) {
    p.algo = result.algo;
    p.found = true;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  return p;
}

/// The fallback's epilogue: c[i, j] += bias[j] + addend[i, j], in f32.
template <typename N>
__global__ void addEpilogue(N *c, const N *bias, const N *addend, int64_t m,
                            int64_t n, int64_t ldc) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < m * n;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = t / n, j = t % n;
    float v = float(c[i * ldc + j]);
    if (bias)
      v += float(bias[j]);
    if (addend)
      v += float(addend[i * ldc + j]);
    c[i * ldc + j] = N(v);
  }
}

} // namespace

template <typename T>
void gemmEpilogue16(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                    float alpha, const T *a, int64_t lda, const T *b,
                    int64_t ldb, const T *bias, const T *addend, T *c,
                    int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  Plan &p =
      planFor<T>(transA, transB, m, n, k, lda, ldb, ldc, a, b, bias, addend, c);
  if (!p.found || k == 0) {
    gemm16<T>(transA, transB, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc);
    addEpilogue<T>
        <<<gridFor(m * n), 256, 0, stream()>>>(c, bias, addend, m, n, ldc);
    PCC_LAUNCHED();
    return;
  }
  if (bias)
    PCC_CUBLAS(cublasLtMatmulDescSetAttribute(
        p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const float beta = addend ? 1.0f : 0.0f;
  PCC_CUBLAS(cublasLtMatmul(
      blasLt(), p.desc, &alpha, b, p.a, a, p.b, &beta, addend ? addend : c, p.c,
      c, p.c, &p.algo, blasLtWorkspace(), blasLtWorkspaceBytes(), stream()));
}

#define INSTANTIATE(T)                                                         \
  template void gemmEpilogue16<T>(                                             \
      bool, bool, int64_t, int64_t, int64_t, float, const T *, int64_t,        \
      const T *, int64_t, const T *, const T *, T *, int64_t);
INSTANTIATE(Half)
INSTANTIATE(BFloat16)
#undef INSTANTIATE

} // namespace pccrt
