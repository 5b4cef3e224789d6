//===- ShardLayoutTest.cpp - device blocks of split tensors ---------------===//
//
// pccrt::copyBlock decides which bytes each rank reads from inputs and which
// weight blocks the compiler writes; checked against a direct per-element
// formula on random layouts, and for round trips. Dropout's placement
// (pccrt::DropoutPlace, whose global indices draw the masks on CPU and GPU
// ranks alike) must name the same elements.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Dropout.h"
#include "pccrt/ShardLayout.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

using pccrt::DimSplit;

namespace {

/// Global index of local element `l` along one dim (the definition).
int64_t globalIndex(int64_t l, int64_t size, int64_t groups, int64_t n,
                    int64_t r) {
  int64_t group = size / groups, piece = group / n;
  return (l / piece) * group + r * piece + l % piece;
}

TEST(ShardLayout, BlocksMatchTheDefinitionAndRoundTrip) {
  std::mt19937 rng(7);
  const int64_t mesh[] = {2, 4};
  for (int trial = 0; trial < 200; ++trial) {
    int rank = 1 + rng() % 3;
    std::vector<int64_t> shape(rank);
    std::vector<DimSplit> splits(rank, DimSplit{0, {0, 0, 0, 0}, 1});
    bool used[2] = {false, false};
    for (int d = 0; d < rank; ++d) {
      int64_t groups = 1 + rng() % 3, n = 1;
      for (int a = 0; a < 2; ++a)
        if (!used[a] && rng() % 2) {
          splits[d].axes[splits[d].numAxes++] = a;
          used[a] = true;
          n *= mesh[a];
        }
      splits[d].groups = splits[d].numAxes ? groups : 1;
      shape[d] = splits[d].groups * n * (1 + rng() % 3);
    }
    int64_t total = std::accumulate(shape.begin(), shape.end(), int64_t(1),
                                    std::multiplies<int64_t>());
    std::vector<int32_t> global(total), rebuilt(total, -1);
    std::iota(global.begin(), global.end(), 0);
    for (int64_t c0 = 0; c0 < mesh[0]; ++c0)
      for (int64_t c1 = 0; c1 < mesh[1]; ++c1) {
        int64_t coords[] = {c0, c1};
        std::vector<int64_t> local(rank), n(rank), r(rank);
        int64_t count = 1;
        for (int d = 0; d < rank; ++d) {
          n[d] = pccrt::splitCount(splits[d], mesh);
          r[d] = pccrt::splitIndex(splits[d], mesh, coords);
          local[d] = shape[d] / n[d];
          count *= local[d];
        }
        std::vector<int32_t> block(count);
        pccrt::copyBlock(true, reinterpret_cast<char *>(global.data()),
                         reinterpret_cast<char *>(block.data()), rank,
                         shape.data(), splits.data(), mesh, coords, 4);
        pccrt::DropoutPlace place;
        ASSERT_TRUE(pccrt::dropoutPlace(rank, local.data(), splits.data(),
                                        mesh, coords, place));
        ASSERT_EQ(place.count, count);
        for (int64_t i = 0; i < count; ++i) {
          int64_t rest = i, g = 0, stride = 1;
          for (int d = rank - 1; d >= 0; --d) {
            int64_t l = rest % local[d];
            rest /= local[d];
            g += globalIndex(l, shape[d], splits[d].groups, n[d], r[d]) * stride;
            stride *= shape[d];
          }
          ASSERT_EQ(block[i], g) << "trial " << trial << " element " << i;
          ASSERT_EQ(place.globalIndex(i), g)
              << "trial " << trial << " element " << i;
        }
        pccrt::copyBlock(false, reinterpret_cast<char *>(rebuilt.data()),
                         reinterpret_cast<char *>(block.data()), rank,
                         shape.data(), splits.data(), mesh, coords, 4);
      }
    EXPECT_EQ(rebuilt, global) << "trial " << trial;
  }
}

} // namespace
