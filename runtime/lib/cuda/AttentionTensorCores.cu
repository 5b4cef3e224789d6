//===- AttentionTensorCores.cu - 16-bit attention on tensor cores ---------===//
//
// Flash attention for fp16/bf16 heads of 64 or 128 features, in the shape of
// FlashAttention-2: a block of four warps owns 64 query rows (16 a warp);
// key and value tiles of 64 rows come through shared memory (cp.async; the
// value tile loads while the scores are computed); each warp multiplies its
// query rows by the tile's keys and its probabilities by the tile's values
// with mma.sync m16n8k16 (f32 accumulators). Scores, probabilities and the
// output accumulator stay in registers: the accumulator layout of Q K^T is
// the operand layout of P V, so the online softmax (running maximum and sum
// in f32, as the SIMT kernel keeps them) runs on each thread's own scores,
// with the row's four threads combining maxima by shuffles. Probabilities
// are rounded to the 16-bit type before the product with V, as
// FlashAttention does. Tiles a mask hides for all 64 rows are skipped (by
// index under a band mask, pcc.attention's hide_from; by a bound on the
// scores under an additive one), tiles no mask or
// bound touches take a path without mask arithmetic, and row tiles run
// from the last (the longest under a causal mask) to the first. No Sq x Sk
// scores exist anywhere.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "DeviceMasks.h"

#include "pccrt/Kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

namespace pccrt {
namespace {

using namespace cuda;

template <typename T> struct Native;
template <> struct Native<Half> {
  using type = __half;
  static __device__ type narrow(float x) { return __float2half_rn(x); }
  static __device__ float wide(type x) { return __half2float(x); }
  /// Two values as one 32-bit operand register, `lo` in the low half.
  static __device__ uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
  }
};
template <> struct Native<BFloat16> {
  using type = __nv_bfloat16;
  static __device__ type narrow(float x) { return __float2bfloat16_rn(x); }
  static __device__ float wide(type x) { return __bfloat162float(x); }
  static __device__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
  }
};

constexpr int kWarps = 4, kRows = 16 * kWarps, kKeys = 64;
constexpr float kLog2e = 1.4426950408889634f;

/// Elements from one sequence position's row to the next's, per tensor.
struct Pitches {
  int64_t q, k, v, out;
};

/// Shared memory of one block: the key and value tiles (the query tile
/// first uses the key tile's space). Rows are padded by 16 bytes, so the
/// eight 16-byte rows an ldmatrix reads at once start in different banks.
template <typename N, int D> struct Tiles {
  static constexpr int kPitch = D + 8;
  N k[kKeys][kPitch], v[kKeys][kPitch];
};

