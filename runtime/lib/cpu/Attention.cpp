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

#include "ExpSum.h"

#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

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

/// The Euclidean norm of each of `n` vectors of `d` floats into `norms`; a
/// NaN among them makes the norm infinite, so no bound built on it lets a
/// tile be skipped.
void norms(const float *x, int64_t n, int64_t d, float *norms) {
  for (int64_t i = 0; i < n; ++i) {
    float sq = 0;
    for (int64_t c = 0; c < d; ++c)
      sq += x[i * d + c] * x[i * d + c];
    norms[i] =
        std::isnan(sq) ? std::numeric_limits<float>::infinity() : std::sqrt(sq);
  }
}

/// Under an additive mask, a score of row i is at most |scale| ||q_i||
/// max_j ||k_j|| (Cauchy-Schwarz) plus its mask value (its fill where
/// hidden). The norms are found once per problem and row block, and only
/// for tiles whose mask values are low enough to need them.
struct ScoreBounds {
  std::vector<float> keyTiles; // per key tile of the problem, max ||k_j||
  float rows[kBlock];          // ||q_i|| of the row block
  bool rowsKnown = false;

  /// Starts problem `b` (its keys `k`: [sk, d]).
  void startProblem(const Problem &p, const float *k) {
    keyTiles.assign((p.sk + kBlock - 1) / kBlock, -1.0f);
    keysOf = k;
    rowsKnown = false;
  }
  float keyTile(const Problem &p, int64_t j0, int64_t cols) {
    float &top = keyTiles[j0 / kBlock];
    if (top < 0) {
      float n[kBlock];
      norms(keysOf + j0 * p.d, cols, p.d, n);
      top = *std::max_element(n, n + cols);
    }
    return top;
  }
  float row(const Problem &p, int64_t b, int64_t i0, int64_t i,
            int64_t rowsInBlock) {
    if (!rowsKnown)
      norms(p.q + (b * p.sq + i0) * p.d, rowsInBlock, p.d, rows);
    rowsKnown = true;
    return rows[i];
  }

private:
  const float *keysOf = nullptr;
};

/// tileAddsNothing under an additive mask: the tile adds exactly nothing to
/// rows whose maximum so far is that far above all of its bounded scores.
/// Megatron's -10000 triangle passes for the keys past the diagonal unless
/// scores reach the hundreds. The bound is widened for the rounding of the
/// products and norms.
bool boundedTileAddsNothing(const Problem &p, ScoreBounds &bounds, int64_t b,
                            int64_t i0, int64_t rows, int64_t j0, int64_t col0,
                            int64_t cols) {
  const AttentionMasks &m = p.masks;
  bool fillHides = std::isinf(m.fill) && m.fill < 0;
  float factor = std::fabs(p.divide ? 1.0f / p.scale : p.scale);
  const float lowest = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < rows; ++i) {
    float best = p.rowMax[b * p.sq + i0 + i];
    const float *a = m.add + m.addBatch[b] + (i0 + i) * m.addRow;
    const bool *h =
        m.hide ? m.hide + m.hideBatch[b] + (i0 + i) * m.hideRow : nullptr;
    float shownTop = lowest, hiddenTop = lowest;
    if (!h && !m.band) {
      for (int64_t j = 0; j < cols; ++j) {
        float x = a[(col0 + j) * m.addCol];
        shownTop = x > shownTop ? x : shownTop;
      }
    } else {
      for (int64_t j = 0; j < cols; ++j) {
        bool hidden =
            h ? h[(col0 + j) * m.hideCol] : col0 + j - (i0 + i) >= m.hideFrom;
        float x = a[(col0 + j) * m.addCol];
        float &top = hidden ? hiddenTop : shownTop;
        top = x > top ? x : top;
      }
    }
    if (!fillHides && !(m.fill + hiddenTop - best < kNoContribution))
      return false;
    if (shownTop == lowest)
      continue;
    // The bound is not negative: a mask value this close rules it out.
    if (!(shownTop - best < kNoContribution))
      return false;
    float bound =
        factor * bounds.row(p, b, i0, i, rows) * bounds.keyTile(p, j0, cols);
    if (!(bound * 1.001f + 1.0f + shownTop - best < kNoContribution))
      return false;
  }
  return true;
}

/// Whether every score of the tile adds exactly nothing to rows that have
/// already seen a larger one (so the tile can be skipped, bit for bit):
/// hidden under an -inf fill or a fill far under the rows' maxima, or
/// bounded that far under them with an additive mask.
bool tileAddsNothing(const Problem &p, ScoreBounds &bounds, int64_t b,
                     int64_t i0, int64_t rows, int64_t j0, int64_t col0,
                     int64_t cols) {
  const AttentionMasks &m = p.masks;
  if (m.add)
    return boundedTileAddsNothing(p, bounds, b, i0, rows, j0, col0, cols);
  if (!(m.hide || m.band))
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
    if (!h && !a) {
      // A band's (or no mask's) visible columns come first: scaled in a
      // loop without branches, the rest filled (the same values).
      int64_t seen = cols;
      if (m.band)
        seen = std::clamp<int64_t>(m.hideFrom + (i0 + i) - col0, 0, cols);
      if (p.divide)
        for (int64_t j = 0; j < seen; ++j)
          row[j] /= p.scale;
      else
        for (int64_t j = 0; j < seen; ++j)
          row[j] *= p.scale;
      for (int64_t j = 0; j < seen; ++j)
        best = row[j] > best ? row[j] : best;
      for (int64_t j = seen; j < cols; ++j)
        row[j] = m.fill;
      if (seen < cols)
        best = m.fill > best ? m.fill : best;
    } else {
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
    }
    int64_t r = b * p.sq + i0 + i;
    float old = p.rowMax[r], now = old > best ? old : best;
    float *o = p.out + r * p.dv;
    if (now == neg) { // nothing visible in this row yet
      std::memset(row, 0, cols * sizeof(float));
      continue;
    }
    float alpha = std::exp(old - now);
    float sum = expShiftedSum(row, row, cols, now);
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
  ScoreBounds bounds;
  for (int64_t b = 0; b < batch; ++b) {
    const float *kb = k + b * p.sk * p.d, *vb = v + b * p.sk * p.dv;
    if (p.masks.add)
      bounds.startProblem(p, kb);
    for (int64_t i0 = 0; i0 < p.sq; i0 += kBlock) {
      int64_t rows = p.sq - i0 < kBlock ? p.sq - i0 : kBlock;
      bounds.rowsKnown = false;
      for (int64_t j0 = 0; j0 < p.sk; j0 += kBlock) {
        int64_t cols = p.sk - j0 < kBlock ? p.sk - j0 : kBlock;
        if (tileAddsNothing(p, bounds, b, i0, rows, j0, col0 + j0, cols))
          continue;
        foldTile(p, kb, vb, b, i0, rows, j0, col0 + j0, cols);
      }
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
