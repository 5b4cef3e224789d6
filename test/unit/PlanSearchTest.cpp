//===- PlanSearchTest.cpp - stage balancing and the exact layout search ---===//
//
// balanceStages against brute force on random costs; the exact per-op layout
// search (CBC) against Megatron-LM's fixed layouts costed by the same model:
// an exact search can never do worse than any fixed choice it could make.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Partition/Strategy.h"
#include "pcc/Plan/Cluster.h"
#include "pcc/Plan/ShardingSearch.h"
#include "pcc/Support/StageBalance.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir;
using namespace pcc;

namespace {

/// Each run's sum of `cost`.
std::vector<double> runSums(llvm::ArrayRef<double> cost,
                            const std::vector<int> &starts) {
  std::vector<double> sums;
  for (size_t s = 0; s < starts.size(); ++s) {
    size_t end = s + 1 < starts.size() ? starts[s + 1] : cost.size();
    double sum = 0;
    for (size_t i = starts[s]; i < end; ++i)
      sum += cost[i];
    sums.push_back(sum);
  }
  return sums;
}

double largestRun(llvm::ArrayRef<double> cost, const std::vector<int> &starts) {
  std::vector<double> sums = runSums(cost, starts);
  return sums.empty() ? 0 : *std::max_element(sums.begin(), sums.end());
}

/// The least largest run over every way to cut `cost` into `parts` runs.
double bruteForce(llvm::ArrayRef<double> cost, int parts) {
  int n = cost.size(), best = -1;
  double bestCost = 0;
  for (unsigned mask = 0; mask < (1u << (n - 1)); ++mask) {
    if (__builtin_popcount(mask) != parts - 1)
      continue;
    std::vector<int> starts{0};
    for (int i = 1; i < n; ++i)
      if (mask & (1u << (i - 1)))
        starts.push_back(i);
    double c = largestRun(cost, starts);
    if (best < 0 || c < bestCost)
      best = mask, bestCost = c;
  }
  return bestCost;
}

TEST(StageBalance, MatchesBruteForce) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 10);
  for (int trial = 0; trial < 300; ++trial) {
    int n = 1 + trial % 12, parts = 1 + trial % std::min(n, 5);
    std::vector<double> cost(n);
    for (double &c : cost)
      c = trial % 7 == 0 ? std::floor(u(rng)) : u(rng); // ties and zeros too
    std::vector<int> starts = balanceStages(cost, parts, parts);
    ASSERT_EQ(int(starts.size()), parts);
    ASSERT_EQ(starts.front(), 0);
    for (size_t s = 1; s < starts.size(); ++s)
      ASSERT_LT(starts[s - 1], starts[s]) << "runs must be non-empty";
    ASSERT_LT(starts.back(), n);
    EXPECT_NEAR(largestRun(cost, starts), bruteForce(cost, parts), 1e-9);
  }
}

