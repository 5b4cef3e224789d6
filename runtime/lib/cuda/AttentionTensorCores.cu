//===- AttentionTensorCores.cu - 16-bit attention on tensor cores ---------===//
//
// Flash attention for fp16/bf16 heads of 64 or 128 features: a block of
// four warps owns 64 query rows (16 a warp); key and value tiles of 64 come
// through shared memory; each warp multiplies its Q rows by the tile's K^T
// and the tile's probabilities by V with WMMA (16x16x16, f32 accumulators),
// while the online softmax (running maximum and sum in f32, as the SIMT
// kernel keeps them) runs two lanes a row on the scores in shared memory.
// Probabilities are rounded to the 16-bit type before the product with V,
// as FlashAttention does. Tiles a mask hides for all 64 rows are skipped.
// No Sq x Sk scores exist anywhere.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "DeviceMasks.h"

#include "pccrt/Kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

namespace pccrt {
namespace {

using namespace cuda;
using namespace nvcuda;

template <typename T> struct Native;
template <> struct Native<Half> {
  using type = __half;
  static __device__ float widen(type x) { return __half2float(x); }
  static __device__ type narrow(float x) { return __float2half_rn(x); }
};
template <> struct Native<BFloat16> {
  using type = __nv_bfloat16;
  static __device__ float widen(type x) { return __bfloat162float(x); }
  static __device__ type narrow(float x) { return __float2bfloat16_rn(x); }
};

constexpr int kWarps = 4, kRows = 16 * kWarps, kKeys = 64;

/// Shared memory of one block; `s` holds a warp's scores, then its part of
/// P V before it is added to `o`.
template <typename N, int D> struct Tiles {
  static constexpr int kScoreStride = D > kKeys ? D : kKeys;
  N q[kRows][D], k[kKeys][D], v[kKeys][D], p[kRows][kKeys];
  float s[kRows][kScoreStride], o[kRows][D];
};

template <typename T, int D>
__global__ void __launch_bounds__(32 * kWarps)
    attendTiles(const typename Native<T>::type *q,
                const typename Native<T>::type *k,
                const typename Native<T>::type *v,
                typename Native<T>::type *out, int64_t sq, int64_t sk,
                float scale, bool divide, DeviceMasks m) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using N = typename Native<T>::type;
  using Sh = Tiles<N, D>;
  constexpr int S = Sh::kScoreStride;
  extern __shared__ __align__(128) unsigned char raw[];
  Sh &t = *reinterpret_cast<Sh *>(raw);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t b = blockIdx.y, i0 = int64_t(blockIdx.x) * kRows;
  const N *qb = q + b * sq * D, *kb = k + b * sk * D, *vb = v + b * sk * D;
  const N zero = Native<T>::narrow(0.0f);
  for (int e = threadIdx.x; e < kRows * D; e += 32 * kWarps) {
    int r = e / D, c = e % D;
    t.q[r][c] = i0 + r < sq ? qb[(i0 + r) * D + c] : zero;
    t.o[r][c] = 0.0f;
  }
  // Lanes 2r and 2r + 1 of warp w keep row 16w + r, each half of its keys
  // and of its features.
  int row = warp * 16 + lane / 2, half = lane % 2;
  int64_t gi = i0 + row;
  bool active = gi < sq;
  const bool *hide = m.hide && active ? m.hide + m.hideBatch[b] + gi * m.hideRow
                                      : nullptr;
  const float *add = m.add && active ? m.add + m.addBatch[b] + gi * m.addRow
                                     : nullptr;
  bool fillNothing = isinf(m.fill) && m.fill < 0;
  float best = -INFINITY, sum = 0;
  __syncthreads();
  for (int64_t j0 = 0; j0 < sk; j0 += kKeys) {
    int keys = int(sk - j0 < kKeys ? sk - j0 : kKeys);
    bool nothing = !active;
    if (active && m.hide && (!m.add || fillNothing) &&
        (fillNothing || m.fill - best < kNoContribution)) {
      nothing = true;
      for (int j = half * 32; j < half * 32 + 32 && j < keys && nothing; ++j)
        nothing = hide[(j0 + j) * m.hideCol];
    }
    if (__syncthreads_and(nothing))
      continue;
    for (int e = threadIdx.x; e < kKeys * D; e += 32 * kWarps) {
      int r = e / D, c = e % D;
      t.k[r][c] = r < keys ? kb[(j0 + r) * D + c] : zero;
      t.v[r][c] = r < keys ? vb[(j0 + r) * D + c] : zero;
    }
    __syncthreads();
    // Scores of this warp's rows: Q [16, D] times K^T [D, 64].
    for (int n = 0; n < kKeys / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int c = 0; c < D / 16; ++c) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, N, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, N, wmma::col_major> kt;
        wmma::load_matrix_sync(a, &t.q[warp * 16][c * 16], D);
        wmma::load_matrix_sync(kt, &t.k[n * 16][c * 16], D);
        wmma::mma_sync(acc, a, kt, acc);
      }
      wmma::store_matrix_sync(&t.s[warp * 16][n * 16], acc, S,
                              wmma::mem_row_major);
    }
    __syncwarp();
    float x[32], tileBest = -INFINITY;
#pragma unroll
    for (int jj = 0; jj < 32; ++jj) {
      int j = half * 32 + jj;
      float val = t.s[row][j];
      val = divide ? val / scale : val * scale;
      int64_t col = j0 + j;
      if (hide && j < keys && hide[col * m.hideCol])
        val = m.fill;
      if (add && j < keys)
        val += add[col * m.addCol];
      x[jj] = active && j < keys ? val : -INFINITY;
      tileBest = x[jj] > tileBest ? x[jj] : tileBest;
    }
    float other = __shfl_xor_sync(0xffffffffu, tileBest, 1);
    tileBest = other > tileBest ? other : tileBest;
    float now = best > tileBest ? best : tileBest;
    float alpha = 1.0f, tileSum = 0;
    if (now != -INFINITY) // else nothing is visible in this row yet
      alpha = expf(best - now);
#pragma unroll
    for (int jj = 0; jj < 32; ++jj) {
      float p = now != -INFINITY ? expf(x[jj] - now) : 0.0f;
      tileSum += p;
      t.p[row][half * 32 + jj] = Native<T>::narrow(p);
    }
    tileSum += __shfl_xor_sync(0xffffffffu, tileSum, 1);
    if (now != -INFINITY) {
      sum = sum * alpha + tileSum;
      best = now;
    }
    __syncwarp();
    // This warp's part of P V: P [16, 64] times V [64, D], into s.
    for (int n = 0; n < D / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int c = 0; c < kKeys / 16; ++c) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, N, wmma::row_major> p;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, N, wmma::row_major> vt;
        wmma::load_matrix_sync(p, &t.p[warp * 16][c * 16], kKeys);
        wmma::load_matrix_sync(vt, &t.v[c * 16][n * 16], D);
        wmma::mma_sync(acc, p, vt, acc);
      }
      wmma::store_matrix_sync(&t.s[warp * 16][n * 16], acc, S,
                              wmma::mem_row_major);
    }
    __syncwarp();
    for (int c = half * (D / 2); c < (half + 1) * (D / 2); ++c)
      t.o[row][c] = t.o[row][c] * alpha + t.s[row][c];
    __syncthreads(); // the tile is read before the next one is written
  }
  if (!active)
    return;
  N *o = out + (b * sq + gi) * D;
  for (int c = half * (D / 2); c < (half + 1) * (D / 2); ++c)
    o[c] = Native<T>::narrow(t.o[row][c] / sum);