__device__ inline unsigned sharedAddress(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// Four 8x8 16-bit matrices from shared memory; lane l gives the address
/// of row l % 8 of matrix l / 8 and receives, of matrix i, row l / 4 and
/// columns 2 (l % 4) + {0, 1} in r[i] (with `Trans`, the transpose's).
template <bool Trans>
__device__ inline void loadMatrices(uint32_t (&r)[4], const void *row) {
  unsigned a = sharedAddress(row);
  if constexpr (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

/// c += a b for a 16x16 A (row-major fragment), a 16x8 B (column-major
/// fragment) and a 16x8 f32 C: lane l holds C's rows l / 4 and l / 4 + 8,
/// columns 2 (l % 4) + {0, 1}.
// The instruction for one operand type ("f16" or "bf16").
#define PCC_MMA_M16N8K16(TYPE)                                                 \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 " \
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "               \
               "{%0, %1, %2, %3};\n"                                          \
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])               \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),         \
                 "r"(b1))
template <typename N>
__device__ inline void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                           uint32_t b1) {
  if constexpr (std::is_same_v<N, __half>)
    PCC_MMA_M16N8K16("f16");
  else
    PCC_MMA_M16N8K16("bf16");
}
#undef PCC_MMA_M16N8K16

/// Starts copying `rows` rows of D 16-bit values into shared memory (zeros
/// past `valid`): cp.async 16 bytes a thread where the source is aligned,
/// plain loads otherwise. The caller commits and waits.
template <typename N, int D, int Pitch>
__device__ void loadRows(N (*dst)[Pitch], const N *src, int64_t pitch, int rows,
                         int64_t valid, bool aligned) {
  if (aligned && valid >= rows && rows == kKeys) {
    // A whole tile: each thread copies the same column of every R-th row.
    // Addresses once, then constant offsets (immediates of the copies).
    constexpr int V = D / 8, R = 32 * kWarps / V;
    int r = threadIdx.x / V, c = threadIdx.x % V;
    unsigned to = sharedAddress(&dst[r][8 * c]);
    const N *from = src + r * pitch + 8 * c;
#pragma unroll
    for (int k = 0; k < kKeys / R; ++k)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                       to + k * R * Pitch * int(sizeof(N))),
                   "l"(from + k * R * pitch));
    return;
  }
  if (aligned) {
    constexpr int V = D / 8; // 16-byte vectors a row
    for (int e = threadIdx.x; e < rows * V; e += 32 * kWarps) {
      int r = e / V, c = e % V;
      uint4 *to = reinterpret_cast<uint4 *>(dst[r]) + c;
      if (r < valid)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                         sharedAddress(to)),
                     "l"(reinterpret_cast<const uint4 *>(src + r * pitch) + c));
      else
        *to = make_uint4(0, 0, 0, 0);
    }
    return;
  }
  for (int e = threadIdx.x; e < rows * D; e += 32 * kWarps) {
    int r = e / D, c = e % D;
    dst[r][c] = r < valid ? src[r * pitch + c] : N();
  }
}

/// 2^x (one MUFU instruction; subnormal results flush to 0).
/// The maximum and the sum of `x` as balanced trees: log2(N) dependent
/// steps instead of N (float adds are not reassociated by the compiler).
template <int N> __device__ inline float treeMax(float (&x)[N]) {
#pragma unroll
  for (int w = N / 2; w > 0; w /= 2)
#pragma unroll
    for (int i = 0; i < w; ++i)
      x[i] = fmaxf(x[i], x[i + w]);
  return x[0];
}
template <int N> __device__ inline float treeSum(float (&x)[N]) {
#pragma unroll
  for (int w = N / 2; w > 0; w /= 2)
#pragma unroll
    for (int i = 0; i < w; ++i)
      x[i] += x[i + w];
  return x[0];
}