TEST(StageBalance, MorePartsThanUnits) {
  std::vector<double> cost = {3, 1, 2};
  EXPECT_EQ(balanceStages(cost, 5, 5), (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(balanceStages({}, 3, 3).empty());
  // All-zero costs still give non-empty runs.
  std::vector<double> zeros(6, 0.0);
  EXPECT_EQ(balanceStages(zeros, 3, 3).size(), 3u);
}

// More stages than the largest-stage optimum needs, dealt round robin to
// fewer devices (interleaved 1F1B): a device's chunks add up, so the layers'
// runs are split rather than the run of cheap ops before them.
TEST(StageBalance, ExtraStagesEvenOutTheDevices) {
  std::vector<double> cost = {0.01, 0.01, 0.01, 0.01};
  cost.resize(16, 1.0); // 4 cheap ops, then 12 layers
  // The optimum's largest stage is 2 layers: {0-4}, {5-6}, ..., {15}.
  // Halving the run of most units loads the devices 2.02, 3.02, 4 and 3;
  // splitting two-layer runs, 3.04, 3, 3 and 3.
  EXPECT_EQ(balanceStages(cost, 8, 4),
            (std::vector<int>{0, 5, 6, 7, 9, 11, 13, 15}));
  // A stage per device: the largest stage is all that counts, as before.
  EXPECT_EQ(balanceStages(cost, 8, 8),
            (std::vector<int>{0, 2, 5, 7, 9, 11, 13, 15}));
}

// Layers that do not divide evenly among the chunks (36 in 16 on 4
// devices, as make_gpt.py's 7.5B row at pp4 v4): the largest-stage cut and
// its splits leave a device 10 layers; moving layers across the chunk
// boundaries gives every device 9 (one with the head), no chunk larger.
TEST(StageBalance, ChunksEvenOutAcrossDevices) {
  std::vector<double> cost = {0.005, 0.005, 0.005};
  cost.resize(39, 1.0);
  cost.push_back(0.6); // the head
  // (busiest device, largest chunk)
  auto loads = [&](const std::vector<int> &starts) {
    std::vector<double> device(4, 0.0), sums = runSums(cost, starts);
    for (size_t s = 0; s < sums.size(); ++s)
      device[s % 4] += sums[s];
    return std::pair(*std::max_element(device.begin(), device.end()),
                     largestRun(cost, starts));
  };
  std::vector<int> before = leastLargestStages(cost, 16, 4);
  std::vector<int> after = balanceStages(cost, 16, 4);
  ASSERT_EQ(after.size(), 16u);
  EXPECT_GT(loads(before).first, 10.0);
  EXPECT_NEAR(loads(after).first, 9.6, 1e-9);
  EXPECT_LE(loads(after).second, loads(before).second + 1e-12);
}

// Two repeated blocks (an encoder's layers, then a decoder's): each block's
// copies after the second share the second's slots; every other node has a
// slot of its own.
TEST(NodeCosts, FoldsEachBlockOntoItsSecondCopy) {
  // Nodes 0-1 before; block A: 4 copies of 2 nodes [2, 10); node 10
  // between; block B: 3 copies of 3 nodes [11, 20); nodes 20-21 after.
  std::vector<RepeatedBlock> blocks = {{2, 2, 4, 0}, {11, 3, 3, 4}};
  NodeCosts costs(22, blocks, /*fold=*/true);
  for (int i = 0; i < 22; ++i) {
    bool folded = (i >= 6 && i < 10) || (i >= 17 && i < 20);
    EXPECT_EQ(costs.owns(i), !folded) << "node " << i;
    if (!folded)
      costs[i].compute = i;
  }
  for (int i = 0; i < 22; ++i) {
    int expected = i;
    if (i >= 6 && i < 10)
      expected = 4 + (i - 6) % 2;
    else if (i >= 17 && i < 20)
      expected = 14 + (i - 17);
    EXPECT_EQ(costs[i].compute, expected) << "node " << i;
  }
  NodeCosts unfolded(22, blocks, /*fold=*/false);
  for (int i = 0; i < 22; ++i) {
    EXPECT_TRUE(unfolded.owns(i));
    unfolded[i].compute = i;
  }
  for (int i = 0; i < 22; ++i)
    EXPECT_EQ(unfolded[i].compute, i);
}

class LayoutSearch : public ::testing::Test {
protected:
  LayoutSearch() {
    ctx.loadDialect<PCCDialect, func::FuncDialect, shard::ShardDialect>();
  }

  func::FuncOp parse(StringRef text) {
    module = parseSourceString<ModuleOp>(text, &ctx);
    EXPECT_TRUE(module);
    return module->lookupSymbol<func::FuncOp>("main");
  }

  static Mesh tpMesh(int64_t n) {
    Mesh mesh;
    mesh.shape = {n};
    mesh.axisNames = {"tp"};
    return mesh;
  }

  /// A rank-`rank` layout split on dimension `dim` over the mesh's axis.
  static TensorSharding split(int64_t rank, int64_t dim) {
    TensorSharding t = TensorSharding::replicated(rank);
    t.dims[dim].axes = {0};
    return t;
  }

  static double total(const SearchResult &r) {
    double t = 0;
    for (int i = 0; i < r.costs.size(); ++i)
      t += r.costs[i].compute + r.costs[i].comm;
    return t;
  }

  /// Searched and Megatron-fixed results for `fn` on `tp` devices, each
  /// device holding at most `weightBudget` bytes of weights (0: any).
  std::pair<SearchResult, SearchResult>
  searchAndMegatron(func::FuncOp fn, int64_t tp, double weightBudget = 0) {
    graph = buildPlanGraph(fn);
    auto cluster = loadCluster("dgx-a100");
    EXPECT_TRUE(bool(cluster));
    CostModel cost(*cluster, graph.dtype, tp);
    SearchInput in;
    in.degree = tp;
    in.weightBudget = weightBudget;
    SearchResult searched = searchTensorParallel(graph, cost, in);
    auto byOp = megatronShardings(fn, 1, tp);
    std::vector<OpSharding> fixed;
    for (const PlanNode &n : graph.nodes)
      fixed.push_back(byOp.lookup(n.op));
    in.fixed = &fixed;
    SearchResult megatron = searchTensorParallel(graph, cost, in);
    return {searched, megatron};
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  PlanGraph graph;
};

// A wide MLP whose weights must be split to fit: the search finds
// Megatron's column- then row-parallel pair (one all-reduce), and costs no
// more than it. (With room for whole weights, splitting the rows of x costs
// no communication at all, and the search rightly prefers that; with few
// rows, collective latency makes an all-gather between two column-parallel
// layers cheaper than one all-reduce, and it prefers that too.)
TEST_F(LayoutSearch, MlpFindsColumnThenRow) {
  func::FuncOp fn = parse(R"mlir(
    func.func @main(%x: tensor<2048x1024xf32>) -> tensor<2048x1024xf32> {
      %w1 = pcc.weight "fc1" : tensor<1024x4096xf32>
      %w2 = pcc.weight "fc2" : tensor<4096x1024xf32>
      %h = pcc.matmul %x, %w1 : (tensor<2048x1024xf32>, tensor<1024x4096xf32>) -> tensor<2048x4096xf32>
      %a = pcc.gelu %h : tensor<2048x4096xf32>
      %y = pcc.matmul %a, %w2 : (tensor<2048x4096xf32>, tensor<4096x1024xf32>) -> tensor<2048x1024xf32>
      return %y : tensor<2048x1024xf32>
    })mlir");
  double weights = 2.0 * 1024 * 4096 * 4;
  auto [searched, megatron] = searchAndMegatron(fn, 4, weights / 4 * 1.01);
  ASSERT_TRUE(searched.optimal && searched.feasible);
  EXPECT_LE(total(searched), total(megatron) * (1 + 1e-9));
  // fc1 by columns, fc2 by rows.
  const OpSharding &first = searched.layouts[0].sharding;
  const OpSharding &second = searched.layouts[2].sharding;
  EXPECT_TRUE(first.operands[1].dims[1].isSplit());
  EXPECT_FALSE(first.operands[1].dims[0].isSplit());
  EXPECT_TRUE(second.operands[1].dims[0].isSplit());
  int allReduces = 0;
  for (const NodeLayout &c : searched.layouts)
    for (const PlannedCollective &pc : c.collectives)
      allReduces += pc.kind == CollectiveKind::AllReduce;
  EXPECT_EQ(allReduces, 1);
}

// A training export keeps nn.Linear's weight transpose: the product reads
// the weight through it and is still a linear layer (ZB-H1's weight-gradient
// work, the grids' SUMMA products); a product of two activations is not.
TEST_F(LayoutSearch, TransposedWeightIsALinearLayer) {
  func::FuncOp fn = parse(R"mlir(
    func.func @main(%x: tensor<8x64xf32>) -> tensor<8x8xf32> {
      %w = pcc.weight "fc.weight" : tensor<32x64xf32>
      %t = pcc.transpose %w {perm = array<i64: 1, 0>} : (tensor<32x64xf32>) -> tensor<64x32xf32>
      %h = pcc.matmul %x, %t : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
      %ht = pcc.transpose %h {perm = array<i64: 1, 0>} : (tensor<8x32xf32>) -> tensor<32x8xf32>
      %s = pcc.matmul %h, %ht : (tensor<8x32xf32>, tensor<32x8xf32>) -> tensor<8x8xf32>
      return %s : tensor<8x8xf32>
    })mlir");
  PlanGraph g = buildPlanGraph(fn);
  int products = 0;
  for (const PlanNode &node : g.nodes) {
    if (!isa<MatMulOp>(node.op))
      continue;
    bool readsWeight = ++products == 1;
    EXPECT_EQ(node.linear, readsWeight) << node.name;
    EXPECT_EQ(node.activationMatmul, !readsWeight) << node.name;
  }
  EXPECT_EQ(products, 2);
}

// Attention with a fused QKV projection and a residual: whatever the search
// picks, it is never worse than Megatron's layouts under the same costs.
TEST_F(LayoutSearch, AttentionNoWorseThanMegatron) {
  func::FuncOp fn = parse(R"mlir(
    func.func @main(%x: tensor<4x32x256xf32>) -> tensor<4x32x256xf32> {
      %wqkv = pcc.weight "qkv" : tensor<256x768xf32>
      %wo = pcc.weight "o" : tensor<256x256xf32>
      %qkv = pcc.matmul %x, %wqkv : (tensor<4x32x256xf32>, tensor<256x768xf32>) -> tensor<4x32x768xf32>
      %q, %k, %v = pcc.split %qkv {axis = 2 : i64, sizes = array<i64: 256, 256, 256>} : (tensor<4x32x768xf32>) -> (tensor<4x32x256xf32>, tensor<4x32x256xf32>, tensor<4x32x256xf32>)
      %q4 = pcc.reshape %q {shape = array<i64: 4, 32, 4, 64>} : (tensor<4x32x256xf32>) -> tensor<4x32x4x64xf32>
      %k4 = pcc.reshape %k {shape = array<i64: 4, 32, 4, 64>} : (tensor<4x32x256xf32>) -> tensor<4x32x4x64xf32>
      %v4 = pcc.reshape %v {shape = array<i64: 4, 32, 4, 64>} : (tensor<4x32x256xf32>) -> tensor<4x32x4x64xf32>
      %qt = pcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x32x4x64xf32>) -> tensor<4x4x32x64xf32>
      %kt = pcc.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<4x32x4x64xf32>) -> tensor<4x4x64x32xf32>
      %vt = pcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x32x4x64xf32>) -> tensor<4x4x32x64xf32>
      %s = pcc.matmul %qt, %kt : (tensor<4x4x32x64xf32>, tensor<4x4x64x32xf32>) -> tensor<4x4x32x32xf32>
      %p = pcc.softmax %s {axis = 3 : i64} : tensor<4x4x32x32xf32>
      %o = pcc.matmul %p, %vt : (tensor<4x4x32x32xf32>, tensor<4x4x32x64xf32>) -> tensor<4x4x32x64xf32>
      %ot = pcc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x4x32x64xf32>) -> tensor<4x32x4x64xf32>
      %o3 = pcc.reshape %ot {shape = array<i64: 4, 32, 256>} : (tensor<4x32x4x64xf32>) -> tensor<4x32x256xf32>
      %y = pcc.matmul %o3, %wo : (tensor<4x32x256xf32>, tensor<256x256xf32>) -> tensor<4x32x256xf32>
      %r = pcc.add %x, %y : (tensor<4x32x256xf32>, tensor<4x32x256xf32>) -> tensor<4x32x256xf32>
      return %r : tensor<4x32x256xf32>
    })mlir");
  auto [searched, megatron] = searchAndMegatron(fn, 2);
  ASSERT_TRUE(searched.optimal && searched.feasible);
  ASSERT_EQ(searched.costs.size(), megatron.costs.size());
  EXPECT_LE(total(searched), total(megatron) * (1 + 1e-9));
}

