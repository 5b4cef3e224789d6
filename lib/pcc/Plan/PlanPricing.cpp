//===- PlanPricing.cpp - what a candidate's layouts cost, stage by stage --===//
//
// Invariants: nothing here searches; every function reads one layout (or
// the graph) and the cost model.
//
//===----------------------------------------------------------------------===//

#include "PlanPricing.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "llvm/ADT/DenseSet.h"

#include <climits>
#include <numeric>

using namespace mlir;

namespace pcc::planning {

namespace {

/// Global (M, K, N) of a linear node with its weight, if it has that form
/// (grouped convolutions count all groups' output channels in N).
std::optional<std::tuple<double, double, double>> gemmDims(Operation *op) {
  auto contraction = dyn_cast<ContractionOpInterface>(op);
  if (!contraction || isa<AttentionOp>(op))
    return std::nullopt;
  if (auto mm = dyn_cast<MatMulOp>(op))
    if (!mm.getRhs().getDefiningOp<WeightOp>() ||
        shapeOf(mm.getRhs()).size() != 2)
      return std::nullopt;
  GemmShape s = contraction.gemmShape();
  return std::make_tuple(double(s.m), double(s.k), double(s.n * s.batch));
}

} // namespace

/// Closed-form costs of Colossal-AI's 2D (SUMMA), 2.5D (Tesseract) and 3D
/// linear layers: every activation is spread over all `size` devices;
/// linear layers broadcast (2D, 2.5D: q steps along rows and columns) or
/// all-gather and reduce-scatter (3D) their blocks; layer norms all-reduce
/// their row statistics.
SearchResult gridLayout(const PlanGraph &g, const CostModel &cost,
                        const Grid &grid, double scale,
                        const ClusterSpec &cluster, bool layouts) {
  SearchResult r;
  r.optimal = true;
  r.costs = NodeCosts(g.nodes.size(), g.blocks, /*fold=*/true);
  if (layouts)
    r.layouts.resize(g.nodes.size());
  double eb = g.elementBytes;
  int64_t q = grid.q;
  bool crossCol = groupCrossesNodes(1, q, cluster);
  bool crossRow = groupCrossesNodes(q, q, cluster);
  bool crossDepth = groupCrossesNodes(q * q, grid.depth, cluster);
  double weightShare =
      grid.mode == TensorMode::ThreeD ? double(q * q * q) : double(q * q);
  for (auto [i, node] : llvm::enumerate(g.nodes)) {
    NodeCost &c = r.costs[i];
    // Block copies cost what the first copy costs.
    if (const RepeatedBlock *b = g.blockOf(i);
        b && int(i) >= b->begin + b->period) {
      if (r.costs.owns(i))
        c = r.costs[i - b->period];
      if (layouts)
        r.layouts[i] = r.layouts[i - b->period];
      continue;
    }
    Operation *op = node.op;
    double weightBytes = node.params * eb;
    double actBytes = std::max(0.0, node.bytes - weightBytes);
    c.compute = node.view || node.epilogue
                    ? 0
                    : cost.kernelTime(node.flops * scale / grid.size,
                                      actBytes * scale / grid.size +
                                          weightBytes / weightShare,
                                      node.fusedResult && !node.epilogueAdds, 0,
                                      node.launches, node.viaBlas);
    c.weightBytes = weightBytes / weightShare;
    for (auto [operand, first] : node.sharedWeights)
      c.sharedWeightBytes += tensorBytes(op->getOperand(operand)) / weightShare;
    for (unsigned operand : node.frozenWeights)
      c.frozenWeightBytes += tensorBytes(op->getOperand(operand)) / weightShare;
    if (!node.view)
      for (Value v : op->getResults())
        c.resultBytes += tensorBytes(v) * resultShare(node, scale) / grid.size;
    auto add = [&](CollectiveKind kind, double bytes, int64_t n, bool cross,
                   double times) {
      double t = times * cost.collectiveTime(kind, bytes, n, cross);
      c.comm += t;
      if (layouts)
        r.layouts[i].collectives.push_back({kind, int(i), bytes, t});
    };
    if (auto dims = node.linear ? gemmDims(op) : std::nullopt) {
      auto [m, k, n] = *dims;
      switch (grid.mode) {
      case TensorMode::TwoD:
      case TensorMode::TwoPointFiveD: {
        double rows = grid.mode == TensorMode::TwoD ? q : q * grid.depth;
        add(CollectiveKind::Broadcast, m * k * eb * scale / (rows * q), q,
            crossCol, q);
        add(CollectiveKind::Broadcast, k * n * eb / (q * q), q, crossRow, q);
        break;
      }
      case TensorMode::ThreeD:
        add(CollectiveKind::AllGather, m * k * eb * scale / (q * q), q,
            crossCol, 1);
        add(CollectiveKind::AllGather, k * n * eb / (q * q), q, crossRow, 1);
        add(CollectiveKind::ReduceScatter, m * n * eb * scale / (q * q), q,
            crossDepth, 1);
        break;
      case TensorMode::OneD:
        break;
      }
    } else if (isa<LayerNormOp>(op)) {
      auto t = cast<RankedTensorType>(op->getResult(0).getType());
      double rowsTotal =
          double(t.getNumElements()) / double(t.getShape().back());
      add(CollectiveKind::AllReduce, 2 * 4 * rowsTotal * scale / grid.size * q,
          q, crossCol, 1);
    }
  }
  return r;
}

namespace {
/// Whether `softmax` makes attention probabilities: over the keys (the last
/// axis) of a `[batch, heads, rows, keys]` tensor that, through dropout or
/// a cast, multiplies the values (a product of two activations).
bool attentionProbabilities(SoftmaxOp softmax) {
  ArrayRef<int64_t> shape = shapeOf(softmax.getInput());
  int64_t rank = shape.size();
  if (rank < 4 || (softmax.getAxis() != rank - 1 && softmax.getAxis() != -1))
    return false;
  SmallVector<Value> probs{softmax.getResult()};
  for (size_t i = 0; i < probs.size(); ++i)
    for (Operation *user : probs[i].getUsers()) {
      if (isa<DropoutOp, CastOp>(user))
        probs.push_back(user->getResult(0));
      else if (auto mm = dyn_cast<MatMulOp>(user))
        if (mm.getLhs() == probs[i] && !mm.getRhs().getDefiningOp<WeightOp>())
          return true;
    }
  return false;
}
} // namespace

/// The heads of the model's attention (Q `[batch, heads, rows, d]` of a
/// fused attention, or the probabilities of one written out, as training
/// exports with dropout on them are): their gcd, or 0 when no op shows them.
int64_t headCount(const PlanGraph &g) {
  int64_t heads = 0;
  for (const PlanNode &node : g.nodes)
    if (auto attn = dyn_cast<AttentionOp>(node.op)) {
      ArrayRef<int64_t> q = shapeOf(attn.getQuery());
      if (q.size() >= 4)
        heads = std::gcd(heads, q[q.size() - 3]);
    } else if (auto softmax = dyn_cast<SoftmaxOp>(node.op);
               softmax && attentionProbabilities(softmax)) {
      ArrayRef<int64_t> p = shapeOf(softmax.getInput());
      heads = std::gcd(heads, p[p.size() - 3]);
    }
  return heads;
}

std::vector<Unit> makeUnits(const PlanGraph &g) {
  std::vector<Unit> units;
  int n = g.nodes.size();
  for (int i = 0; i < n;) {
    if (const RepeatedBlock *b = g.blockOf(i)) {
      for (int j = 0; j < b->count; ++j)
        units.push_back({i + j * b->period, i + (j + 1) * b->period - 1,
                         int(b - g.blocks.data())});
      i = b->end();
      continue;
    }
    units.push_back({i, i, -1});
    ++i;
  }
  return units;
}

/// Peak bytes of live results on one device while the nodes [first, last]
/// run one microbatch, as the code generator allocates them: a result lives
/// from its op to its last reader in the range (to the range's end when a
/// later stage or the model's output reads it); fused results and views take
/// none; values received from earlier stages live through the range.
/// Per node, the last node that reads its result (the node count for a
/// model output, -1 for none). Layout-independent: computed once a search.
std::vector<int> lastUses(const PlanGraph &g) {
  int n = g.nodes.size();
  std::vector<int> lastUse(n, -1);
  for (int i = 0; i < n; ++i)
    for (int p : g.nodes[i].producers)
      if (p >= 0)
        lastUse[p] = std::max(lastUse[p], i);
  for (auto [node, result] : g.outputs)
    lastUse[node] = n;
  return lastUse;
}

double peakLiveBytes(const PlanGraph &g, const SearchResult &layout,
                     ArrayRef<int> lastUse, int first, int last) {
  auto bytes = [&](int i) {
    return g.nodes[i].fusedResult ? 0.0 : layout.costs[i].resultBytes;
  };
  std::vector<std::vector<int>> freedAfter(last - first + 1);
  double live = 0, peak = 0;
  for (int j = 0; j < first; ++j)
    if (lastUse[j] >= first)
      live += bytes(j);
  for (int i = first; i <= last; ++i)
    if (lastUse[i] >= 0)
      freedAfter[std::min(lastUse[i], last) - first].push_back(i);
  for (int i = first; i <= last; ++i) {
    live += bytes(i);
    peak = std::max(peak, live + layout.costs[i].scratchBytes);
    for (int j : freedAfter[i - first])
      live -= bytes(j);
  }
  return peak;
}

TransferEdges transferEdges(const PlanGraph &g) {
  int n = g.nodes.size();
  TransferEdges t;
  t.placedAt.assign(n, INT_MAX);
  for (int i = n - 1; i >= 0; --i) {
    if (!g.nodes[i].derived)
      t.placedAt[i] = i;
    for (int p : g.nodes[i].producers)
      if (p >= 0 && g.nodes[p].derived)
        t.placedAt[p] = std::min(t.placedAt[p], t.placedAt[i]);
  }
  for (int i = 0; i < n; ++i)
    if (t.placedAt[i] == INT_MAX)
      t.placedAt[i] = i;
  for (auto [i, node] : llvm::enumerate(g.nodes)) {
    if (node.derived)
      continue;
    for (auto [k, p] : llvm::enumerate(node.producers)) {
      // A value of constants alone is made in each stage that reads it.
      if (p < 0 || g.nodes[p].madeOfConstants)
        continue;
      Value v = node.op->getOperand(k);
      int base = p;
      while (isa<ReshapeOp>(g.nodes[base].op) &&
             g.nodes[base].producers[0] >= 0)
        base = g.nodes[base].producers[0];
      // The producer's local result bytes, shared out by result size.
      double all = 0;
      for (Value r : g.nodes[base].op->getResults())
        all += tensorBytes(r);
      double share = all > 0 ? tensorBytes(v) / all : 1;
      t.edges.push_back({int(i), p, base, share, v.getAsOpaquePointer()});
    }
  }
  return t;
}

/// The values each stage sends later ones, one per (value, receiving
/// stage), with the bytes of one device's block per microbatch.
std::vector<PlanCandidate::StageTransfer>
stageTransfers(const TransferEdges &t, const SearchResult &layout,
               ArrayRef<int> stageBegin) {
  // Per position, the stage it is in (placements are positions).
  std::vector<int> stage(t.placedAt.size());
  for (size_t s = 0; s < stageBegin.size(); ++s)
    std::fill(stage.begin() + stageBegin[s],
              s + 1 < stageBegin.size() ? stage.begin() + stageBegin[s + 1]
                                        : stage.end(),
              int(s));
  std::vector<PlanCandidate::StageTransfer> out;
  llvm::SmallDenseSet<std::pair<const void *, int64_t>, 32> seen;
  for (const TransferEdges::Edge &e : t.edges) {
    int64_t from = stage[t.placedAt[e.producer]],
            to = stage[t.placedAt[e.consumer]];
    if (from >= to || !seen.insert({e.value, to}).second)
      continue;
    out.push_back(
        {e.producer, from, to, layout.costs[e.base].resultBytes * e.share, 0});
  }
  return out;
}

/// Bytes each copy of block `b` passes to the next (the residual stream).
double blockBoundaryBytes(const PlanGraph &g, const RepeatedBlock &b,
                          const SearchResult &layout) {
  double bytes = 0;
  llvm::SmallDenseSet<int> seen;
  int second = b.begin + b.period;
  for (int i = second; i < second + b.period; ++i)
    for (int p : g.nodes[i].producers)
      if (p >= b.begin && p < second && seen.insert(p).second)
        bytes += layout.costs[p].resultBytes;
  return bytes;
}

Mesh tensorLayoutMesh(const PlanCandidate &c) {
  if (c.mode != TensorMode::OneD)
    return tensorGridMesh(c.mode, c.q, c.depth);
  Mesh m;
  m.shape = {c.tp};
  m.axisNames = {"tp"};
  return m;
}

WholeOverDp wholeOverDp(const PlanGraph &g, int i, const OpSharding &s,
                        const Mesh &mesh, int64_t dp) {
  WholeOverDp out;
  const PlanNode &node = g.nodes[i];
  for (auto [k, v] : llvm::enumerate(node.op->getOperands())) {
    bool shared = llvm::any_of(node.sharedWeights, [&](const auto &e) {
      return e.first == unsigned(k);
    });
    if (!v.getDefiningOp<WeightOp>() || !isa<FloatType>(elementTypeOf(v)) ||
        k >= s.operands.size() ||
        llvm::is_contained(node.frozenWeights, unsigned(k)) || shared)
      continue;
    bool stored =
        k < s.storedOperands.size() && !s.storedOperands[k].dims.empty();
    const TensorSharding &held = stored ? s.storedOperands[k] : s.operands[k];
    if (zeroSplitDim(shapeOf(v), held, mesh, dp, stored) >= 0)
      continue;
    ++out.tensors;
    ++out.forwardReads;
    out.bytes += shapeBytes(localShape(shapeOf(v), held, mesh), elementTypeOf(v));
  }
  return out;
}

} // namespace pcc::planning