__device__ inline float exp2Fast(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ inline void commitLoads() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int Pending> __device__ inline void waitLoads() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

/// Lane l of a warp holds, of the warp's 16 rows, rows l / 4 ("lo") and
/// l / 4 + 8 ("hi"); of a tile's 64 keys, columns 8 n + 2 (l % 4) + {0, 1}
/// for n < 8. Score s[n][h * 2 + e] is row (h ? hi : lo), column
/// 8 n + 2 (l % 4) + e.
template <typename T, int D>
__global__ void __launch_bounds__(32 * kWarps, D == 64 ? 3 : 2)
    attendTiles(const typename Native<T>::type *q,
                const typename Native<T>::type *k,
                const typename Native<T>::type *v,
                typename Native<T>::type *out, int sq, int sk, float scale,
                bool divide, bool aligned, int outAlign, int heads,
                Pitches pitch, DeviceMasks m) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using N = typename Native<T>::type;
  using Sh = Tiles<N, D>;
  constexpr int L = Sh::kPitch;
  __shared__ __align__(128) Sh t;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int quadRow = lane / 4, quadCol = 2 * (lane % 4);
  int64_t b = blockIdx.x;
  int i0 = int(gridDim.y - 1 - blockIdx.y) * kRows;
  int from = int(m.hideFrom); // clamped by the host
  // Problem b's rows: [b, s, :] of [batch, s, D] tensors, or with `heads`,
  // [b / heads, s, b % heads, :] of [batch / heads, s, heads', D] ones (the
  // heads read and written in place; a row `pitch` elements long).
  auto rows = [&](auto *x, int64_t len, int64_t rowPitch) {
    return heads ? x + (b / heads) * len * rowPitch + (b % heads) * D
                 : x + b * len * D;
  };
  const N *qb = rows(q, sq, pitch.q), *kb = rows(k, sk, pitch.k),
          *vb = rows(v, sk, pitch.v);
  N *ob = rows(out, sq, pitch.out);

  // This warp's query rows, as A operands of each 16-feature chunk.
  loadRows<N, D, L>(t.k, qb + i0 * pitch.q, pitch.q, kRows, sq - i0, aligned);
  commitLoads();
  waitLoads<0>();
  __syncthreads();
  uint32_t qf[D / 16][4];
  {
    int mi = lane / 8, r = lane % 8;
#pragma unroll
    for (int c = 0; c < D / 16; ++c)
      loadMatrices<false>(
          qf[c], &t.k[warp * 16 + (mi & 1) * 8 + r][c * 16 + (mi >> 1) * 8]);
  }

  int row[2] = {i0 + warp * 16 + quadRow, i0 + warp * 16 + quadRow + 8};
  const bool *hidden[2];
  const float *added[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    hidden[h] = row[h] < sq ? m.hiddenIn(b, row[h]) : nullptr;
    added[h] = row[h] < sq ? m.addedIn(b, row[h]) : nullptr;
  }
  bool fillNothing = isinf(m.fill) && m.fill < 0;
  // The softmax works in base 2: scores times log2(e) (and the scale), so
  // each probability is one FMA and one ex2. Running maxima are in those
  // units.
  float scaleLog2 = (divide ? 1.0f / scale : scale) * kLog2e;
  float fill2 = m.fill * kLog2e;
  bool skippable = m.hides() || m.add;
  // Under an additive mask every score of a row is at most bound2 plus its
  // mask value (or its fill where hidden), in those units: |scale| ||q||
  // max ||k||, widened for rounding (Megatron's -10000 triangle then hides
  // the keys past the diagonal as a causal band does). The query rows are
  // still in the key tile.
  float bound2[2] = {INFINITY, INFINITY};
  if (m.add) {
    float keyNorm = largestRowNorm(sk, D, [&](int64_t j, int64_t c) {
      return Native<T>::wide(kb[j * pitch.k + c]);
    });
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float qq = 0;
      for (int c = 0; c < D; ++c) {
        float e = Native<T>::wide(t.k[warp * 16 + quadRow + 8 * h][c]);
        qq += e * e;
      }
      if (!isnan(qq))
        bound2[h] = fabsf(scaleLog2) * sqrtf(qq) * keyNorm * 1.001f + 2.0f;
    }
  }
  // Under a band with an -inf fill, the keys some row of the block sees
  // are [0, bandEnd): the last row's.
  int lastRow = (i0 + kRows < sq ? i0 + kRows : sq) - 1;
  bool bandSkips = m.band && fillNothing;
  int bandEnd = sk;
  if (bandSkips)
    bandEnd = lastRow + from < 0    ? 0
              : lastRow + from < sk ? lastRow + from
                                    : sk;
  float best[2] = {-INFINITY, -INFINITY}, sum[2] = {0, 0};
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
    o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0;

  // This thread's 32 mask bits of the tile at j0 (bit 4 n + 2 h + e, as
  // s[n][2 h + e]), read once a tile.
  auto maskBits = [&](int j0, int keys) {
    uint32_t bits = 0;
    if (m.band) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (j0 + 8 * n + quadCol + e - row[h] >= from)
              bits |= 1u << (4 * n + 2 * h + e);
      return bits;
    }
    if (!m.hide)
      return bits;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          int j = 8 * n + quadCol + e;
          if (hidden[h] && j < keys && hidden[h][(j0 + j) * m.hideCol])
            bits |= 1u << (4 * n + 2 * h + e);
        }
    return bits;
  };
  // Whether a mask hides the tile from all of this thread's scores and
  // they add exactly nothing to their rows.
  auto hiddenFromMine = [&](uint32_t bits, int keys) {
    bool nothing = true;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (row[h] >= sq)
        continue; // a row past the end
      bool adds = !fillNothing && !(fill2 - best[h] < kNoContribution * kLog2e);
      uint32_t mine = 0;
#pragma unroll
      for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (8 * n + quadCol + e < keys)
            mine |= 1u << (4 * n + 2 * h + e);
      nothing = nothing && !adds && (bits & mine) == mine;
    }
    return nothing;
  };
  // Whether all of this thread's scores of the tile at j0 are bounded far
  // enough under their rows' maxima to add exactly nothing (additive mask).
  auto boundedFromMine = [&](uint32_t bits, int j0, int keys) {
    bool nothing = true;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (row[h] >= sq)
        continue; // a row past the end
#pragma unroll
      for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          int j = 8 * n + quadCol + e;
          if (j >= keys)
            continue;
          float top = !(bits >> (4 * n + 2 * h + e) & 1) ? bound2[h]
                      : fillNothing                      ? -INFINITY
                                                         : fill2;
          float a = added[h][(j0 + j) * m.addCol] * kLog2e;
          nothing = nothing && top + a - best[h] < kNoContribution * kLog2e;
        }
    }
    return nothing;
  };
  auto tileKeys = [&](int j0) { return sk - j0 < kKeys ? sk - j0 : kKeys; };
  // Whether no mask and no bound touches the tile at j0: every score is
  // visible, every row and key exists (the same for the whole block).
  auto plainTile = [&](int j0) {
    return !m.hide && !m.add && scaleLog2 > 0 && i0 + kRows <= sq &&
           j0 + kKeys <= sk && (!m.band || j0 + kKeys - 1 - i0 < from);
  };
  // The first tile from `j0` on that some row of the block sees (sk if
  // none), with its mask bits. Callers are past a barrier.
  auto nextTile = [&](int j0, uint32_t &bits) {
    if (bandSkips) { // known from indices, no barrier
      if (j0 >= bandEnd)
        return sk;
      bits = plainTile(j0) ? 0u : maskBits(j0, tileKeys(j0));
      return j0;
    }
    for (; j0 < sk; j0 += kKeys) {
      bits = maskBits(j0, tileKeys(j0));
      bool nothing = m.add ? boundedFromMine(bits, j0, tileKeys(j0))
                           : hiddenFromMine(bits, tileKeys(j0));
      if (!skippable || !__syncthreads_and(nothing))
        break;
    }
    return j0;
  };
  auto loadKeys = [&](int j0) {
    loadRows<N, D, L>(t.k, kb + j0 * pitch.k, pitch.k, kKeys, tileKeys(j0),
                      aligned);
    commitLoads();
  };
  auto loadValues = [&](int j0) {
    loadRows<N, D, L>(t.v, vb + j0 * pitch.v, pitch.v, kKeys, tileKeys(j0),
                      aligned);
    commitLoads();
  };

  // Each tile's keys load while the previous tile's P V is computed, its
  // values while its scores are: one buffer each suffices.
  __syncthreads(); // every warp has its query fragments
  uint32_t hide = 0;
  int j0 = nextTile(0, hide);
  if (j0 < sk) {
    loadKeys(j0);
    loadValues(j0);
  }
  while (j0 < sk) {
    int keys = tileKeys(j0);
    waitLoads<1>(); // the keys; the values may still be on their way
    __syncthreads();

    // Scores: Q [16, D] times K^T [D, 64].
    float s[kKeys / 8][4];
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n)
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0;
    {
      int mi = lane / 8, r = lane % 8;
#pragma unroll
      for (int c = 0; c < D / 16; ++c)
#pragma unroll
        for (int np = 0; np < kKeys / 16; ++np) {
          uint32_t kf[4];
          loadMatrices<false>(
              kf, &t.k[16 * np + (mi >> 1) * 8 + r][c * 16 + (mi & 1) * 8]);
          mma<N>(s[2 * np], qf[c], kf[0], kf[1]);
          mma<N>(s[2 * np + 1], qf[c], kf[2], kf[3]);
        }
    }

    // Online softmax on this thread's scores of its two rows; a plain tile
    // (most of them) skips the masks and bounds.
    float alpha[2];
    bool plain = plainTile(j0);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float tileBest, part[kKeys / 8];
      if (plain) { // raw scores: the maximum scales after (scaleLog2 > 0)
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n)
          part[n] = fmaxf(s[n][2 * h], s[n][2 * h + 1]);
        tileBest = treeMax(part) * scaleLog2;
      } else {
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            int j = 8 * n + quadCol + e;
            float val = s[n][2 * h + e] * scaleLog2;
            if (hide >> (4 * n + 2 * h + e) & 1)
              val = fill2;
            if (added[h] && j < keys)
              val = fmaf(added[h][(j0 + j) * m.addCol], kLog2e, val);
            val = row[h] < sq && j < keys ? val : -INFINITY;
            s[n][2 * h + e] = val;
          }
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n)
          part[n] = fmaxf(s[n][2 * h], s[n][2 * h + 1]);
        tileBest = treeMax(part);
      }
      tileBest = fmaxf(tileBest, __shfl_xor_sync(0xffffffffu, tileBest, 1));
      tileBest = fmaxf(tileBest, __shfl_xor_sync(0xffffffffu, tileBest, 2));
      float now = fmaxf(best[h], tileBest);
      bool seen = now != -INFINITY; // else nothing is visible in the row yet
      float shift = seen ? now : 0.0f;
      alpha[h] = seen ? exp2Fast(best[h] - shift) : 1.0f;
      // p = 2^(s c - max): c = scaleLog2 for raw scores, 1 for scaled ones.
      float c = plain ? scaleLog2 : 1.0f;