// A fused Q|K|V projection whose weight must be split: the search may split
// its columns group by group (each device whole heads of Q, K and V, as
// Megatron lays them out), so the split into Q, K and V moves nothing.
TEST_F(LayoutSearch, FusedProjectionSplitsGroupByGroup) {
  func::FuncOp fn = parse(R"mlir(
    func.func @main(%x: tensor<4x32x256xf32>) -> tensor<4x4x32x64xf32> {
      %wqkv = pcc.weight "qkv" : tensor<256x768xf32>
      %qkv = pcc.matmul %x, %wqkv : (tensor<4x32x256xf32>, tensor<256x768xf32>) -> tensor<4x32x768xf32>
      %q, %k, %v = pcc.split %qkv {axis = 2 : i64, sizes = array<i64: 256, 256, 256>} : (tensor<4x32x768xf32>) -> (tensor<4x32x256xf32>, tensor<4x32x256xf32>, tensor<4x32x256xf32>)
      %q4 = pcc.reshape %q {shape = array<i64: 4, 32, 4, 64>} : (tensor<4x32x256xf32>) -> tensor<4x32x4x64xf32>
      %k4 = pcc.reshape %k {shape = array<i64: 4, 32, 4, 64>} : (tensor<4x32x256xf32>) -> tensor<4x32x4x64xf32>
      %v4 = pcc.reshape %v {shape = array<i64: 4, 32, 4, 64>} : (tensor<4x32x256xf32>) -> tensor<4x32x4x64xf32>
      %qt = pcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x32x4x64xf32>) -> tensor<4x4x32x64xf32>
      %kt = pcc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x32x4x64xf32>) -> tensor<4x4x32x64xf32>
      %vt = pcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x32x4x64xf32>) -> tensor<4x4x32x64xf32>
      %o = pcc.attention %qt, %kt, %vt {scale = 0.125 : f64} : (tensor<4x4x32x64xf32>, tensor<4x4x32x64xf32>, tensor<4x4x32x64xf32>) -> tensor<4x4x32x64xf32>
      return %o : tensor<4x4x32x64xf32>
    })mlir");
  double weights = 256.0 * 768 * 4;
  auto [searched, megatron] = searchAndMegatron(fn, 2, weights / 2 * 1.01);
  ASSERT_TRUE(searched.optimal && searched.feasible);
  EXPECT_LE(total(searched), total(megatron) * (1 + 1e-9));
  const DimSharding &cols = searched.layouts[0].sharding.operands[1].dims[1];
  EXPECT_TRUE(cols.isSplit());
  EXPECT_EQ(cols.groups, 3);
  for (const NodeLayout &l : searched.layouts)
    EXPECT_TRUE(l.collectives.empty());
}

