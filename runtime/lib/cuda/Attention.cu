//===- Attention.cu - fused attention: online softmax, no score matrix ----===//
//
// Flash attention's order of work: a thread owns one query row; keys and
// values come through shared memory a tile at a time; each tile's scores
// fold into the row's running maximum and sum and into its output
// (rescaled when the maximum grows). No Sq x Sk scores exist anywhere.
// Around a ring (ring attention) the same kernel folds each device's block
// of keys as it arrives, keeping the rows' state in scratch between blocks,
// with the CPU kernel's block order (Attention.cpp).
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "pccrt/Device.h"
#include "pccrt/Kernels.h"

namespace pccrt {
namespace {

using namespace cuda;

constexpr int kRows = 64;      // query rows (threads) per block
constexpr int kMaxKeys = 64;   // keys per shared-memory tile
constexpr int kSharedBytes = 40 << 10;

struct DeviceMasks {
  const float *add;
  const int64_t *addBatch;
  int64_t addRow, addCol;
  const bool *hide;
  const int64_t *hideBatch;
  int64_t hideRow, hideCol;
  float fill;
};

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
  const bool *hide = m.hide && active ? m.hide + m.hideBatch[b] + i * m.hideRow
                                      : nullptr;
  const float *add = m.add && active ? m.add + m.addBatch[b] + i * m.addRow
                                     : nullptr;
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
      if (hide && hide[col * m.hideCol])
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

void launchFold(Fold f, const DeviceMasks &m, int64_t batch) {
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
  DeviceMasks m{masks.add, nullptr, masks.addRow, masks.addCol, masks.hide,
                nullptr, masks.hideRow, masks.hideCol, masks.fill};
  if (masks.add)
    m.addBatch = static_cast<const int64_t *>(
        deviceTable(masks.addBatch, batch * sizeof(int64_t)));
  if (masks.hide)
    m.hideBatch = static_cast<const int64_t *>(
        deviceTable(masks.hideBatch, batch * sizeof(int64_t)));
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
