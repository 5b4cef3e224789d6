//===- Attention.cu - fused attention: online softmax, no score matrix ----===//
//
// Flash attention's order of work: keys and values come through shared
// memory a tile at a time; each tile's scores fold into the row's running
// maximum and sum and into its output (rescaled when the maximum grows). No
// Sq x Sk scores exist anywhere. For head dimensions up to 128 (foldTiles)
// D / 32 threads share a query row, each holding 32 of its query and output
// features in registers and reading the tile as float4 (four FMAs per
// shared load); tiles a mask hides entirely for the block's rows (or an
// additive mask puts far under their maxima) are skipped, as the CPU kernel
// skips them. Wider heads take a thread per row
// (foldKeys).
// Around a ring (ring attention) the same kernel folds each device's block
// of keys as it arrives, keeping the rows' state in scratch between blocks,
// with the CPU kernel's block order (Attention.cpp).
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "DeviceMasks.h"

#include "pccrt/Device.h"
#include "pccrt/Kernels.h"

namespace pccrt {
namespace {

using namespace cuda;

constexpr int kRows = 64;      // query rows (threads) per block
constexpr int kMaxKeys = 64;   // keys per shared-memory tile
constexpr int kSharedBytes = 40 << 10;

struct Fold {
  const float *q, *k, *v;
  float *out, *rowMax, *rowSum;
  int64_t sq, sk, d, dv, col0;
  float scale;
  bool divide, first, last;
  int keysPerTile;
};

__global__ void foldKeys(Fold f, DeviceMasks m) {
  extern __shared__ float tile[]; // keys then values of one tile
  int64_t b = blockIdx.y;
  int64_t i = int64_t(blockIdx.x) * kRows + threadIdx.x;
  bool active = i < f.sq;
  int64_t r = b * f.sq + i;
  const float *q = f.q + r * f.d;
  float *o = f.out + r * f.dv;
  float best = -INFINITY, sum = 0;
  if (active) {
    if (f.first) {
      for (int64_t c = 0; c < f.dv; ++c)
        o[c] = 0;
    } else {
      best = f.rowMax[r];
      sum = f.rowSum[r];
    }
  }
  const float *kb = f.k + b * f.sk * f.d, *vb = f.v + b * f.sk * f.dv;
  const bool *hide = active ? m.hiddenIn(b, i) : nullptr;
  const float *add = active ? m.addedIn(b, i) : nullptr;
  float s[kMaxKeys];
  for (int64_t j0 = 0; j0 < f.sk; j0 += f.keysPerTile) {
    int keys = int(f.sk - j0 < f.keysPerTile ? f.sk - j0 : f.keysPerTile);
    __syncthreads();
    float *kt = tile, *vt = tile + keys * f.d;
    for (int64_t e = threadIdx.x; e < keys * f.d; e += blockDim.x)
      kt[e] = kb[j0 * f.d + e];
    for (int64_t e = threadIdx.x; e < keys * f.dv; e += blockDim.x)
      vt[e] = vb[j0 * f.dv + e];
    __syncthreads();
    if (!active)
      continue;
    float tileBest = -INFINITY;
    for (int j = 0; j < keys; ++j) {
      float x = 0;
      for (int64_t c = 0; c < f.d; ++c)
        x += q[c] * kt[j * f.d + c];
      x = f.divide ? x / f.scale : x * f.scale;
      int64_t col = f.col0 + j0 + j;
      if (m.hidden(hide, i, col))
        x = m.fill;
      if (add)
        x += add[col * m.addCol];
      s[j] = x;
      tileBest = x > tileBest ? x : tileBest;
    }
    float now = best > tileBest ? best : tileBest;
    if (now == -INFINITY)
      continue; // nothing visible in this row yet
    float alpha = expf(best - now), tileSum = 0;
    for (int j = 0; j < keys; ++j) {
      s[j] = expf(s[j] - now);
      tileSum += s[j];
    }
    sum = sum * alpha + tileSum;
    best = now;
    for (int64_t c = 0; c < f.dv; ++c) {
      float a = o[c] * alpha;
      for (int j = 0; j < keys; ++j)
        a += s[j] * vt[j * f.dv + c];
      o[c] = a;
    }
  }
  if (!active)
    return;
  if (f.last) {
    for (int64_t c = 0; c < f.dv; ++c)
      o[c] /= sum;
  } else {
    f.rowMax[r] = best;
    f.rowSum[r] = sum;
  }
}

constexpr int kThreads = 128; // per block of foldTiles
// 16 keys a tile and at most 128 registers (4 blocks an SM) measured best
// on an H100 among 16/32 keys and 2/3/4 blocks an SM (docs/performance.md).
constexpr int kTileKeys = 16;

/// foldKeys for heads of up to D features (D = 32, 64 or 128): thread t of
/// the block serves query row t / P, P = D / 32 threads per row, and owns
/// the row's float4 chunks t % P, t % P + P, ... of the features.
template <int D>
__global__ void __launch_bounds__(kThreads, 4) foldTiles(Fold f, DeviceMasks m) {
  constexpr int P = D / 32, kRowsPerBlock = kThreads / P, C = 8; // chunks
  __shared__ float4 kt[kTileKeys][D / 4], vt[kTileKeys][D / 4];
  int64_t b = blockIdx.y;
  int part = threadIdx.x % P;
  int64_t i = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / P;
  bool active = i < f.sq;
  int64_t r = b * f.sq + (active ? i : 0);
  float4 q[C], o[C];
  for (int c = 0; c < C; ++c) {
    int base = (c * P + part) * 4;
    float e[4], acc[4];
    for (int u = 0; u < 4; ++u) {
      int feat = base + u;
      e[u] = active && feat < f.d ? f.q[r * f.d + feat] : 0.0f;
      acc[u] = active && !f.first && feat < f.dv ? f.out[r * f.dv + feat]
                                                  : 0.0f;
    }
    q[c] = make_float4(e[0], e[1], e[2], e[3]);
    o[c] = make_float4(acc[0], acc[1], acc[2], acc[3]);
  }
  float best = -INFINITY, sum = 0;
  if (active && !f.first) {
    best = f.rowMax[r];
    sum = f.rowSum[r];
  }
  const float *kb = f.k + b * f.sk * f.d, *vb = f.v + b * f.sk * f.dv;
  const bool *hide = active ? m.hiddenIn(b, i) : nullptr;
  const float *add = active ? m.addedIn(b, i) : nullptr;
  bool fillNothing = isinf(m.fill) && m.fill < 0;
  // Under an additive mask every score of the row is at most `bound` plus
  // its mask value (or its fill where hidden): |scale| ||q|| max ||k||,
  // widened for rounding (Megatron's -10000 triangle then hides the keys
  // past the diagonal as a causal band does).
  float bound = INFINITY;
  if (m.add) {
    float qq = 0;
    for (int c = 0; c < C; ++c)
      qq +=
          q[c].x * q[c].x + q[c].y * q[c].y + q[c].z * q[c].z + q[c].w * q[c].w;
    for (int off = 1; off < P; off *= 2)
      qq += __shfl_xor_sync(0xffffffffu, qq, off);
    float keyNorm = largestRowNorm(
        f.sk, f.d, [&](int64_t j, int64_t c) { return kb[j * f.d + c]; });
    float factor = fabsf(f.divide ? 1.0f / f.scale : f.scale);
    if (!isnan(qq))
      bound = factor * sqrtf(qq) * keyNorm * 1.001f + 1.0f;
  }
  for (int64_t j0 = 0; j0 < f.sk; j0 += kTileKeys) {
    int keys = int(f.sk - j0 < kTileKeys ? f.sk - j0 : kTileKeys);
    // Skip the tile when its scores add exactly nothing to every row of the
    // block: hidden under an -inf fill or one far under the maxima, or,
    // with an additive mask, bounded that far under them.
    bool nothing = !active;
    if (active && m.add) {
      nothing = true;
      for (int j = 0; j < keys && nothing; ++j) {
        int64_t col = f.col0 + j0 + j;
        float top = !m.hidden(hide, i, col) ? bound
                    : fillNothing           ? -INFINITY
                                            : m.fill;
        nothing = top + add[col * m.addCol] - best < kNoContribution;
      }
    } else if (active && m.hides() &&
               (fillNothing || m.fill - best < kNoContribution)) {
      nothing = true;
      for (int j = 0; j < keys && nothing; ++j)
        nothing = m.hidden(hide, i, f.col0 + j0 + j);
    }
    if (__syncthreads_and(nothing))
      continue;
    float *kf = &kt[0][0].x, *vf = &vt[0][0].x;
    for (int e = threadIdx.x; e < kTileKeys * D; e += kThreads) {
      int j = e / D, c = e % D;
      kf[e] = j < keys && c < f.d ? kb[(j0 + j) * f.d + c] : 0.0f;
      vf[e] = j < keys && c < f.dv ? vb[(j0 + j) * f.dv + c] : 0.0f;
    }
    __syncthreads();
    float s[kTileKeys], tileBest = -INFINITY;
#pragma unroll
    for (int j = 0; j < kTileKeys; ++j) {
      float x = 0;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        float4 kv = kt[j][c * P + part];
        x += q[c].x * kv.x + q[c].y * kv.y + q[c].z * kv.z + q[c].w * kv.w;
      }
#pragma unroll
      for (int off = 1; off < P; off *= 2)
        x += __shfl_xor_sync(0xffffffffu, x, off);
      x = f.divide ? x / f.scale : x * f.scale;
      int64_t col = f.col0 + j0 + j;
      if (j < keys && m.hidden(hide, i, col))
        x = m.fill;
      if (add && j < keys)
        x += add[col * m.addCol];
      s[j] = j < keys ? x : -INFINITY;
      tileBest = s[j] > tileBest ? s[j] : tileBest;
    }
    float now = best > tileBest ? best : tileBest;
    if (now != -INFINITY) { // else nothing is visible in this row yet
      float alpha = expf(best - now), tileSum = 0;
#pragma unroll
      for (int j = 0; j < kTileKeys; ++j) {
        s[j] = expf(s[j] - now);
        tileSum += s[j];
      }
      sum = sum * alpha + tileSum;
      best = now;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        float4 a = o[c];
        a.x *= alpha, a.y *= alpha, a.z *= alpha, a.w *= alpha;
#pragma unroll
        for (int j = 0; j < kTileKeys; ++j) {
          float4 vv = vt[j][c * P + part];
          a.x += s[j] * vv.x, a.y += s[j] * vv.y;
          a.z += s[j] * vv.z, a.w += s[j] * vv.w;
        }
        o[c] = a;
      }
    }
    __syncthreads(); // the tile is read before the next one is written
  }
  if (!active)
    return;
  float inv = f.last ? 1.0f / sum : 1.0f;
  for (int c = 0; c < C; ++c) {
    int base = (c * P + part) * 4;
    float e[4] = {o[c].x, o[c].y, o[c].z, o[c].w};
    for (int u = 0; u < 4; ++u)
      if (base + u < f.dv)
        f.out[r * f.dv + base + u] = e[u] * inv;
  }
  if (!f.last && part == 0) {
    f.rowMax[r] = best;
    f.rowSum[r] = sum;
  }
}