// A transposed weight (a training export's nn.Linear) gathered for a
// product is the whole weight whatever share of the batch a device runs:
// it does not shrink with the microbatch as activations do.
TEST_F(LayoutSearch, GatheredTransposedWeightIsTheWholeWeight) {
  func::FuncOp fn = parse(R"mlir(
    func.func @main(%x: tensor<64x64xf32>) -> tensor<64x32xf32> {
      %w = pcc.weight "fc.weight" : tensor<32x64xf32>
      %t = pcc.transpose %w {perm = array<i64: 1, 0>} : (tensor<32x64xf32>) -> tensor<64x32xf32>
      %h = pcc.matmul %x, %t : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
      return %h : tensor<64x32xf32>
    })mlir");
  graph = buildPlanGraph(fn);
  ASSERT_EQ(graph.nodes.size(), 2u);
  auto cluster = loadCluster("dgx-a100");
  ASSERT_TRUE(bool(cluster));
  CostModel cost(*cluster, graph.dtype, 2);
  Mesh mesh = tpMesh(2);
  // The transposed weight made split by its columns, read whole by a
  // product on the sequence's rows.
  std::vector<OpSharding> fixed = {
      inferOpSharding(graph.nodes[0].op, {split(2, 0)}, mesh),
      inferOpSharding(graph.nodes[1].op,
                      {split(2, 0), TensorSharding::replicated(2)}, mesh)};
  ASSERT_TRUE(fixed[0].results[0].dims[1].isSplit());
  SearchInput in;
  in.degree = 2;
  in.scale = 1.0 / 64;
  in.fixed = &fixed;
  SearchResult r = searchTensorParallel(graph, cost, in);
  ASSERT_EQ(r.layouts[1].collectives.size(), 1u);
  const PlannedCollective &gather = r.layouts[1].collectives[0];
  EXPECT_EQ(gather.kind, CollectiveKind::AllGather);
  EXPECT_EQ(gather.bytes, 32.0 * 64 * 4);
}

