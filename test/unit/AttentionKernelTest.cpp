//===- AttentionKernelTest.cpp - the CPU attention kernel's tile skipping -===//
//
// Megatron-style exports hide the keys past the diagonal by adding -10000
// to their scores. The kernel skips such tiles only where it can bound every
// score in them far enough under the row's maximum that they add exactly
// nothing: the output is then the causal (-inf) one bit for bit, and keys
// the skipped tiles hold are never read.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace pccrt;

namespace {

constexpr int64_t kSeq = 160, kDim = 16; // three 64-key tiles, the last short

struct Heads {
  std::vector<float> q, k, v;
};

/// Queries and keys of the given spread, values of spread 1.
Heads randomHeads(float spread) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0, 1);
  Heads h;
  for (auto *x : {&h.q, &h.k, &h.v}) {
    x->resize(kSeq * kDim);
    for (float &e : *x)
      e = normal(gen) * (x == &h.v ? 1.0f : spread);
  }
  return h;
}

/// Megatron's mask: -10000 where the key is past the query.
std::vector<float> additiveTriangle() {
  std::vector<float> add(kSeq * kSeq, 0.0f);
  for (int64_t i = 0; i < kSeq; ++i)
    for (int64_t j = i + 1; j < kSeq; ++j)
      add[i * kSeq + j] = -10000.0f;
  return add;
}

std::vector<float> run(const Heads &h, float scale,
                       const AttentionMasks &masks) {
  Mesh mesh;
  std::vector<float> out(kSeq * kDim), scratch(64 * 64 + 2 * kSeq);
  attentionF32(h.q.data(), h.k.data(), h.v.data(), out.data(), 1, kSeq, kSeq,
               kDim, kDim, scale, false, masks, mesh, -1, scratch.data());
  return out;
}

AttentionMasks added(const std::vector<float> &add,
                     const std::vector<int64_t> &batch) {
  AttentionMasks m;
  m.add = add.data();
  m.addBatch = batch.data();
  m.addRow = kSeq;
  m.addCol = 1;
  return m;
}

AttentionMasks causal() {
  AttentionMasks m;
  m.band = true;
  m.hideFrom = 1;
  m.fill = -std::numeric_limits<float>::infinity();
  return m;
}

/// softmax(scale q k^T + add) v in double, every pair.
std::vector<double> reference(const Heads &h, float scale,
                              const std::vector<float> &add) {
  std::vector<double> out(kSeq * kDim, 0.0);
  for (int64_t i = 0; i < kSeq; ++i) {
    std::vector<double> s(kSeq);
    double top = -INFINITY, sum = 0;
    for (int64_t j = 0; j < kSeq; ++j) {
      double x = 0;
      for (int64_t c = 0; c < kDim; ++c)
        x += double(h.q[i * kDim + c]) * h.k[j * kDim + c];
      s[j] = x * scale + add[i * kSeq + j];
      top = std::max(top, s[j]);
    }
    for (double &x : s)
      sum += x = std::exp(x - top);
    for (int64_t j = 0; j < kSeq; ++j)
      for (int64_t c = 0; c < kDim; ++c)
        out[i * kDim + c] += s[j] / sum * h.v[j * kDim + c];
  }
  return out;
}

TEST(AttentionKernel, AdditiveTriangleRunsAsCausal) {
  Heads h = randomHeads(1.0f);
  std::vector<float> add = additiveTriangle();
  std::vector<int64_t> batch = {0};
  // Keys 128 on sit in a tile past the diagonal of query rows 0-63 and
  // 64-127: skipped, they are never read, so NaN there changes nothing.
  Heads poisoned = h;
  for (int64_t j = 128; j < kSeq; ++j)
    for (int64_t c = 0; c < kDim; ++c)
      poisoned.v[j * kDim + c] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> masked = run(h, 0.25f, added(add, batch));
  EXPECT_EQ(masked, run(h, 0.25f, causal()));
  std::vector<float> skipped = run(poisoned, 0.25f, added(add, batch));
  for (int64_t i = 0; i < 128; ++i)
    for (int64_t c = 0; c < kDim; ++c)
      EXPECT_EQ(skipped[i * kDim + c], masked[i * kDim + c]) << i;
}

TEST(AttentionKernel, UnboundedScoresAreNotSkipped) {
  // Scores in the tens of thousands: -10000 no longer hides the keys past
  // the diagonal, and the tiles holding them must be computed.
  Heads h = randomHeads(60.0f);
  std::vector<float> add = additiveTriangle();
  std::vector<int64_t> batch = {0};
  std::vector<float> got = run(h, 1.0f, added(add, batch));
  std::vector<double> want = reference(h, 1.0f, add);
  bool differsFromCausal = false;
  std::vector<float> asCausal = run(h, 1.0f, causal());
  for (size_t e = 0; e < got.size(); ++e) {
    // Scores of 1e4 carry float rounding of about 1e-2 into the weights.
    EXPECT_NEAR(got[e], want[e], 5e-2) << e;
    differsFromCausal |= std::fabs(got[e] - asCausal[e]) > 0.5;
  }
  EXPECT_TRUE(differsFromCausal);
}

} // namespace