#pragma unroll
      for (int n = 0; n < kKeys / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 2; ++e)
          s[n][2 * h + e] =
              seen ? exp2Fast(fmaf(s[n][2 * h + e], c, -shift)) : 0.0f;
        part[n] = s[n][2 * h] + s[n][2 * h + 1];
      }
      float tileSum = treeSum(part);
      // Each thread keeps its part of the row's sum; combined at the end.
      sum[h] = sum[h] * alpha[h] + tileSum;
      best[h] = now;
    }
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      o[n][0] *= alpha[0], o[n][1] *= alpha[0];
      o[n][2] *= alpha[1], o[n][3] *= alpha[1];
    }

    // The next tile's keys load during this tile's P V.
    __syncthreads(); // every warp is done with the keys
    uint32_t nextHide = 0;
    int next = nextTile(j0 + kKeys, nextHide);
    if (next < sk) {
      loadKeys(next);
      waitLoads<1>();
    } else {
      waitLoads<0>();
    }
    __syncthreads(); // this tile's values

    // O += P [16, 64] V [64, D]: the scores' accumulator layout is the A
    // operand's, 16 keys (two 8-key groups) an operand.
    {
      int mi = lane / 8, r = lane % 8;
#pragma unroll
      for (int kc = 0; kc < kKeys / 16; ++kc) {
        uint32_t p[4] = {Native<T>::pack(s[2 * kc][0], s[2 * kc][1]),
                         Native<T>::pack(s[2 * kc][2], s[2 * kc][3]),
                         Native<T>::pack(s[2 * kc + 1][0], s[2 * kc + 1][1]),
                         Native<T>::pack(s[2 * kc + 1][2], s[2 * kc + 1][3])};
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          uint32_t vf[4];
          loadMatrices<true>(
              vf, &t.v[16 * kc + (mi & 1) * 8 + r][16 * dp + (mi >> 1) * 8]);
          mma<N>(o[2 * dp], p, vf[0], vf[1]);
          mma<N>(o[2 * dp + 1], p, vf[2], vf[3]);
        }
      }
    }
    __syncthreads(); // every warp is done with the values
    if (next < sk)
      loadValues(next);
    j0 = next;
    hide = nextHide;
  }
  float inv[2]; // one division a row
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
    sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
    inv[h] = 1.0f / sum[h];
  }
  if (outAlign == 16) {
    // Through this warp's 16 rows of the key tile (free: the loop's last
    // barrier is passed and nothing loads), then 16 bytes a lane.
    N(*stage)[L] = t.k + warp * 16;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
        *reinterpret_cast<uint32_t *>(
            &stage[quadRow + 8 * h][8 * n + quadCol]) =
            Native<T>::pack(o[n][2 * h] * inv[h], o[n][2 * h + 1] * inv[h]);
    __syncwarp();
    constexpr int V = D / 8;
#pragma unroll
    for (int e = lane; e < 16 * V; e += 32) {
      int r = e / V, c = e % V, at = i0 + warp * 16 + r;
      if (at < sq)
        reinterpret_cast<uint4 *>(ob + at * pitch.out)[c] =
            reinterpret_cast<const uint4 *>(stage[r])[c];
    }
    return;
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (row[h] >= sq)
      continue;
    N *to = ob + row[h] * pitch.out;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      float lo = o[n][2 * h] * inv[h], hi = o[n][2 * h + 1] * inv[h];
      if (outAlign == 4) { // both columns in one 4-byte store
        *reinterpret_cast<uint32_t *>(to + 8 * n + quadCol) =
            Native<T>::pack(lo, hi);
      } else {
        to[8 * n + quadCol] = Native<T>::narrow(lo);
        to[8 * n + quadCol + 1] = Native<T>::narrow(hi);
      }
    }
  }