template <int D> void launchTiles(const Fold &f, const DeviceMasks &m,
                                  int64_t batch) {
  constexpr int rows = kThreads / (D / 32);
  dim3 grid(unsigned((f.sq + rows - 1) / rows), unsigned(batch));
  foldTiles<D><<<grid, kThreads, 0, stream()>>>(f, m);
  PCC_LAUNCHED();
}

void launchFold(Fold f, const DeviceMasks &m, int64_t batch) {
  int64_t widest = f.d > f.dv ? f.d : f.dv;
  if (widest <= 32)
    return launchTiles<32>(f, m, batch);
  if (widest <= 64)
    return launchTiles<64>(f, m, batch);
  if (widest <= 128)
    return launchTiles<128>(f, m, batch);
  int64_t perKey = (f.d + f.dv) * int64_t(sizeof(float));
  int64_t keys = kSharedBytes / (perKey ? perKey : 1);
  if (keys < 1)
    fail("attentionF32", "head dimension too large for a shared-memory tile");
  f.keysPerTile = int(keys < kMaxKeys ? keys : kMaxKeys);
  dim3 grid(unsigned((f.sq + kRows - 1) / kRows), unsigned(batch));
  foldKeys<<<grid, kRows, f.keysPerTile * perKey, stream()>>>(f, m);
  PCC_LAUNCHED();
}

} // namespace

