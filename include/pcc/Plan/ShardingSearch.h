//===- ShardingSearch.h - per-op layouts on one tensor axis -----*- C++ -*-===//
//
// Chooses, for every compute node, how it runs on a 1D tensor-parallel axis
// of t devices: replicated, or with one of the layouts its sharding rule
// allows (a linear layer column- or row-parallel, an elementwise op split on
// any dimension, ...). Each choice has a compute time on the per-device
// shapes; each producer/consumer pair has the time of the collectives that
// turn one layout into the other (exactly those pcc-partition inserts). The
// choice minimising the total is an integer linear program (Alpa's
// intra-operator pass), solved exactly with COIN-OR CBC. For a model built
// from repeated blocks only the first copy of each block and the ops
// outside blocks are variables; a copy is costed `count` times and the edge
// from one copy to the next `count - 1` times, so every copy of a block
// runs the same layouts.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_PLAN_SHARDINGSEARCH_H
#define PCC_PLAN_SHARDINGSEARCH_H

#include "pcc/Sharding/ShardingRules.h"
#include "pcc/Plan/CostModel.h"
#include "pcc/Plan/PlanGraph.h"

#include <array>
#include <memory>
#include <vector>

namespace pcc {

struct PlannedCollective {
  CollectiveKind kind;
  /// Consumer node (or producer, for an in-op or output reduction) and the
  /// bytes of the whole tensor, per microbatch.
  int node = -1;
  double bytes = 0, seconds = 0;
  /// For a reshard between nodes: the node that made the value.
  int producer = -1;
};

/// What one node costs on one device, per microbatch, forward: all that
/// pricing a candidate reads.
struct NodeCost {
  /// Time on the device, and time of the collectives feeding it (and
  /// inside it); local weight and result bytes.
  double compute = 0, comm = 0, weightBytes = 0, resultBytes = 0;
  /// Local bytes of the weights an earlier node reads first
  /// (PlanNode::sharedWeights): not in weightBytes.
  double sharedWeightBytes = 0;
  /// Local bytes of weights not trained (PlanNode::frozenWeights): held,
  /// without gradient or optimizer state; not in weightBytes.
  double frozenWeightBytes = 0;
  /// Workspace the op's kernel holds while it runs (SUMMA's panels, the
  /// attention kernel's tile, row statistics and ring blocks, gathered
  /// operands).
  double scratchBytes = 0;
  /// Training, per step: all-reducing the gradients of weights this op
  /// reads whole while its work is split over the axis (their bytes' time:
  /// the latency is the bucket's, gradSyncBuckets), and reduce-scattering
  /// those stored split.
  double gradSync = 0;
  /// The sets of the mesh's axes those all-reduces run over, bit m for the
  /// axes of mask m: pcc-bucket-gradients sums each set's gradients in one
  /// bucket, whose latency SearchResult::bucketLatency prices once a step.
  uint32_t gradSyncBuckets = 0;
  /// Of weightBytes, what data parallelism's sum does not carry: a weight
  /// whose gradient is partial over n of the axis's devices is summed over
  /// dp in its bucket of those axes (one all-reduce over dp x n, whose
  /// traffic is the n-group's plus an all-reduce of 1/n of it over dp), so
  /// the dp sum carries 1/n of its bytes (bytes x (1 - 1/n) here).
  double gradSyncDpSaving = 0;
  /// Of `comm`, what selective recompute runs again in the backward
  /// (PlanGraph::selectiveAgain): for an op it runs again, its own
  /// collectives and the reshards of what it reads; for a kept
  /// contraction, the reshards of operands an op run again makes (its
  /// gradient products read the clone's result as the forward read it;
  /// a linear layer's gathered input is gathered again anyway:
  /// weightGradientGather).
  /// Never a reduction of a partial value (its maker reduces it once for
  /// every reader; the report, which knows the makers, also repeats a
  /// reduction of a value recompute makes again, rare enough in layers to
  /// leave unpriced).
  double repeatedComm = 0;
  /// Training, per microbatch: the backward's collectives that the forward
  /// has no counterpart of (an input gathered again for a weight's
  /// gradient: weightGradientGather).
  double backwardComm = 0;
  /// Training, a product of trained weights: local bytes of its activation
  /// operands as it reads them (gathered, when resharded to it), which its
  /// weights' gradient reads again; a value read so by an earlier such
  /// product counts there.
  double weightOperandBytes = 0;
};

/// Training: whether `node`, costing `c`, is a product of trained weights
/// (its W part reads its activation operands and its result's gradient).
inline bool isTrainedProduct(const PlanNode &node, const NodeCost &c) {
  return node.linear && !node.derived &&
         (c.weightBytes > 0 || !node.derivedWeights.empty());
}

/// Per-node costs. Copies of a repeated block after the second cost what
/// the second does (they are wired alike) and share its slots: a 96-layer
/// model keeps about two layers' worth for each of the thousands of
/// candidates priced.
class NodeCosts {
public:
  NodeCosts() = default;
  /// `nodes` costs; with `fold`, each block's copies after the second share
  /// the second's.
  NodeCosts(int nodes, llvm::ArrayRef<RepeatedBlock> blocks, bool fold)
      : nodes(nodes) {
    int removed = 0;
    if (fold)
      for (const RepeatedBlock &b : blocks)
        if (b.count > 2) {
          int begin = b.begin + 2 * b.period;
          folds.push_back({begin, b.end(), b.period, removed});
          removed += b.end() - begin;
        }
    stored.resize(nodes - removed);
  }
  const NodeCost &operator[](int i) const { return stored[slot(i)]; }
  NodeCost &operator[](int i) { return stored[slot(i)]; }
  int size() const { return nodes; }
  /// Whether node `i` has a slot of its own.
  bool owns(int i) const {
    return llvm::none_of(
        folds, [&](const Fold &f) { return i >= f.begin && i < f.end; });
  }

private:
  /// Nodes [begin, end) take the slots of the copy before `begin`; `shift`
  /// slots are folded away before them.
  struct Fold {
    int begin, end, period, shift;
  };
  int slot(int i) const {
    int shift = 0;
    for (const Fold &f : folds) {
      if (i < f.begin)
        return i - f.shift;
      if (i < f.end)
        return f.begin - f.period + (i - f.begin) % f.period - f.shift;
      shift = f.shift + (f.end - f.begin);
    }
    return i - shift;
  }
  std::vector<NodeCost> stored;
  llvm::SmallVector<Fold, 2> folds;
  int nodes = 0;
};

/// How one node runs: its layout and the collectives it inserts (what the
/// report shows and the partitioner is told).
struct NodeLayout {
  OpSharding sharding;
  llvm::SmallVector<PlannedCollective, 2> collectives;
};

/// The options and edges the layout search builds for one graph and cost
/// model, kept between searches that differ only in what weighs them
/// (objective weights, the weight price and budget, `repeated`, the
/// microbatches their sums spread over): a planner's frontiers and
/// finalists.
class LayoutOptionsCache {
public:
  LayoutOptionsCache();
  ~LayoutOptionsCache();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

struct SearchInput {
  /// Tensor-parallel degree and whether its group crosses nodes.
  int64_t degree = 1;
  bool crossNode = false;
  /// The batch is also split (data parallelism, or a pipeline's
  /// microbatches): options whose tensor split cannot stack on the batch
  /// split (the compiled program would gather one of them) are left out.
  bool batchSplit = false;
  /// Fraction of the global batch and sequence one device computes per
  /// microbatch (1 / (dp * microbatches * sp)).
  double scale = 1;
  /// Objective weights: the forward passes of compute (1; 2 when training
  /// recomputes the forward; a training step adds each op's backwardWork),
  /// and of collectives 1 for inference; for training the forward and
  /// backward collectives (and recomputed ones).
  double computeWeight = 1, commWeight = 1;
  /// Training under selective recompute: per node, whether the backward
  /// runs it again (PlanGraph::selectiveAgain, or a test's own). Its
  /// compute and what NodeCost::repeatedComm holds weigh once more.
  const std::vector<bool> *repeated = nullptr;
  /// Where searched options are kept between searches of the same graph
  /// and cost model (none: each search builds its own).
  LayoutOptionsCache *cache = nullptr;
  /// Budget for weight bytes x `weightFactor` per device, summed over the
  /// whole model (0: no limit).
  double weightBudget = 0, weightFactor = 1;
  /// Seconds added to the objective per weight byte x `weightFactor` (a
  /// Lagrange multiplier of the budget; 0: weights are free).
  double weightPrice = 0;
  /// Training: microbatches per step (gradient syncs happen once a step).
  bool train = false;
  double microbatches = 1;
  /// Cost this choice (per node; copies use their first copy's) instead of
  /// searching.
  const std::vector<OpSharding> *fixed = nullptr;
  /// `fixed` holds every node's own layout (a strategy's, which may differ
  /// between copies of a repeated block): each copy is priced on its own
  /// rather than as its first copy.
  bool fixedPerCopy = false;
  /// The grid `fixed` is laid out on (a 2D / 2.5D tensor grid); unset: one
  /// axis of `degree` devices.
  const Mesh *grid = nullptr;
  /// Spell out every node's layout and collectives (SearchResult::layouts),
  /// not just its costs: for the plans shown and compiled, not for the
  /// thousands of candidates only priced.
  bool layouts = true;
};

struct SearchResult {
  NodeCosts costs;
  /// Per node, with SearchInput::layouts only (else empty): every copy of
  /// the block gets its copy-0 layout; copies after the second carry their
  /// collectives only, their layout is their first copy's.
  std::vector<NodeLayout> layouts;
  /// The chosen layouts' objective (weight price excluded) and weight
  /// bytes x weightFactor per device, summed over the model.
  double objective = 0, weightBytes = 0;
  /// Per mask of mesh axes (NodeCost::gradSyncBuckets), the latency of
  /// one gradient bucket's all-reduce over them.
  std::array<double, 32> bucketLatency{};
  /// The latency of the buckets `buckets` names.
  double bucketsLatency(uint32_t buckets) const {
    double t = 0;
    for (unsigned m = 0; m < bucketLatency.size(); ++m)
      if (buckets & (1u << m))
        t += bucketLatency[m];
    return t;
  }
  int variables = 0, constraints = 0;
  bool optimal = false, feasible = true;
  double seconds = 0;
};

/// Under selective recompute, whether kept node `reader` reshards again,
/// for its gradient, an operand a recomputed op makes (its gradient
/// products read the clone's result as the forward read it): a
/// contraction does, but not a linear layer's input that the reshard
/// `gathers`, which its weight's gradient gathers again anyway
/// (weightGradientGather).
bool rereadsRecomputedOperand(const PlanNode &reader, bool gathers);

SearchResult searchTensorParallel(const PlanGraph &graph,
                                  const CostModel &cost,
                                  const SearchInput &input);

/// Whether per-node 1D `layouts` on `degree` devices keep both splits when
/// the batch is also split (data parallelism, microbatches): where they do
/// not, the compiled program gathers, which a one-axis pricing misses.
bool layoutsStackOnBatch(const PlanGraph &graph,
                         llvm::ArrayRef<OpSharding> layouts, int64_t degree);

/// Whether per-node `layouts` are the same in every copy of each repeated
/// block (then SearchInput::fixedPerCopy is not needed: each block op is
/// priced once).
bool copiesAlike(const PlanGraph &graph, llvm::ArrayRef<OpSharding> layouts);

/// What a training step's backward pass exchanges on one axis laid out as
/// `layouts` (BackwardCollectives.cpp): per microbatch, the collectives
/// that bring each gradient to the layout its value was made in (`node`:
/// the maker), and the nodes whose weights' gradients are partial sums
/// over the axis (summed with the step's other gradients) with their
/// bytes, and the bytes of the weights whose gradients come out split over
/// it by every reader (summed over the other axes on their own: under
/// sequence parallelism, a relative bias table split by heads). `scale` is
/// the share of the batch one device computes per microbatch;
/// `batchSplit`: data parallelism splits the batch too. `oneAxis`: 1D
/// tensor layouts, where a sum's gradients arriving whole and split are
/// summed on the split and a lookup's on split positions contracted there,
/// as the partitioner does (checked on 1D layouts only: grids' and
/// sequence axes' gradients keep the reshard to the layout made). Found for
/// a report, not while searching.
struct BackwardCollectives {
  std::vector<PlannedCollective> collectives;
  /// Once a step: weight gradients gathered before their update.
  std::vector<PlannedCollective> perStep;
  /// Once a step: the partial gradients of weights stored split over the
  /// axis and read whole, reduce-scattered into their part (ZeRO's
  /// reduce-scatter over dp takes them in: one over both axes).
  std::vector<PlannedCollective> storedScatters;
  /// Once a step: the partial gradients of tables looked up whole on
  /// positions the gradient arrives split in, reduce-scattered into the
  /// table's split (under ZeRO over dp, all-reduced over the axis before
  /// ZeRO's reduce-scatter takes a whole dimension).
  std::vector<PlannedCollective> lookupScatters;
  llvm::SmallVector<int> partialGradientNodes;
  double partialGradientBytes = 0;
  /// The distinct sets of axes those partial gradients are summed over
  /// (pcc-bucket-gradients joins the sums of one set).
  llvm::SmallVector<llvm::SmallVector<int64_t, 2>> gradientSumAxes;
  /// Trained weights whose gradients none of those sums takes in: data
  /// parallelism's bucket sums them over dp alone (a 2.5D grid has none,
  /// its depth splitting the batch).
  int64_t unsummedWeights = 0;
  double splitGradientBytes = 0;
};
BackwardCollectives backwardCollectives(const PlanGraph &graph,
                                        const Mesh &mesh, const CostModel &cost,
                                        double scale, bool crossNode,
                                        bool batchSplit, bool oneAxis,
                                        llvm::ArrayRef<NodeLayout> layouts);

/// Training: a product with a trained weight (`node` of `graph`) reads its
/// activation operand `operand` again in the backward pass, for the
/// weight's gradient. Where the forward pass gathered it (`stored` split,
/// read whole as `layout` says), the backward gathers it again rather than
/// keep the forward's whole copy (Megatron-LM's sequence parallelism) or,
/// where that moves more bytes, runs on the split rows and sums a partial
/// weight gradient into the weight's layout, as the partitioner chooses
/// (gatherCheaperFactor, TrainingPropagation.cpp). `dy`: the output
/// gradient's layout where known (else taken to be the result's). Per
/// microbatch: the seconds (0 when nothing is gathered), the collectives
/// appended to `out`.
double weightGradientGather(const PlanGraph &graph, int node, unsigned operand,
                            const OpSharding &layout,
                            const TensorSharding &stored, const Mesh &mesh,
                            const CostModel &cost, double scale, bool crossNode,
                            llvm::SmallVectorImpl<PlannedCollective> *out,
                            const TensorSharding *dy = nullptr);

/// Training: the backward of an attention laid out as `layout` with its
/// keys split along the queries' rows (ring attention). The step's
/// gradient rule rebuilds the forward's chain, so the backward gathers the
/// keys (twice: two layouts) and values whole and reduce-scatters their
/// gradients, rather than shifting them around the ring again. Per
/// microbatch: the seconds, the collectives appended to `out`.
double ringAttentionBackward(mlir::Operation *attention,
                             const OpSharding &layout, const Mesh &mesh,
                             const CostModel &cost, double scale,
                             bool crossNode,
                             llvm::SmallVectorImpl<PlannedCollective> *out);

/// Time and collectives of turning layout `from` into `to` for a tensor of
/// `bytes` (whole) on `mesh`: the steps of planReshard, priced one by one.
double reshardTime(const TensorSharding &from, const TensorSharding &to,
                   double bytes, const Mesh &mesh, bool crossNode,
                   const CostModel &cost,
                   llvm::SmallVectorImpl<PlannedCollective> *out = nullptr);

} // namespace pcc

#endif // PCC_PLAN_SHARDINGSEARCH_H