#else
  __trap(); // the host refuses devices older than sm_80 first
#endif
}

template <typename T, int D>
void launch(const T *q, const T *k, const T *v, T *out, int64_t batch,
            int64_t sq, int64_t sk, float scale, bool divide,
            const DeviceMasks &m, int64_t heads, Pitches pitch) {
  using N = typename Native<T>::type;
  auto at16 = [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
  };
  // 16-byte copies need every row of q, k and v 16-byte aligned.
  bool aligned =
      at16(q) && at16(k) && at16(v) && (pitch.q | pitch.k | pitch.v) % 8 == 0;
  int outAlign = at16(out)                                   ? 16
                 : reinterpret_cast<uintptr_t>(out) % 4 == 0 ? 4
                                                             : 2;
  int64_t rowTiles = (sq + kRows - 1) / kRows;
  if (rowTiles > 65535 || batch > INT32_MAX || sk > INT32_MAX / 2 ||
      heads > INT32_MAX / 128)
    fail("attention16", "too many query rows, keys or heads for one launch");
  // The kernel's index arithmetic is 32-bit: a band's offset beyond every
  // row-column difference means the same clamped.
  DeviceMasks clamped = m;
  clamped.hideFrom =
      std::min<int64_t>(std::max<int64_t>(m.hideFrom, -sq - 1), sk + 1);
  dim3 grid{unsigned(batch), unsigned(rowTiles)};
  attendTiles<T, D><<<grid, 32 * kWarps, 0, stream()>>>(
      reinterpret_cast<const N *>(q), reinterpret_cast<const N *>(k),
      reinterpret_cast<const N *>(v), reinterpret_cast<N *>(out), int(sq),
      int(sk), scale, divide, aligned, outAlign, int(heads), pitch, clamped);
  PCC_LAUNCHED();
}

} // namespace