#else
  __trap(); // the host refuses devices older than sm_80 first
#endif
}

template <typename T, int D>
void launch(const T *q, const T *k, const T *v, T *out, int64_t batch,
            int64_t sq, int64_t sk, float scale, bool divide,
            const DeviceMasks &m) {
  using N = typename Native<T>::type;
  constexpr size_t bytes = sizeof(Tiles<N, D>);
  static bool configured = false;
  if (!configured) {
    PCC_CUDA(cudaFuncSetAttribute(attendTiles<T, D>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  int(bytes)));
    configured = true;
  }
  dim3 grid(unsigned((sq + kRows - 1) / kRows), unsigned(batch));
  attendTiles<T, D><<<grid, 32 * kWarps, bytes, stream()>>>(
      reinterpret_cast<const N *>(q), reinterpret_cast<const N *>(k),
      reinterpret_cast<const N *>(v), reinterpret_cast<N *>(out), sq, sk,
      scale, divide, m);
  PCC_LAUNCHED();
}

} // namespace

template <typename T>
void attention16(const T *q, const T *k, const T *v, T *out, int64_t batch,
                 int64_t sq, int64_t sk, int64_t d, float scale, bool divide,
                 const AttentionMasks &masks) {
  if (batch == 0 || sq == 0)
    return;
  static int major = -1;
  if (major < 0) {
    int device = 0;
    PCC_CUDA(cudaGetDevice(&device));
    PCC_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                    device));
  }
  if (major < 8)
    fail("attention16", "16-bit attention on tensor cores needs a GPU of "
                        "compute capability 8.0 or newer");
  DeviceMasks m = toDevice(masks, batch);
  if (d == 64)
    return launch<T, 64>(q, k, v, out, batch, sq, sk, scale, divide, m);
  if (d == 128)
    return launch<T, 128>(q, k, v, out, batch, sq, sk, scale, divide, m);
  fail("attention16", "head dimension must be 64 or 128");
}

#define INSTANTIATE(T)                                                         \
  template void attention16<T>(const T *, const T *, const T *, T *, int64_t,  \
                               int64_t, int64_t, int64_t, float, bool,         \
                               const AttentionMasks &);
INSTANTIATE(Half)
INSTANTIATE(BFloat16)
#undef INSTANTIATE

} // namespace pccrt
