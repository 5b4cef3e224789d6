//===- CostModelTest.cpp - cluster specs and the cost model ---------------===//

#include "pcc/Plan/Cluster.h"
#include "pcc/Plan/CostModel.h"
#include "pcc/Plan/Planner.h"

#include <gtest/gtest.h>

using namespace pcc;

namespace {

ClusterSpec preset(const char *name) {
  auto spec = loadCluster(name);
  EXPECT_TRUE(bool(spec)) << name;
  return spec ? *spec : ClusterSpec();
}

TEST(Cluster, PresetsRoundTripThroughJSON) {
  for (const char *name : {"dgx-a100", "dgx-h100", "h200"}) {
    ClusterSpec a = preset(name);
    auto b = parseCluster(clusterToJSON(a), name);
    ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
    EXPECT_EQ(a.name, b->name);
    EXPECT_EQ(a.devicesPerNode, b->devicesPerNode);
    EXPECT_NEAR(a.peak("bf16"), b->peak("bf16"), 1);
    EXPECT_NEAR(a.interNode.bandwidth, b->interNode.bandwidth, 1);
    EXPECT_NEAR(a.memoryBytes, b->memoryBytes, 1);
  }
  EXPECT_DOUBLE_EQ(preset("dgx-a100").peak("bf16"), 312e12);
  EXPECT_DOUBLE_EQ(preset("h200").memoryBandwidth, 4800e9);
}

TEST(Cluster, RejectsBadSpecs) {
  auto missing = parseCluster(R"({"name": "x"})", "x.json");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(llvm::toString(missing.takeError()).find("nodes"),
            std::string::npos);
  auto notJson = parseCluster("{", "y.json");
  ASSERT_FALSE(bool(notJson));
  llvm::consumeError(notJson.takeError());
}

// The ring factors nccl-tests uses to turn algorithm into bus bandwidth.
TEST(CostModel, CollectivesFollowRingFactors) {
  ClusterSpec c = preset("dgx-a100");
  c.intraNode.latency = 0;
  c.networkEfficiency = 1;
  CostModel m(c, "bf16", 8);
  double bytes = 1e9, bw = c.intraNode.bandwidth;
  EXPECT_NEAR(m.collectiveTime(CollectiveKind::AllReduce, bytes, 8, false),
              2.0 * 7 / 8 * bytes / bw, 1e-12);
  EXPECT_NEAR(m.collectiveTime(CollectiveKind::AllGather, bytes, 8, false),
              7.0 / 8 * bytes / bw, 1e-12);
  EXPECT_NEAR(m.collectiveTime(CollectiveKind::ReduceScatter, bytes, 4, false),
              3.0 / 4 * bytes / bw, 1e-12);
  EXPECT_EQ(m.collectiveTime(CollectiveKind::AllReduce, bytes, 1, false), 0);
  // Crossing nodes uses the slower link.
  EXPECT_GT(m.collectiveTime(CollectiveKind::AllReduce, bytes, 8, true),
            m.collectiveTime(CollectiveKind::AllReduce, bytes, 8, false));
}

TEST(CostModel, RooflineKernels) {
  ClusterSpec c = preset("dgx-a100");
  CostModel m(c, "bf16", 1);
  double launch = c.kernelOverhead;
  // Compute-bound: FLOPs at gemm efficiency x peak.
  EXPECT_NEAR(m.kernelTime(1e15, 1e6) - launch, 1e15 / (312e12 * 0.8), 1e-9);
  // Memory-bound: bytes at memory efficiency x bandwidth.
  EXPECT_NEAR(m.kernelTime(1e3, 1e10) - launch, 1e10 / (2039e9 * 0.8), 1e-9);
  EXPECT_NEAR(m.kernelTime(1e3, 1e10, /*fused=*/true), 1e10 / (2039e9 * 0.8),
              1e-9);
}

TEST(Planner, GroupsCrossNodesByStride) {
  ClusterSpec c = preset("dgx-a100"); // 8 per node
  EXPECT_FALSE(groupCrossesNodes(1, 8, c));
  EXPECT_FALSE(groupCrossesNodes(2, 4, c));
  EXPECT_TRUE(groupCrossesNodes(8, 2, c));
  EXPECT_TRUE(groupCrossesNodes(1, 16, c));
  EXPECT_TRUE(groupCrossesNodes(1, 3, c)); // 3 does not tile a node
  EXPECT_FALSE(groupCrossesNodes(4, 1, c));
}

} // namespace