template <typename T>
void attention16(const T *q, const T *k, const T *v, T *out, int64_t batch,
                 int64_t sq, int64_t sk, int64_t d, float scale, bool divide,
                 const AttentionMasks &masks, int64_t heads, int64_t qPitch,
                 int64_t kPitch, int64_t vPitch) {
  if (batch == 0 || sq == 0)
    return;
  int64_t own = heads ? heads * d : d;
  Pitches pitch{qPitch && heads ? qPitch : own, kPitch && heads ? kPitch : own,
                vPitch && heads ? vPitch : own, own};
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
    return launch<T, 64>(q, k, v, out, batch, sq, sk, scale, divide, m, heads,
                         pitch);
  if (d == 128)
    return launch<T, 128>(q, k, v, out, batch, sq, sk, scale, divide, m, heads,
                          pitch);
  fail("attention16", "head dimension must be 64 or 128");
}

#define INSTANTIATE(T)                                                         \
  template void attention16<T>(const T *, const T *, const T *, T *, int64_t,  \
                               int64_t, int64_t, int64_t, float, bool,         \
                               const AttentionMasks &, int64_t, int64_t,       \
                               int64_t, int64_t);
INSTANTIATE(Half)
INSTANTIATE(BFloat16)
#undef INSTANTIATE

} // namespace pccrt
