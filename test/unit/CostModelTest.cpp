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

/// A calibrated-host-like spec: 2 cores, 100 GFLOP/s, 10 GB/s each.
ClusterSpec host() {
  ClusterSpec c;
  c.name = "host";
  c.devicesPerNode = 2;
  c.sharedCores = true;
  c.peakFlops["fp32"] = 100e9;
  c.memoryBytes = 8e9;
  c.memoryBandwidth = 10e9;
  c.intraNode = c.interNode = {1e9, 1e-6};
  c.gemmEfficiency = c.memoryEfficiency = c.networkEfficiency = 1;
  return c;
}

TEST(CostModel, ThinGemmsFollowTheCalibratedTable) {
  ClusterSpec c = host();
  c.gemmShape = {{16, 0.25}, {256, 1.0}};
  CostModel m(c, "fp32", 1);
  EXPECT_DOUBLE_EQ(m.gemmShapeEfficiency(0), 1);     // not a GEMM
  EXPECT_DOUBLE_EQ(m.gemmShapeEfficiency(8), 0.25);  // clamped below
  EXPECT_DOUBLE_EQ(m.gemmShapeEfficiency(4096), 1);  // clamped above
  EXPECT_NEAR(m.gemmShapeEfficiency(64), 0.625, 1e-12); // half way in log
  EXPECT_NEAR(m.kernelTime(1e9, 0, /*fused=*/true, 16), 1e9 / 25e9, 1e-12);
  // The table round-trips through JSON, sorted.
  c.gemmShape = {{256, 1.0}, {16, 0.25}};
  auto back = parseCluster(clusterToJSON(c), "t.json");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  ASSERT_EQ(back->gemmShape.size(), 2u);
  EXPECT_DOUBLE_EQ(back->gemmShape[0].first, 16);
  EXPECT_TRUE(back->sharedCores);
  auto bad = parseCluster(R"({"name": "x", "nodes": 1, "devices_per_node": 1,
      "peak_tflops": {"fp32": 1}, "memory_gib": 1,
      "memory_bandwidth_gb_s": 1,
      "intra_node": {"bandwidth_gb_s": 1, "latency_us": 1},
      "inter_node": {"bandwidth_gb_s": 1, "latency_us": 1},
      "gemm_efficiency_by_min_dim": [[16, 2]]})",
                          "bad.json");
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("gemm_efficiency_by_min_dim"),
            std::string::npos);
}

TEST(CostModel, RanksBeyondTheCoresShareThem) {
  ClusterSpec c = host();
  c.sharedCoreEfficiency = 0.8;
  c.nodeMemoryBandwidth = 15e9;
  double flops = 1e9;
  // Two ranks on two cores: each core whole; the node's bandwidth split.
  EXPECT_NEAR(CostModel(c, "fp32", 2).kernelTime(flops, 0, true), 0.01, 1e-12);
  EXPECT_NEAR(CostModel(c, "fp32", 2).kernelTime(0, 1e9, true), 1e9 / 7.5e9,
              1e-12);
  // Four ranks: half a core each, at the measured shared efficiency.
  EXPECT_NEAR(CostModel(c, "fp32", 4).kernelTime(flops, 0, true),
              flops / (100e9 * 0.5 * 0.8), 1e-12);
  // GPUs are never shared.
  ClusterSpec gpu = preset("dgx-a100");
  EXPECT_FALSE(gpu.sharedCores);
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
