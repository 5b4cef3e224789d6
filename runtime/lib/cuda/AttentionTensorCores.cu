//===- AttentionTensorCores.cu - 16-bit attention on tensor cores ---------===//
//
// Flash attention for fp16/bf16 heads of 64 or 128 features: a block of
// four warps owns 64 query rows (16 a warp); key and value tiles of 64 come
// through shared memory; each warp multiplies its Q rows by the tile's K^T
// and the tile's probabilities by V with WMMA (16x16x16, f32 accumulators),
// while the online softmax (running maximum and sum in f32, as the SIMT
// kernel keeps them) walks the warp's rows with its lanes across each row.
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
/// P V before it is added to `o`. Rows are padded by 16 bytes so that the
/// 8 rows a WMMA load reads at once fall in different banks (unpadded
/// 128-byte rows all start in bank 0); leading dimensions stay multiples of
/// 16 bytes, as WMMA needs.
template <typename N, int D> struct Tiles {
  static constexpr int kPitch = D + 8;
  static constexpr int kScoreStride = (D > kKeys ? D : kKeys) + 4;
  static constexpr int kProbStride = kKeys + 8;
  N q[kRows][kPitch], k[kKeys][kPitch], v[kKeys][kPitch],
      p[kRows][kProbStride];
  float s[kRows][kScoreStride], o[kRows][D];
};

/// Copies `rows` rows of D 16-bit values (zeros past `valid`) into shared
/// memory, 16 bytes a thread where the source is aligned.
template <typename N, int D, int Pitch>
__device__ void loadRows(N (*dst)[Pitch], const N *src, int rows,
                         int64_t valid, bool aligned) {
  if (aligned) {
    constexpr int V = D / 8; // 16-byte vectors a row
    for (int e = threadIdx.x; e < rows * V; e += 32 * kWarps) {
      int r = e / V, c = e % V;
      uint4 x = r < valid ? reinterpret_cast<const uint4 *>(src + r * D)[c]
                          : make_uint4(0, 0, 0, 0);
      reinterpret_cast<uint4 *>(dst[r])[c] = x;
    }
    return;
  }
  for (int e = threadIdx.x; e < rows * D; e += 32 * kWarps) {
    int r = e / D, c = e % D;
    dst[r][c] = r < valid ? src[r * D + c] : N();
  }
}

/// Each warp owns 16 query rows and walks them one at a time for the
/// softmax and the output update, its lanes across the row (consecutive
/// shared-memory words: no bank conflicts), keeping each row's running
/// maximum and sum in registers of every lane.
template <typename T, int D>
__global__ void __launch_bounds__(32 * kWarps)
    attendTiles(const typename Native<T>::type *q,
                const typename Native<T>::type *k,
                const typename Native<T>::type *v,
                typename Native<T>::type *out, int64_t sq, int64_t sk,
                float scale, bool divide, bool aligned, DeviceMasks m) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using N = typename Native<T>::type;
  using Sh = Tiles<N, D>;
  constexpr int S = Sh::kScoreStride, P = Sh::kProbStride;
  extern __shared__ __align__(128) unsigned char raw[];
  Sh &t = *reinterpret_cast<Sh *>(raw);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t b = blockIdx.y, i0 = int64_t(blockIdx.x) * kRows;
  const N *kb = k + b * sk * D, *vb = v + b * sk * D;
  constexpr int L = Sh::kPitch;
  loadRows<N, D, L>(t.q, q + (b * sq + i0) * D, kRows, sq - i0, aligned);
  for (int e = threadIdx.x; e < kRows * D; e += 32 * kWarps)
    t.o[e / D][e % D] = 0.0f;
  int64_t firstRow = i0 + warp * 16;
  bool fillNothing = isinf(m.fill) && m.fill < 0;
  float best[16], sum[16];
#pragma unroll
  for (int r = 0; r < 16; ++r)
    best[r] = -INFINITY, sum[r] = 0;
  __syncthreads();
  // This warp's query rows stay in registers for every tile.
  wmma::fragment<wmma::matrix_a, 16, 16, 16, N, wmma::row_major> qf[D / 16];
