//===- MemoryPlanTest.cpp - arena placement -------------------------------===//

#include "pcc/Codegen/MemoryPlan.h"

#include <gtest/gtest.h>

#include <random>

using pcc::BufferRequest;
using pcc::planBuffers;

namespace {

bool overlaps(const BufferRequest &a, const BufferRequest &b) {
  bool live = a.start <= b.end && b.start <= a.end;
  bool mem = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
  return live && mem;
}

TEST(MemoryPlan, DisjointLifetimesShareMemory) {
  std::vector<BufferRequest> bufs = {{0, 1, 1000}, {2, 3, 1000}, {4, 5, 1000}};
  EXPECT_EQ(planBuffers(bufs), 1024);
  for (const auto &b : bufs)
    EXPECT_EQ(b.offset, 0);
}

TEST(MemoryPlan, OverlappingLifetimesDoNot) {
  std::vector<BufferRequest> bufs = {{0, 2, 100}, {1, 3, 100}, {2, 4, 100}};
  EXPECT_EQ(planBuffers(bufs), 3 * 128);
  EXPECT_FALSE(overlaps(bufs[0], bufs[1]));
  EXPECT_FALSE(overlaps(bufs[1], bufs[2]));
  EXPECT_FALSE(overlaps(bufs[0], bufs[2]));
}

TEST(MemoryPlan, OffsetsAreAligned) {
  std::vector<BufferRequest> bufs = {{0, 5, 3}, {0, 5, 70}, {0, 5, 1}};
  planBuffers(bufs);
  for (const auto &b : bufs)
    EXPECT_EQ(b.offset % 64, 0);
}

TEST(MemoryPlan, RandomPlansNeverOverlap) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferRequest> bufs;
    for (int i = 0; i < 40; ++i) {
      int64_t s = rng() % 30;
      bufs.push_back({s, s + int64_t(rng() % 10), int64_t(1 + rng() % 5000)});
    }
    int64_t arena = planBuffers(bufs);
    for (size_t i = 0; i < bufs.size(); ++i) {
      EXPECT_LE(bufs[i].offset + bufs[i].bytes, arena);
      for (size_t j = i + 1; j < bufs.size(); ++j)
        EXPECT_FALSE(overlaps(bufs[i], bufs[j])) << "trial " << trial;
    }
  }
}

} // namespace