// Selective recompute runs an op again in the backward with its forward
// layout: the objective counts its compute and the gathers of what it
// reads once more, but not the reduction of a kept product's partial sum
// (reduced once for every reader); a kept product reading an op run again
// gathers that op's result again.
TEST_F(LayoutSearch, SelectiveRepeatsWeighGathersNotReductions) {
  func::FuncOp fn = parse(R"mlir(
    func.func @main(%x: tensor<64x64xf32>, %v: tensor<64x64xf32>) -> tensor<64x64xf32> {
      %w = pcc.weight "fc1" : tensor<64x64xf32>
      %h = pcc.matmul %x, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
      %g = pcc.gelu %h : tensor<64x64xf32>
      %y = pcc.matmul %g, %v : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
      return %y : tensor<64x64xf32>
    })mlir");
  graph = buildPlanGraph(fn);
  ASSERT_EQ(graph.nodes.size(), 3u);
  auto cluster = loadCluster("dgx-a100");
  ASSERT_TRUE(bool(cluster));
  CostModel cost(*cluster, graph.dtype, 2);
  Mesh mesh = tpMesh(2);
  auto whole = TensorSharding::replicated(2);
  // fc1 row-parallel (a partial sum), reduce-scattered onto the GELU's
  // rows, gathered whole for a product with another activation.
  std::vector<OpSharding> fixed = {
      inferOpSharding(graph.nodes[0].op, {split(2, 1), split(2, 0)}, mesh),
      inferOpSharding(graph.nodes[1].op, {split(2, 0)}, mesh),
      inferOpSharding(graph.nodes[2].op, {whole, whole}, mesh)};
  ASSERT_FALSE(fixed[0].results[0].partial.empty());
  SearchInput in;
  in.degree = 2;
  in.fixed = &fixed;
  SearchResult once = searchTensorParallel(graph, cost, in);
  std::vector<bool> all(3, true);
  in.repeated = &all;
  SearchResult again = searchTensorParallel(graph, cost, in);
  const NodeCosts &c = again.costs;
  ASSERT_GT(c[1].comm, 0.0);
  ASSERT_GT(c[2].comm, 0.0);
  EXPECT_EQ(c[1].repeatedComm, 0.0); // the reduce-scatter
  EXPECT_EQ(c[2].repeatedComm, c[2].comm); // the gather
  double compute = c[0].compute + c[1].compute + c[2].compute;
  EXPECT_NEAR(again.objective - once.objective, compute + c[2].comm,
              1e-12 * once.objective);
  // Only the GELU run again: the kept product gathers its clone's result
  // again for its gradients (a linear layer's gathered input is
  // weightGradientGather's).
  std::vector<bool> between = {false, true, false};
  in.repeated = &between;
  SearchResult kept = searchTensorParallel(graph, cost, in);
  EXPECT_EQ(kept.costs[0].repeatedComm, 0.0);
  EXPECT_EQ(kept.costs[1].repeatedComm, 0.0);
  EXPECT_EQ(kept.costs[2].repeatedComm, c[2].comm);
  EXPECT_NEAR(kept.objective - once.objective, c[1].compute + c[2].comm,
              1e-12 * once.objective);
}