#pragma unroll
  for (int c = 0; c < D / 16; ++c)
    wmma::load_matrix_sync(qf[c], &t.q[warp * 16][c * 16], L);
  for (int64_t j0 = 0; j0 < sk; j0 += kKeys) {
    int keys = int(sk - j0 < kKeys ? sk - j0 : kKeys);
    // Skip the tile when a mask hides it from all 64 rows and its scores
    // add exactly nothing.
    bool nothing = true;
    if (m.hide && (!m.add || fillNothing)) {
#pragma unroll
      for (int r = 0; r < 16; ++r) {
        int64_t gi = firstRow + r;
        if (gi >= sq)
          continue;
        bool mine = fillNothing || m.fill - best[r] < kNoContribution;
        const bool *h = m.hiddenIn(b, gi);
        for (int j = lane; j < keys && mine; j += 32)
          mine = h[(j0 + j) * m.hideCol];
        nothing = nothing && __all_sync(0xffffffffu, mine);
      }
    } else {
      nothing = firstRow >= sq;
    }
    if (__syncthreads_and(nothing))
      continue;
    loadRows<N, D, L>(t.k, kb + j0 * D, kKeys, keys, aligned);
    loadRows<N, D, L>(t.v, vb + j0 * D, kKeys, keys, aligned);
    __syncthreads();
    // Scores of this warp's rows: Q [16, D] times K^T [D, 64].
    for (int n = 0; n < kKeys / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int c = 0; c < D / 16; ++c) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, N, wmma::col_major> kt;
        wmma::load_matrix_sync(kt, &t.k[n * 16][c * 16], L);
        wmma::mma_sync(acc, qf[c], kt, acc);
      }
      wmma::store_matrix_sync(&t.s[warp * 16][n * 16], acc, S,
                              wmma::mem_row_major);
    }
    __syncwarp();
    float alpha[16];
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      int64_t gi = firstRow + r;
      const bool *h = gi < sq ? m.hiddenIn(b, gi) : nullptr;
      const float *a = gi < sq ? m.addedIn(b, gi) : nullptr;
      float x[2], tileBest = -INFINITY;
#pragma unroll
      for (int h2 = 0; h2 < 2; ++h2) {
        int j = lane + 32 * h2;
        float val = t.s[warp * 16 + r][j];
        val = divide ? val / scale : val * scale;
        int64_t col = j0 + j;
        if (h && j < keys && h[col * m.hideCol])
          val = m.fill;
        if (a && j < keys)
          val += a[col * m.addCol];
        x[h2] = gi < sq && j < keys ? val : -INFINITY;
        tileBest = x[h2] > tileBest ? x[h2] : tileBest;
      }
      for (int off = 16; off > 0; off /= 2) {
        float o = __shfl_xor_sync(0xffffffffu, tileBest, off);
        tileBest = o > tileBest ? o : tileBest;
      }
      float now = best[r] > tileBest ? best[r] : tileBest;
      bool seen = now != -INFINITY; // else nothing is visible in the row yet
      alpha[r] = seen ? expf(best[r] - now) : 1.0f;
      float tileSum = 0;
#pragma unroll
      for (int h2 = 0; h2 < 2; ++h2) {
        float p = seen ? expf(x[h2] - now) : 0.0f;
        tileSum += p;
        t.p[warp * 16 + r][lane + 32 * h2] = Native<T>::narrow(p);
      }
      for (int off = 16; off > 0; off /= 2)
        tileSum += __shfl_xor_sync(0xffffffffu, tileSum, off);
      if (seen) {
        sum[r] = sum[r] * alpha[r] + tileSum;
        best[r] = now;
      }
    }
    __syncwarp();
    // This warp's part of P V: P [16, 64] times V [64, D], into s.
    for (int n = 0; n < D / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int c = 0; c < kKeys / 16; ++c) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, N, wmma::row_major> p;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, N, wmma::row_major> vt;
        wmma::load_matrix_sync(p, &t.p[warp * 16][c * 16], P);
        wmma::load_matrix_sync(vt, &t.v[c * 16][n * 16], L);
        wmma::mma_sync(acc, p, vt, acc);
      }
      wmma::store_matrix_sync(&t.s[warp * 16][n * 16], acc, S,
                              wmma::mem_row_major);
    }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < 16; ++r)
      for (int c = lane; c < D; c += 32)
        t.o[warp * 16 + r][c] =
            t.o[warp * 16 + r][c] * alpha[r] + t.s[warp * 16 + r][c];
    __syncthreads(); // the tile is read before the next one is written
  }
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    int64_t gi = firstRow + r;
    if (gi >= sq)
      break;
    N *o = out + (b * sq + gi) * D;
    for (int c = lane; c < D; c += 32)
      o[c] = Native<T>::narrow(t.o[warp * 16 + r][c] / sum[r]);
  }
#else
  __trap(); // the host refuses devices older than sm_80 first
#endif
}

template <typename T, int D>
void launch(const T *q, const T *k, const T *v, T *out, int64_t batch,
            int64_t sq, int64_t sk, float scale, bool divide,
            const DeviceMasks &m) {
  using N = typename Native<T>::type;
  auto at16 = [](const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  bool aligned = at16(q) && at16(k) && at16(v);
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
      scale, divide, aligned, m);
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