void attentionF32(const float *q, const float *k, const float *v, float *out,
                  int64_t batch, int64_t sq, int64_t sk, int64_t d, int64_t dv,
                  float scale, bool divide, const AttentionMasks &masks,
                  Mesh &mesh, int ringGroup, float *scratch) {
  if (batch == 0 || sq == 0)
    return;
  // The batch offset tables are static arrays of the generated code.
  DeviceMasks m = toDevice(masks, batch);
  // Scratch as the CPU kernel lays it out: a score tile (unused here), the
  // rows' maxima and sums, then two key/value blocks for a ring.
  float *rowMax = scratch + 64 * 64, *rowSum = rowMax + batch * sq;
  Fold f{q, k, v, out, rowMax, rowSum, sq, sk, d, dv, 0, scale, divide,
         true, true, 0};
  if (ringGroup < 0) {
    launchFold(f, m, batch);
    return;
  }
  int64_t n = groupSize(mesh, ringGroup), me = groupIndex(mesh, ringGroup);
  int64_t kElems = batch * sk * d, blockElems = kElems + batch * sk * dv;
  float *cur = rowSum + batch * sq, *next = cur + blockElems;
  copyBytes(cur, k, kElems * sizeof(float));
  copyBytes(cur + kElems, v, (blockElems - kElems) * sizeof(float));
  for (int64_t step = 0; step < n; ++step) {
    bool more = step + 1 < n;
    if (more)
      startRingShift(mesh, ringGroup, cur, next, blockElems * sizeof(float));
    f.k = cur;
    f.v = cur + kElems;
    f.col0 = ((me - step + n) % n) * sk;
    f.first = step == 0;
    f.last = !more;
    launchFold(f, m, batch);
    if (more)
      finishRingShift(mesh, ringGroup, blockElems * sizeof(float));
    float *t = cur;
    cur = next;
    next = t;
  }
}

} // namespace pccrt