// What GPU ranks compile a bf16 block to, priced only for them: the QKV
// split and the head transposes around a 64-feature attention move
// nothing (heads read in place), the output projection's product is never
// written (bias and residual in its epilogue); for CPU ranks all of them
// are priced as copies and loops.
TEST_F(LayoutSearch, GpuRanksPriceHeadsInPlaceAndEpilogues) {
  func::FuncOp fn = parse(R"mlir(
    func.func @main(%x: tensor<4x32x256xbf16>) -> tensor<4x32x256xbf16> {
      %wqkv = pcc.weight "qkv" : tensor<256x768xbf16>
      %wo = pcc.weight "o" : tensor<256x256xbf16>
      %bo = pcc.weight "bo" : tensor<256xbf16>
      %qkv = pcc.matmul %x, %wqkv : (tensor<4x32x256xbf16>, tensor<256x768xbf16>) -> tensor<4x32x768xbf16>
      %q, %k, %v = pcc.split %qkv {axis = 2 : i64, sizes = array<i64: 256, 256, 256>} : (tensor<4x32x768xbf16>) -> (tensor<4x32x256xbf16>, tensor<4x32x256xbf16>, tensor<4x32x256xbf16>)
      %q4 = pcc.reshape %q {shape = array<i64: 4, 32, 4, 64>} : (tensor<4x32x256xbf16>) -> tensor<4x32x4x64xbf16>
      %k4 = pcc.reshape %k {shape = array<i64: 4, 32, 4, 64>} : (tensor<4x32x256xbf16>) -> tensor<4x32x4x64xbf16>
      %v4 = pcc.reshape %v {shape = array<i64: 4, 32, 4, 64>} : (tensor<4x32x256xbf16>) -> tensor<4x32x4x64xbf16>
      %qt = pcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x32x4x64xbf16>) -> tensor<4x4x32x64xbf16>
      %kt = pcc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x32x4x64xbf16>) -> tensor<4x4x32x64xbf16>
      %vt = pcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x32x4x64xbf16>) -> tensor<4x4x32x64xbf16>
      %o = pcc.attention %qt, %kt, %vt {scale = 0.125 : f64} : (tensor<4x4x32x64xbf16>, tensor<4x4x32x64xbf16>, tensor<4x4x32x64xbf16>) -> tensor<4x4x32x64xbf16>
      %ot = pcc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x4x32x64xbf16>) -> tensor<4x32x4x64xbf16>
      %o3 = pcc.reshape %ot {shape = array<i64: 4, 32, 256>} : (tensor<4x32x4x64xbf16>) -> tensor<4x32x256xbf16>
      %y = pcc.matmul %o3, %wo : (tensor<4x32x256xbf16>, tensor<256x256xbf16>) -> tensor<4x32x256xbf16>
      %yb = pcc.add %y, %bo : (tensor<4x32x256xbf16>, tensor<256xbf16>) -> tensor<4x32x256xbf16>
      %r = pcc.add %x, %yb : (tensor<4x32x256xbf16>, tensor<4x32x256xbf16>) -> tensor<4x32x256xbf16>
      return %r : tensor<4x32x256xbf16>
    })mlir");
  auto check = [&](bool gpu) {
    PlanGraph g = buildPlanGraph(fn, gpu);
    int views = 0;
    bool productWritten = true;
    for (const PlanNode &n : g.nodes) {
      views += (isa<SplitOp, TransposeOp>(n.op) && n.view);
      if (auto mm = dyn_cast<MatMulOp>(n.op);
          mm && mm.getRhs().getDefiningOp<WeightOp>().getName() == "o")
        productWritten = !n.fusedResult;
    }
    EXPECT_EQ(views, gpu ? 5 : 0);
    EXPECT_EQ(productWritten, !gpu);
  };
  check(/*gpu=*/true);
  check(/*gpu=*/false);
}

