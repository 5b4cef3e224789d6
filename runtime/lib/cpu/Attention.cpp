//===- Attention.cpp - blocked attention, on one device or around a ring --===//
//
// Flash-attention's order of work on the CPU: for each block of query rows
// and each block of keys, one GEMM gives a kBlock x kBlock tile of scores,
// the masks apply, and the tile folds into the rows' running maximum and
// sum and into the output (rescaled when the maximum grows): the whole
// Sq x Sk scores are never held. Around a ring the key/value blocks of the
// group's devices pass from each device to the next while the current one
// is folded in, so every device sees every key and holds only two blocks.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace pccrt {
namespace {

constexpr int64_t kBlock = 64;

/// expf of anything below this is exactly 0 in float (below the smallest
/// denormal): a hidden score this far under its row's maximum adds nothing.
constexpr float kNoContribution = -104.0f;

struct Problem {
  const float *q;
  float *out;
  int64_t sq, sk, d, dv;
  float scale;
  bool divide;
  const AttentionMasks &masks;
  float *scores, *rowMax, *rowSum;
};

/// Whether every score of the tile is hidden and adds exactly nothing to
/// rows that have already seen a larger one (so the tile can be skipped).
bool tileAddsNothing(const Problem &p, int64_t b, int64_t i0, int64_t rows,
                     int64_t col0, int64_t cols) {
  const AttentionMasks &m = p.masks;
  if (!(m.hide || m.band) || (m.add && !std::isinf(m.fill)))
    return false;
  // A band hides the tile from every row if it does from the last.
  if (m.band && col0 - (i0 + rows - 1) < m.hideFrom)
    return false;
  for (int64_t i = 0; i < rows; ++i) {
    float best = p.rowMax[b * p.sq + i0 + i];
    if (!std::isinf(m.fill) && !(m.fill - best < kNoContribution))
      return false;
    if (m.band)
      continue;
    const bool *h = m.hide + m.hideBatch[b] + (i0 + i) * m.hideRow;
    for (int64_t j = 0; j < cols; ++j)
      if (!h[(col0 + j) * m.hideCol])
        return false;
  }
  return true;
}

/// Folds keys [j0, j0 + cols) of batch `b` (k, v: this batch's keys;
/// `col0`: the global index of key j0, where masks read) into query rows
/// [i0, i0 + rows).
void foldTile(const Problem &p, const float *k, const float *v, int64_t b,
              int64_t i0, int64_t rows, int64_t j0, int64_t col0,
              int64_t cols) {
  const AttentionMasks &m = p.masks;
  float *s = p.scores;
  gemmF32(false, true, rows, cols, p.d, 1.0f, p.q + (b * p.sq + i0) * p.d,
          p.d, k + j0 * p.d, p.d, 0.0f, s, cols);
  const float neg = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < rows; ++i) {
    float *row = s + i * cols;
    const bool *h =
        m.hide ? m.hide + m.hideBatch[b] + (i0 + i) * m.hideRow : nullptr;
    const float *a =
        m.add ? m.add + m.addBatch[b] + (i0 + i) * m.addRow : nullptr;
    float best = neg;
    for (int64_t j = 0; j < cols; ++j) {
      float x = p.divide ? row[j] / p.scale : row[j] * p.scale;
      if (h ? h[(col0 + j) * m.hideCol]
            : m.band && col0 + j - (i0 + i) >= m.hideFrom)
        x = m.fill;
      if (a)
        x += a[(col0 + j) * m.addCol];
      row[j] = x;
      best = x > best ? x : best;
    }
    int64_t r = b * p.sq + i0 + i;
    float old = p.rowMax[r], now = old > best ? old : best;
    float *o = p.out + r * p.dv;
    if (now == neg) { // nothing visible in this row yet
      std::memset(row, 0, cols * sizeof(float));
      continue;
    }
    float alpha = std::exp(old - now), sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      row[j] = std::exp(row[j] - now);
      sum += row[j];
    }
    p.rowSum[r] = p.rowSum[r] * alpha + sum;
    p.rowMax[r] = now;
    if (alpha != 1.0f)
      for (int64_t c = 0; c < p.dv; ++c)
        o[c] *= alpha;
  }
  gemmF32(false, false, rows, p.dv, cols, 1.0f, s, cols, v + j0 * p.dv, p.dv,
          1.0f, p.out + (b * p.sq + i0) * p.dv, p.dv);
}

/// Folds one device's keys and values (k: [batch, sk, d], v: [batch, sk,
/// dv]) whose first key is global key `col0` into every row.
void foldKeys(const Problem &p, int64_t batch, const float *k, const float *v,
              int64_t col0) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i0 = 0; i0 < p.sq; i0 += kBlock) {
      int64_t rows = p.sq - i0 < kBlock ? p.sq - i0 : kBlock;
      for (int64_t j0 = 0; j0 < p.sk; j0 += kBlock) {
        int64_t cols = p.sk - j0 < kBlock ? p.sk - j0 : kBlock;
        if (tileAddsNothing(p, b, i0, rows, col0 + j0, cols))
          continue;
        foldTile(p, k + b * p.sk * p.d, v + b * p.sk * p.dv, b, i0, rows, j0,
                 col0 + j0, cols);
      }
    }
}

} // namespace

void attentionF32(const float *q, const float *k, const float *v, float *out,
                  int64_t batch, int64_t sq, int64_t sk, int64_t d, int64_t dv,
                  float scale, bool divide, const AttentionMasks &masks,
                  Mesh &mesh, int ringGroup, float *scratch) {
  float *rowMax = scratch + kBlock * kBlock, *rowSum = rowMax + batch * sq;
  for (int64_t r = 0; r < batch * sq; ++r) {
    rowMax[r] = -std::numeric_limits<float>::infinity();
    rowSum[r] = 0;
  }
  std::memset(out, 0, batch * sq * dv * sizeof(float));
  Problem p{q, out, sq, sk, d, dv, scale, divide, masks, scratch, rowMax,
            rowSum};
  if (ringGroup < 0) {
    foldKeys(p, batch, k, v, 0);
  } else {
    // Own block first (it holds the diagonal of a causal mask, so later
    // fully hidden blocks are skipped exactly), then the one from each
    // previous device in turn.
    int64_t n = groupSize(mesh, ringGroup), me = groupIndex(mesh, ringGroup);
    int64_t kElems = batch * sk * d, blockElems = kElems + batch * sk * dv;
    float *cur = rowSum + batch * sq, *next = cur + blockElems;
    std::memcpy(cur, k, kElems * sizeof(float));
    std::memcpy(cur + kElems, v, (blockElems - kElems) * sizeof(float));
    for (int64_t step = 0; step < n; ++step) {
      bool more = step + 1 < n;
      if (more)
        startRingShift(mesh, ringGroup, cur, next, blockElems * sizeof(float));
      int64_t owner = (me - step + n) % n;
      foldKeys(p, batch, cur, cur + kElems, owner * sk);
      if (more)
        finishRingShift(mesh, ringGroup, blockElems * sizeof(float));
      float *t = cur;
      cur = next;
      next = t;
    }
  }
  for (int64_t r = 0; r < batch * sq; ++r) {
    float *o = out + r * dv;
    for (int64_t c = 0; c < dv; ++c)
      o[c] /= rowSum[r];
  }
}

} // namespace pccrt
