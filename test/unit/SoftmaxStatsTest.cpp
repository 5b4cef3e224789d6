//===- SoftmaxStatsTest.cpp - a split softmax line's merged statistics ----===//

#include "pccrt/SoftmaxStats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace pccrt;

namespace {

/// (max, sum of exp(x - max)) of x[begin, end), as a device's block gives.
std::pair<double, double> blockStats(const std::vector<double> &x, size_t begin,
                                     size_t end) {
  double mx = -std::numeric_limits<double>::infinity(), sum = 0;
  for (size_t i = begin; i < end; ++i)
    mx = std::max(mx, x[i]);
  for (size_t i = begin; i < end; ++i)
    sum += std::exp(x[i] - mx);
  return {mx, sum};
}

/// Lines of 12 split in `devices` blocks, stored as the all-gather leaves
/// them: device r's pairs for every line, then device r + 1's.
void checkMerge(const std::vector<std::vector<double>> &lines, int devices) {
  size_t n = lines[0].size(), block = n / devices, count = lines.size();
  std::vector<double> gathered(2 * count * devices);
  for (int r = 0; r < devices; ++r)
    for (size_t l = 0; l < count; ++l) {
      auto [mx, sum] = blockStats(lines[l], r * block, (r + 1) * block);
      gathered[2 * (r * count + l)] = mx;
      gathered[2 * (r * count + l) + 1] = sum;
    }
  for (size_t l = 0; l < count; ++l) {
    auto [wantMax, wantSum] = blockStats(lines[l], 0, n);
    double mx, sum;
    mergeSoftmaxStats(gathered.data() + 2 * l, devices, 2 * count, mx, sum);
    EXPECT_EQ(mx, wantMax) << "line " << l;
    EXPECT_NEAR(sum, wantSum, 1e-12 * wantSum) << "line " << l;
  }
}

TEST(SoftmaxStats, BlocksMergeToTheWholeLine) {
  std::vector<std::vector<double>> lines;
  for (int l = 0; l < 5; ++l) {
    std::vector<double> x;
    for (int i = 0; i < 12; ++i)
      x.push_back(std::sin(0.7 * i + l) * (l + 1) * 8.0);
    lines.push_back(x);
  }
  for (int devices : {1, 2, 3, 4, 6})
    checkMerge(lines, devices);
}

TEST(SoftmaxStats, HiddenBlocksAddNothing) {
  // A device whose whole block is hidden (-inf: a causal row's future) or
  // padding (the lowest float: a padded vocabulary's last block).
  double inf = std::numeric_limits<double>::infinity();
  double lowest = std::numeric_limits<float>::lowest();
  std::vector<double> causal(12, -inf), padded(12, lowest);
  for (int i = 0; i < 4; ++i)
    causal[i] = padded[i] = 0.5 * i - 1.0;
  checkMerge({causal, padded}, 3);
}

} // namespace