// A training step's backward per op: a product's two gradient products, an
// attention's five against its forward's two, one more tensor moved for any
// other op, nothing for a weight's transpose (the transpose of its
// gradient is a view).
TEST_F(LayoutSearch, BackwardWorkPerOp) {
  func::FuncOp fn = parse(R"mlir(
    func.func @main(%x: tensor<2x2x16x64xf32>) -> tensor<2x2x16x64xf32> {
      %w = pcc.weight "w" : tensor<64x64xf32>
      %t = pcc.transpose %w {perm = array<i64: 1, 0>} : (tensor<64x64xf32>) -> tensor<64x64xf32>
      %h = pcc.matmul %x, %t : (tensor<2x2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x2x16x64xf32>
      %g = pcc.gelu %h : tensor<2x2x16x64xf32>
      %o = pcc.attention %g, %g, %g {scale = 0.125 : f64} : (tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32>) -> tensor<2x2x16x64xf32>
      return %o : tensor<2x2x16x64xf32>
    })mlir");
  PlanGraph g = buildPlanGraph(fn);
  int seen = 0;
  for (const PlanNode &n : g.nodes) {
    double expected = isa<TransposeOp>(n.op)   ? 0
                      : isa<MatMulOp>(n.op)    ? 2
                      : isa<AttentionOp>(n.op) ? 2.5
                                               : 1.5;
    EXPECT_EQ(backwardWork(n), expected) << n.name;
    EXPECT_EQ(n.backwardPasses, expected) << n.name;
    seen += isa<TransposeOp, MatMulOp, GeluOp, AttentionOp>(n.op);
  }
  EXPECT_EQ(seen, 4);
}

// An attention the function returns (no merging transpose after it) is
// priced as it is, heads not in place.
TEST_F(LayoutSearch, GpuRanksReturnedAttention) {
  func::FuncOp fn = parse(R"mlir(
    func.func @main(%q: tensor<2x128x2x64xbf16>) -> tensor<2x2x128x64xbf16> {
      %qt = pcc.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x128x2x64xbf16>) -> tensor<2x2x128x64xbf16>
      %o = pcc.attention %qt, %qt, %qt {scale = 0.125 : f64} : (tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>) -> tensor<2x2x128x64xbf16>
      return %o : tensor<2x2x128x64xbf16>
    })mlir");
  PlanGraph g = buildPlanGraph(fn, /*gpuKernels=*/true);
  for (const PlanNode &n : g.nodes)
    EXPECT_FALSE(isa<TransposeOp>(n.op) && n.view);
}

} // namespace
