//===- Planner.cpp - search over meshes, stages and microbatches ----------===//
//
// Invariants: every candidate covers all devices (dp * pp * tensor * sp =
// N); the batch splits evenly over dp and microbatches and the sequence
// over sp; each pipeline stage is a contiguous, non-empty run of units
// (single nodes, or whole layers: copies of a repeated block); a candidate's
// costs are shared by all candidates with the same layouts and per-device
// share of the batch, so the tens of thousands of candidates of a
// 1000-GPU search price a few hundred layouts; exact searches run per
// (tensor size, recompute, batch split) along a Lagrangian weight price,
// and once more for each finalist.
//
//===----------------------------------------------------------------------===//

#include "pcc/Plan/Planner.h"
#include "PlanPricing.h"
#include "pcc/Support/StageBalance.h"
#include "pccrt/PipelineSchedule.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <tuple>

using namespace mlir;
using llvm::formatv;

namespace pcc {

using namespace planning;

namespace {

/// Share of device memory a plan may fill: the rest is the framework's
/// workspace (cuBLAS, NCCL buffers) and allocator fragmentation.
constexpr double kUsableMemory = 0.9;
/// Microbatches larger than this only add memory on the devices we model.
constexpr int64_t kMaxMicrobatchSize = 64;

SmallVector<int64_t> divisors(int64_t n) {
  SmallVector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0)
      out.push_back(d);
  return out;
}

int64_t integerRoot(int64_t n, int k) {
  auto r = int64_t(std::llround(std::pow(double(n), 1.0 / k)));
  for (int64_t c = std::max<int64_t>(1, r - 1); c <= r + 1; ++c) {
    int64_t p = 1;
    for (int i = 0; i < k; ++i)
      p *= c;
    if (p == n)
      return c;
  }
  return 0;
}

struct StageSummary {
  double compute = 0, comm = 0, weightBytes = 0, resultBytes = 0,
         inputBytes = 0, gradSync = 0;
  /// The gradient buckets gradSync sums (NodeCost::gradSyncBuckets).
  uint32_t gradSyncBuckets = 0;
  /// Of weightBytes, what the dp sum does not carry
  /// (NodeCost::gradSyncDpSaving).
  double gradSyncDpSaving = 0;
  /// Training: the backward's own collectives (NodeCost::backwardComm).
  double backwardComm = 0;
  /// Of compute, the products with a weight (a backward repeats each
  /// once for the weight's gradient).
  double linearCompute = 0;
  /// The most a repeated layer's copy keeps for its backward: what full
  /// recompute holds again while that layer's backward runs.
  double largestLayerBytes = 0;
  /// Parameter tensors (one reduce-scatter each), ZeRO-3's gathers per
  /// microbatch in the forward pass and in the backward (with the bytes
  /// of those). The largest unit's weights: its gather buffer.
  int64_t weightTensors = 0, forwardReads = 0, backwardTensors = 0;
  double backwardWeightBytes = 0, largestUnitWeightBytes = 0;
  /// Of those, the ones ZeRO keeps whole over dp (all-reduced).
  WholeOverDp wholeOverDp;
  /// The largest one node's weights: the update's new moments of it are
  /// held at once (AdamW).
  double largestNodeWeightBytes = 0;
  /// Selective recompute: the bytes kept per microbatch (layer inputs and
  /// products' results), and the most one layer recomputes.
  double selectiveBytes = 0, largestRecomputedBytes = 0;
  /// The recomputed values of one layer, held while its backward runs.
  double recomputeBuffer = 0;
  /// Tied weights whose first reader runs on another device: a copy of
  /// the weight (and its gradient), without optimizer state.
  double copyWeightBytes = 0;
  /// Weights not trained (--freeze): held, nothing more.
  double frozenWeightBytes = 0;
  /// Activation bytes the stage holds at its peak.
  double activations = 0;
  /// Per microbatch, what a zero-bubble step's W part reads (the weight
  /// readers' inputs and their results' gradients), kept while W is
  /// deferred.
  double weightPassBytes = 0;

  /// Adds another stage of the same device (interleaved 1F1B): sums, the
  /// largest units of both, and one recompute buffer (the larger).
  void addChunk(const StageSummary &o) {
    double sharedBuffer = std::min(recomputeBuffer, o.recomputeBuffer);
    compute += o.compute;
    linearCompute += o.linearCompute;
    comm += o.comm;
    backwardComm += o.backwardComm;
    weightBytes += o.weightBytes;
    frozenWeightBytes += o.frozenWeightBytes;
    gradSync += o.gradSync;
    gradSyncBuckets |= o.gradSyncBuckets;
    gradSyncDpSaving += o.gradSyncDpSaving;
    weightTensors += o.weightTensors;
    forwardReads += o.forwardReads;
    backwardTensors += o.backwardTensors;
    wholeOverDp += o.wholeOverDp;
    backwardWeightBytes += o.backwardWeightBytes;
    resultBytes += o.resultBytes;
    inputBytes += o.inputBytes;
    selectiveBytes += o.selectiveBytes;
    weightPassBytes += o.weightPassBytes;
    largestUnitWeightBytes =
        std::max(largestUnitWeightBytes, o.largestUnitWeightBytes);
    largestNodeWeightBytes =
        std::max(largestNodeWeightBytes, o.largestNodeWeightBytes);
    largestLayerBytes = std::max(largestLayerBytes, o.largestLayerBytes);
    largestRecomputedBytes =
        std::max(largestRecomputedBytes, o.largestRecomputedBytes);
    recomputeBuffer = std::max(recomputeBuffer, o.recomputeBuffer);
    activations += o.activations - sharedBuffer;
  }
};

} // namespace

std::optional<std::pair<int64_t, int64_t>>
tensorGrid(TensorMode mode, int64_t size, int64_t forcedDepth) {
  switch (mode) {
  case TensorMode::OneD:
    return std::make_pair(size, int64_t(1));
  case TensorMode::TwoD:
    if (int64_t q = integerRoot(size, 2); q >= 2)
      return std::make_pair(q, int64_t(1));
    return std::nullopt;
  case TensorMode::TwoPointFiveD:
    // The smallest depth >= 2 whose q x q layer is a square >= 2 x 2 (the
    // largest q): Tesseract's usual shape.
    for (int64_t d = 2; d <= size / 4; ++d)
      if (size % d == 0 && (!forcedDepth || d == forcedDepth))
        if (int64_t q = integerRoot(size / d, 2); q >= 2)
          return std::make_pair(q, d);
    return std::nullopt;
  case TensorMode::ThreeD:
    if (int64_t q = integerRoot(size, 3); q >= 2)
      return std::make_pair(q, q);
    return std::nullopt;
  }
  return std::nullopt;
}

bool groupCrossesNodes(int64_t stride, int64_t size,
                       const ClusterSpec &cluster) {
  if (size <= 1)
    return false;
  int64_t span = stride * size;
  return span > cluster.devicesPerNode || cluster.devicesPerNode % span != 0;
}

ReplicaGroup gradientReplicas(const PlanCandidate &c,
                              const ClusterSpec &cluster) {
  // Not the 2.5D depth: a weight read whole over it has a partial gradient
  // over the depth axis, which the grid's layouts price (gradSync) and the
  // partitioner sums in a bucket of the grid's axes. Counting it here too
  // priced that sum twice (2.5D's gradient time was twice 2D x dp2's).
  ReplicaGroup r;
  r.size = c.dp * c.sp;
  r.crossesNodes = groupCrossesNodes(c.tp, c.dp * c.sp, cluster);
  return r;
}

ReplicaGroup batchReplicas(const PlanCandidate &c, const ClusterSpec &cluster) {
  bool deep = c.mode == TensorMode::TwoPointFiveD;
  ReplicaGroup r;
  r.size = c.dp * (deep ? c.depth : 1);
  r.crossesNodes = groupCrossesNodes(c.tp * c.sp, c.dp, cluster) ||
                   (deep && groupCrossesNodes(c.q * c.q, c.depth, cluster));
  return r;
}

Mesh tensorGridMesh(TensorMode mode, int64_t q, int64_t depth) {
  Mesh m;
  if (mode == TensorMode::TwoPointFiveD) {
    m.shape = {depth, q, q};
    m.axisNames = {"tp_dep", "tp_row", "tp_col"};
  } else if (mode == TensorMode::ThreeD) {
    m.shape = {q, q, q};
    m.axisNames = {"tp_x", "tp_y", "tp_z"};
  } else {
    m.shape = {q, q};
    m.axisNames = {"tp_row", "tp_col"};
  }
  return m;
}

ParallelPlan PlanCandidate::toPlan(bool train) const {
  ParallelPlan p = ParallelPlan::withDegrees(pp, dp, sp, tp);
  p.tensorMode = mode;
  p.tensorDepth = mode == TensorMode::TwoPointFiveD ? depth : 1;
  p.tensorLayouts = layouts;
  p.sequenceMode = spMode;
  p.microbatches = microbatches;
  p.train = train;
  p.recompute = recompute;
  p.zero = zero;
  p.virtualStages = virtualStages;
  p.zeroBubble = zeroBubble;
  return p;
}

std::string PlanCandidate::label() const {
  std::string s = llvm::formatv("dp{0} pp{1} tp{2}", dp, pp, tp);
  if (tp > 1 && mode != TensorMode::OneD)
    s += llvm::formatv(
        mode == TensorMode::TwoPointFiveD ? " ({0} {1}x{1}x{2})" : " ({0} {1}x{1}{3})",
        tensorModeName(mode), q, depth,
        mode == TensorMode::ThreeD ? llvm::formatv("x{0}", q).str() : "");
  if (tp > 1 && layouts == TensorLayouts::Megatron)
    s += " (megatron)";
  if (tp > 1 && layouts == TensorLayouts::MegatronSequence)
    s += " (megatron+sp)";
  if (sp > 1)
    s += llvm::formatv(" sp{0} ({1})", sp, sequenceModeName(spMode));
  s += llvm::formatv(" mb{0}", microbatches);
  if (virtualStages > 1)
    s += llvm::formatv(" v{0}", virtualStages);
  if (zeroBubble)
    s += " zb-h1";
  if (recompute == Recompute::Full)
    s += " recompute";
  else if (recompute == Recompute::Selective)
    s += " recompute-selective";
  if (zero)
    s += llvm::formatv(" zero{0}", zero);
  return s;
}

namespace {

/// The partitioner's layouts on tensor and sequence axes depend on whether
/// the batch is also split over replicas, not (the planner assumes; true of
/// every model in test/ and bench/) on how many: they are derived once per
/// class, 1 or more than 1 (a derivation clones and propagates the whole
/// program, which on a 96-layer GPT took 3 of 10 seconds of planning).
int64_t replicaClass(int64_t dp) { return std::min<int64_t>(dp, 2); }

/// Seed layouts are searched per range of the per-device batch share (a
/// factor of 8 each): the best layout moves with it. A 128-layer GPT on
/// 3072 GPUs seeded at a share of 1/48 priced dp6 pp64 tp8 with 512
/// microbatches of one sample at 258 s a step against 66.6 s for its own
/// layouts (a weight gathered per microbatch costs little beside 64
/// samples' activations and dominates beside one's), and the search
/// missed it.
int shareClass(double scale) { return int(std::floor(std::log2(scale) / 3)); }

/// How a candidate's layouts are found: the seed's choice costed (Priced)
/// or also spelled out per node (Seeded), or an exact search of its own
/// (ExactSummed: with each weight byte priced at what its gradient's sum
/// over the data-parallel replicas costs once a step, which the per-op
/// objective otherwise leaves out).
enum class Pricing { Priced, Seeded, Exact, ExactSummed };

bool isExact(Pricing p) {
  return p == Pricing::Exact || p == Pricing::ExactSummed;
}

/// One run of the search: the model, cluster and options, the caches of
/// searched layouts, and the candidates found. The candidate families are
/// enumerated per kind (pipeline, tensor grid, sequence, data, microbatches,
/// recompute), each costed by `evaluate` through the shared cost model.
class PlanSearch {
public:
  PlanSearch(const PlanGraph &g, const ClusterSpec &cluster,
             const PlanOptions &opt)
      : g(g), cluster(cluster), opt(opt), n(opt.devices),
        cost(cluster, g.dtype, n), eb(g.elementBytes),
        // Training state per parameter: the parameter and its gradient in
        // the model's precision, plus fp32 master copy and Adam's two
        // moments when that precision is 16-bit (Megatron's mixed
        // precision), or just the two moments in fp32.
        stateBytesPerParam(2 * eb + (eb >= 4 ? 8 : 12)), units(makeUnits(g)),
        lastUse(lastUses(g)), edges(transferEdges(g)),
        usable(cluster.memoryBytes * kUsableMemory),
        hasAttention(llvm::any_of(
            g.nodes,
            [](const PlanNode &node) { return isa<AttentionOp>(node.op); })),
        heads(headCount(g)) {
    for (auto [i, node] : llvm::enumerate(g.nodes))
      if (!node.sharedWeights.empty())
        sharedReaders.push_back(i);
    // Selective recompute keeps the products whose results the backward or
    // a recomputed op reads.
    keptBySelective.assign(g.nodes.size(), false);
    for (auto [j, node] : llvm::enumerate(g.nodes))
      for (int p : node.producers)
        if (p >= 0 && (node.savedForBackward || g.nodes[p].savedForBackward) &&
            isa<ContractionOpInterface>(g.nodes[p].op))
          keptBySelective[p] = true;
    recomputedByFull = recomputedNodes(g);
    // A copy's input that ops outside repeated layers make and keep for
    // the backward (the embedding's output a first layer norm reads).
    std::vector<int> unitOf(g.nodes.size(), -1);
    for (auto [u, unit] : llvm::enumerate(units))
      for (int i = unit.first; i <= unit.last; ++i)
        unitOf[i] = u;
    savedInputMakers.resize(units.size());
    for (auto [u, unit] : llvm::enumerate(units))
      for (int i = unit.first; unit.block >= 0 && i <= unit.last; ++i)
        for (int p : g.nodes[i].producers)
          if (p >= 0 && p < unit.first && units[unitOf[p]].block < 0 &&
              g.nodes[p].savedForBackward &&
              !llvm::is_contained(savedInputMakers[u], p))
            savedInputMakers[u].push_back(p);
  }

  /// Enumerates and costs every candidate, re-searches the fastest exactly
  /// and ranks them.
  llvm::Expected<Plan> run();

private:
  using GridShape = std::pair<int64_t, int64_t>;
  struct Stages;

  /// Whether the back end runs `p` (PlanOptions::cannotRun).
  bool runs(const ParallelPlan &p) const {
    return opt.cannotRun && !opt.cannotRun(p);
  }
  /// When searching runnable plans only: whether the back end runs a plan
  /// with just this part (asked once per part).
  bool partRuns(int64_t pp, int64_t sp, int64_t tp, TensorMode mode) const;
  SmallVector<TensorMode, 4> tensorModes() const;
  SmallVector<Recompute, 3> recomputeChoices() const;
  /// ZeRO stages to price over `dp` replicas (2 compiles as 1 does: pcc
  /// reduce-scatters gradients at both).
  SmallVector<int64_t, 3> zeroChoices(int64_t dp) const;
  /// Bytes one parameter costs a device: itself, its gradient and, when
  /// training, the optimizer's state, split over `dp` as ZeRO `zero` says.
  double bytesPerParam(int64_t zero, int64_t dp) const;
  /// The candidate families, outermost first.
  void enumerate();
  void enumerateTensor(int64_t pp, int64_t tg, TensorMode mode,
                       GridShape grid);
  void enumerateBatch(int64_t pp, int64_t tg, TensorMode mode, GridShape grid,
                      int64_t sp, SequenceMode spMode, int64_t dp);

  std::shared_ptr<const SearchResult>
  layoutFor(int64_t pp, int64_t dp, int64_t tg, TensorMode mode, GridShape grid,
            TensorLayouts scheme, int64_t m, Recompute recompute,
            double scale, double cw, double cc, Pricing pricing);
  /// 1D layouts: the exact search, or a choice re-costed at this share.
  std::shared_ptr<const SearchResult>
  oneDimLayout(SearchInput in, int64_t pp, int64_t dp, int64_t tg,
               TensorLayouts scheme, Recompute recompute, Pricing pricing);
  PlanCandidate evaluate(int64_t pp, int64_t tg, TensorMode mode,
                         GridShape grid, TensorLayouts scheme, int64_t sp,
                         SequenceMode spMode, int64_t dp, int64_t m, int64_t v,
                         Recompute recompute, int64_t zero, Pricing pricing,
                         Stages *stagesOut = nullptr);
  /// Microbatches each chunk of each pipeline device holds between its
  /// forward and backward, as the runtime schedules them (cached: a
  /// schedule of m x v units per device).
  const std::vector<std::vector<int64_t>> &
  heldMicrobatches(int64_t pp, int64_t v, int64_t m);
  std::map<std::tuple<int64_t, int64_t, int64_t>,
           std::vector<std::vector<int64_t>>>
      held;
  /// Nodes reading a weight an earlier node reads first (tied weights).
  std::vector<int> sharedReaders;
  /// Products whose results selective recompute keeps.
  std::vector<bool> keptBySelective;
  /// Nodes full recompute runs again (ZeRO-3 gathers their weights again).
  std::vector<bool> recomputedByFull;
  /// Per unit that is a layer copy, the nodes outside layers whose saved
  /// results it reads as its input.
  std::vector<SmallVector<int, 1>> savedInputMakers;
  /// The fastest priced candidate that fits so far.
  double fastestFit = std::numeric_limits<double>::infinity();
  /// Chunks per pipeline device to price for `pp` stages and `m`
  /// microbatches (interleaved 1F1B: training, m a multiple of pp).
  SmallVector<int64_t, 4> virtualChoices(int64_t pp, int64_t m) const;
  /// Whether to price ZB-H1 for this pipeline (training, one chunk per
  /// device, at least pp microbatches), and the 1F1B family's schedules.
  bool pricesZeroBubble(int64_t pp, int64_t v, int64_t m) const {
    return opt.train && pp > 1 && v == 1 && m >= pp &&
           opt.zeroBubble.value_or(true);
  }
  bool pricesOneFOneB(int64_t pp) const {
    return !(opt.train && pp > 1 && opt.zeroBubble.value_or(false));
  }
  /// `c` (plain 1F1B, priced with `stages`) run as ZB-H1.
  PlanCandidate zeroBubbleOf(const PlanCandidate &c,
                             const Stages &stages) const;
  /// Where 1D layouts of `tg` devices may come from next to `sp`.
  SmallVector<TensorLayouts, 3> layoutSources(int64_t tg, TensorMode mode,
                                              int64_t sp) const;
  /// Sequence parallelism: the sp axis's layouts (the partitioner's, from
  /// PlanOptions::sequenceLayouts), priced at this share of the batch.
  std::shared_ptr<const SearchResult>
  sequenceLayout(int64_t tg, int64_t sp, SequenceMode spMode, int64_t dp,
                 int64_t m, double cw, double cc, Pricing pricing);
  struct Stages {
    /// The slowest stage and its time per microbatch.
    StageSummary worst;
    double worstTime = -1;
    /// Interleaved 1F1B: the slowest chunk's time per microbatch (the
    /// bubble's unit); the device's otherwise.
    double worstChunkTime = 0;
    /// Every unit's time per microbatch, added up: no cut of it into pp
    /// devices runs a microbatch faster than this / pp.
    double totalTime = 0;
    /// The largest per-stage gradient sync.
    double maxGradSync = 0;
    /// Every pipeline device's stages together (for the gradient sync ZeRO
    /// prices per device).
    std::vector<StageSummary> all;
  };
  /// Balances units over the candidate's stages and fills its stage
  /// starts (priceMemory then prices its memory from the stages) (`sequence`:
  /// the sp axis's layouts, if any).
  Stages priceStages(PlanCandidate &c, const SearchResult &layout,
                     const SearchResult *sequence, double cw, double cc);
  /// The candidate's memory per device from its stages (and ZeRO stage).
  void priceMemory(PlanCandidate &c, const Stages &stages) const;
  /// `base` (priced with its stages) under ZeRO stage `zero` instead.
  PlanCandidate withZero(const PlanCandidate &base, const Stages &stages,
                         int64_t zero) const;
  /// Training: the gradients' sum over replicas (ZeRO: reduce-scattered,
  /// parameters all-gathered) and the optimizer step.
  void priceTraining(PlanCandidate &c, const Stages &stages) const;
  /// The all-reduces of sums over the batch (PlanGraph::batchSums).
  double batchSumsTime(const PlanCandidate &c) const;
  /// Tells PlanOptions::progress, at most every 0.1 s unless `done`.
  void report(bool done = false);
  /// Re-searches the fastest candidates exactly and re-ranks.
  void refine();
  llvm::Expected<Plan> finish();

  const PlanGraph &g;
  const ClusterSpec &cluster;
  const PlanOptions &opt;
  int64_t n;
  CostModel cost;
  double eb, stateBytesPerParam;
  std::vector<Unit> units;
  /// Per node, its last reader (lastUses), for inference activations.
  std::vector<int> lastUse;
  TransferEdges edges;
  double usable;
  /// Sequence parallelism splits what attention reads: without attention
  /// it would be tensor parallelism under another name.
  bool hasAttention;
  /// Attention heads every attention op has (their gcd; 0: unknown).
  int64_t heads;
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();

  Plan plan;
  std::vector<PlanCandidate> feasible, rejected;
  PlanProgress progress;
  /// The least weight (and training state) bytes per device of the
  /// candidates dropped before any layout work.
  double leastWeightBytes = INFINITY;
  int64_t widestSplit = 1;
  std::chrono::steady_clock::time_point lastReport = start;
  // Exactly searched layouts by (mode, tensor size, depth, scale,
  // recompute, microbatches, stages, data-parallel size).
  std::map<std::tuple<int, int, int64_t, int64_t, double, bool, int64_t,
                      int64_t, int64_t, int>,
           std::shared_ptr<const SearchResult>>
      layouts;
  // Layouts only priced (SearchInput::layouts off) by what their costs
  // depend on: the kind of layout (a tensor mode, or -1: a given 1D layout,
  // -2: a seed), what fixes the choice (three numbers, per kind) and the
  // per-device share of the batch.
  using PricedKey = std::tuple<int, int64_t, int64_t, int64_t, double>;
  std::map<PricedKey, std::shared_ptr<const SearchResult>> priced;
  // Candidates only priced take their layouts from a seed: an exact
  // search per tensor size, recompute setting, batch split and share class
  // (shareClass), at the first such candidate's share, with weights priced
  // instead of budgeted (Lagrangian relaxation). Its solutions for rising
  // weight prices trace the lower convex hull of (weight bytes, objective) over
  // all layouts, found point by point as budgets (one per pipeline depth) ask;
  // a budget gets the best hull point within it. The fastest few candidates are
  // then searched exactly, with their own budget.
  struct HullPoint {
    double weight = 0, objective = 0;
    int seed = -1;
    /// No hull point lies between this one and the next.
    bool adjacentToNext = false;
  };
  struct Frontier {
    SearchInput base;
    /// By weight, heaviest (price 0) first.
    std::vector<HullPoint> points;
    /// The lightest layout is the last point.
    bool lightest = false;
  };
  using FrontierKey = std::tuple<int64_t, bool, bool, int>;
  /// The 1D search's options, shared by its frontiers' and finalists'
  /// searches.
  LayoutOptionsCache layoutOptions;
  std::map<FrontierKey, Frontier> frontiers;
  /// Distinct seed layouts.
  std::vector<std::vector<OpSharding>> seeds;
  /// The seed for `in`'s weight budget, and whether it fits it (else the
  /// lightest layout).
  /// `sumPrice`: what a weight byte's gradient sum over dp costs (the
  /// bandwidth term per microbatch, as ExactSummed prices it; 0 without
  /// dp): the seed is the hull point that minimises the objective plus
  /// that, where it is lighter than the budget's.
  std::pair<int, bool> seedFor(const SearchInput &in, FrontierKey key,
                               double sumPrice);
  HullPoint solveAt(const SearchInput &base, double price);
  /// Adds the lightest layout to `f`, once.
  void addLightest(Frontier &f);
  /// Solves at the price where points i and i + 1 tie: inserts the hull
  /// point between them, or marks them adjacent.
  void splitSegment(Frontier &f, size_t i);
  /// The index of the hull point that minimises objective + price x
  /// weight.
  size_t cheapestAt(Frontier &f, double price);
  /// Seconds per weight byte (x weightFactor) of the gradients' all-reduce
  /// over dp, its bandwidth term, per microbatch.
  double gradientSumPrice(const SearchInput &in, int64_t dp,
                          int64_t tg) const;
  /// Layouts the partitioner derives (a scheme's, a grid's, a sequence
  /// axis's), and whether they differ between copies of the block.
  struct Derived {
    std::vector<OpSharding> layouts;
    bool perCopy = false;
    /// layoutsStackOnBatch, once asked.
    std::optional<bool> stacks;
  };
  /// A scheme's layouts for (dp, tg), derived once.
  Derived &schemeFor(TensorLayouts scheme, int64_t dp, int64_t tg) {
    return derived(fixedLayouts[{int(scheme), replicaClass(dp), tg}],
                   [&] { return opt.schemeLayouts(dp, tg, scheme); });
  }
  bool schemeStacks(TensorLayouts scheme, int64_t dp, int64_t tg) {
    Derived &d = schemeFor(scheme, dp, tg);
    if (!d.stacks)
      d.stacks = layoutsStackOnBatch(g, d.layouts, tg);
    return *d.stacks;
  }
  Derived &derived(Derived &slot,
                   llvm::function_ref<std::vector<OpSharding>()> derive) {
    if (slot.layouts.empty()) {
      slot.layouts = derive();
      slot.perCopy = !copiesAlike(g, slot.layouts);
    }
    return slot;
  }
  // A scheme's layouts (PlanOptions::schemeLayouts) per (scheme,
  // replicaClass(dp), tensor size).
  std::map<std::tuple<int, int64_t, int64_t>, Derived> fixedLayouts;
  // Grid layouts (PlanOptions::gridLayouts) per (replicaClass(dp), tensor
  // size, mode, depth).
  std::map<std::tuple<int64_t, int64_t, int, int64_t>, Derived> fixedGrid;
  // Sequence layouts (PlanOptions::sequenceLayouts) per (replicaClass(dp),
  // sp, mode), and priced per (those, crossing nodes, batch share, with
  // layouts).
  std::map<std::tuple<int64_t, int64_t, int>, Derived> fixedSequence;
  std::map<std::tuple<int64_t, int64_t, int, bool, double, bool>,
           std::shared_ptr<const SearchResult>>
      sequenceLayouts;
};

bool forced(int64_t want, int64_t v) { return want == 0 || want == v; }

llvm::Error planError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

bool PlanSearch::partRuns(int64_t pp, int64_t sp, int64_t tp,
                          TensorMode mode) const {
  if (!opt.runnableOnly)
    return true;
  ParallelPlan p = ParallelPlan::withDegrees(pp, 1, sp, tp);
  p.tensorMode = mode;
  p.train = opt.train;
  return runs(p);
}

SmallVector<TensorMode, 4> PlanSearch::tensorModes() const {
  // A mode is asked about on the smallest grid it forms (2 x 2, or
  // 2 x 2 x 2 for 3D); candidates' own grids are checked per candidate.
  SmallVector<TensorMode, 4> modes;
  for (TensorMode m : {TensorMode::OneD, TensorMode::TwoD,
                       TensorMode::TwoPointFiveD, TensorMode::ThreeD})
    if ((!opt.tpMode || *opt.tpMode == m) &&
        (m == TensorMode::OneD ||
         partRuns(1, 1, m == TensorMode::ThreeD ? 8 : 4, m)))
      modes.push_back(m);
  return modes;
}

SmallVector<TensorLayouts, 3>
PlanSearch::layoutSources(int64_t tg, TensorMode mode, int64_t sp) const {
  if (tg == 1 || mode != TensorMode::OneD)
    return {TensorLayouts::Planned};
  if (opt.layoutScheme)
    return {*opt.layoutScheme};
  SmallVector<TensorLayouts, 3> out{TensorLayouts::Planned};
  // Megatron's layouts are not always what the per-op objective picks
  // (it prices neither memory nor the step), so they are candidates of
  // their own; with sequence parallelism only where no sp axis splits the
  // sequence already.
  // Megatron-LM splits whole heads (it requires tp to divide them).
  if (opt.schemeLayouts && (heads == 0 || heads % tg == 0)) {
    out.push_back(TensorLayouts::Megatron);
    if (sp == 1 && hasAttention)
      out.push_back(TensorLayouts::MegatronSequence);
  }
  return out;
}

SmallVector<int64_t, 3> PlanSearch::zeroChoices(int64_t dp) const {
  if (!opt.train || dp == 1)
    return {0};
  if (opt.zero)
    return {*opt.zero};
  return {0, 1, 3};
}

double PlanSearch::bytesPerParam(int64_t zero, int64_t dp) const {
  if (!opt.train)
    return eb;
  double optimizerState = stateBytesPerParam - 2 * eb;
  return eb / double(zero >= 3 ? dp : 1) + eb +
         optimizerState / double(zero >= 1 ? dp : 1);
}

const std::vector<std::vector<int64_t>> &
PlanSearch::heldMicrobatches(int64_t pp, int64_t v, int64_t m) {
  auto [it, inserted] = held.try_emplace({pp, v, m});
  if (inserted)
    for (int64_t d = 0; d < pp; ++d)
      it->second.push_back(pccrt::chunkInFlightOf(pp, v, d, m));
  return it->second;
}

SmallVector<int64_t, 4> PlanSearch::virtualChoices(int64_t pp,
                                                   int64_t m) const {
  // Megatron-LM's interleaving needs whole groups of pp microbatches, and
  // a unit per chunk at least; searched, a layer (a repeated block's copy) per
  // chunk at least (as Megatron's layers per virtual stage).
  auto fits = [&](int64_t v, int64_t most) {
    return v == 1 || (opt.train && pp > 1 && m % pp == 0 && pp * v <= most);
  };
  // ZB-H1 runs one chunk per device.
  if (opt.train && pp > 1 && opt.zeroBubble.value_or(false))
    return opt.ppVirtual > 1 ? SmallVector<int64_t, 4>{}
                             : SmallVector<int64_t, 4>{1};
  if (opt.ppVirtual) {
    if (fits(opt.ppVirtual, int64_t(units.size())))
      return {opt.ppVirtual};
    return {};
  }
  int64_t layers = g.layers();
  SmallVector<int64_t, 4> out;
  for (int64_t v : {1, 2, 4})
    if (fits(v, layers))
      out.push_back(v);
  return out;
}

SmallVector<Recompute, 3> PlanSearch::recomputeChoices() const {
  if (!opt.train)
    return {Recompute::None};
  if (opt.recompute)
    return {*opt.recompute};
  return {Recompute::None, Recompute::Full, Recompute::Selective};
}

std::shared_ptr<const SearchResult>
PlanSearch::layoutFor(int64_t pp, int64_t dp, int64_t tg, TensorMode mode,
                      GridShape grid, TensorLayouts scheme, int64_t m,
                      Recompute recompute, double scale, double cw, double cc,
                      Pricing pricing) {
  auto key = std::make_tuple(int(mode), int(scheme), tg, grid.second, scale,
                             int(recompute), m, pp, dp, int(pricing));
  if (isExact(pricing))
    if (auto found = layouts.find(key); found != layouts.end())
      return found->second;
  // Grids: a candidate only priced costs what another with the same
  // layouts and per-device share costs (1D: see oneDimLayout).
  PricedKey pricedKey(int(mode), tg, grid.second,
                      opt.gridLayouts ? replicaClass(dp) : 0, scale);
  if (pricing == Pricing::Priced && mode != TensorMode::OneD)
    if (auto hit = priced.find(pricedKey); hit != priced.end())
      return hit->second;
  std::shared_ptr<const SearchResult> layout;
  if (mode != TensorMode::OneD && opt.gridLayouts) {
    // The partitioner's own 2D / 2.5D layouts, priced on their grid.
    auto fixedKey =
        std::make_tuple(replicaClass(dp), tg, int(mode), grid.second);
    Derived &fixed = derived(fixedGrid[fixedKey], [&] {
      return opt.gridLayouts(dp, tg, mode, grid.second);
    });
    Mesh gridMesh = tensorGridMesh(mode, grid.first, grid.second);
    SearchInput in;
    in.degree = tg;
    in.crossNode = groupCrossesNodes(1, tg, cluster);
    in.scale = scale;
    in.computeWeight = cw;
    in.commWeight = cc;
    in.train = opt.train;
    in.microbatches = double(m);
    in.fixed = &fixed.layouts;
    in.fixedPerCopy = fixed.perCopy;
    in.grid = &gridMesh;
    in.layouts = pricing != Pricing::Priced;
    layout = std::make_shared<SearchResult>(searchTensorParallel(g, cost, in));
  } else if (mode != TensorMode::OneD) {
    layout = std::make_shared<SearchResult>(
        gridLayout(g, cost, {mode, tg, grid.first, grid.second}, scale, cluster,
                   pricing != Pricing::Priced));
  } else {
    SearchInput in;
    in.degree = tg;
    in.crossNode = groupCrossesNodes(1, tg, cluster);
    in.scale = scale;
    in.computeWeight = cw;
    in.commWeight = cc;
    in.train = opt.train;
    in.microbatches = double(m);
    in.batchSplit = dp > 1 || (pp > 1 && m > 1);
    in.cache = &layoutOptions;
    if (opt.train && recompute == Recompute::Selective)
      in.repeated = &g.selectiveAgain;
    // Weights (and their training state) must leave room for activations
    // in every stage.
    in.weightBudget = 0.8 * usable * double(pp);
    in.weightFactor = opt.train ? stateBytesPerParam / eb : 1;
    layout = oneDimLayout(in, pp, dp, tg, scheme, recompute, pricing);
  }
  if (isExact(pricing))
    layouts[key] = layout;
  else if (pricing == Pricing::Priced && mode != TensorMode::OneD)
    priced[pricedKey] = layout;
  return layout;
}

std::shared_ptr<const SearchResult>
PlanSearch::oneDimLayout(SearchInput in, int64_t pp, int64_t dp, int64_t tg,
                         TensorLayouts scheme, Recompute recompute,
                         Pricing pricing) {
  if (scheme != TensorLayouts::Planned && tg > 1) {
    Derived &fixed = schemeFor(scheme, dp, tg);
    in.fixed = &fixed.layouts;
    in.fixedPerCopy = fixed.perCopy;
    bool priceOnly = pricing == Pricing::Priced;
    in.layouts = !priceOnly;
    PricedKey key(-1 - int(scheme), tg, replicaClass(dp), 0, in.scale);
    if (auto hit = priced.find(key); priceOnly && hit != priced.end())
      return hit->second;
    auto result =
        std::make_shared<SearchResult>(searchTensorParallel(g, cost, in));
    if (priceOnly)
      priced[key] = result;
    return result;
  }
  if (pricing == Pricing::ExactSummed && dp > 1)
    in.weightPrice = gradientSumPrice(in, dp, tg);
  if (isExact(pricing)) {
    in.layouts = true;
    if (tg > 1)
      ++plan.ilpSolves;
    return std::make_shared<SearchResult>(searchTensorParallel(g, cost, in));
  }
  // One device per tensor group has one layout; otherwise a seed's.
  int seed = -1;
  bool fits = true;
  if (tg > 1) {
    // Seeds weigh no selective repeats: a selective candidate only priced
    // takes no-recompute's seed; its finalists' searches weigh them and
    // keep the better of those and the seed's layouts. (Seeds of their own
    // left a selective plan without one that fits memory: Megatron's GPT-1T
    // export fell from selective at 233.7 to full recompute at 189.0
    // TFLOP/s.)
    SearchInput seedInput = in;
    seedInput.repeated = nullptr;
    // Training over dp also weighs the gradients' sum, which the per-op
    // objective leaves out: nanoGPT at dp8 tp8 was seeded with every
    // weight whole (182 ms a step, 79 ms of it the sum over dp) against
    // 117 ms for layouts that split them, and never searched exactly.
    double sumPrice = opt.train && dp > 1 ? gradientSumPrice(in, dp, tg) : 0;
    std::tie(seed, fits) =
        seedFor(seedInput,
                {tg, recompute == Recompute::Full, in.batchSplit,
                 shareClass(in.scale)},
                sumPrice);
    in.fixed = &seeds[seed];
  }
  bool priceOnly = pricing == Pricing::Priced;
  PricedKey key(fits ? -2 : -3, seed, tg, 0, in.scale);
  if (auto hit = priced.find(key); priceOnly && hit != priced.end())
    return hit->second;
  in.layouts = !priceOnly;
  auto result =
      std::make_shared<SearchResult>(searchTensorParallel(g, cost, in));
  result->feasible = fits;
  if (priceOnly)
    priced[key] = result;
  return result;
}

PlanSearch::HullPoint PlanSearch::solveAt(const SearchInput &base,
                                          double price) {
  SearchInput in = base;
  in.weightBudget = 0;
  in.weightPrice = price;
  in.layouts = true;
  ++plan.ilpSolves;
  SearchResult r = searchTensorParallel(g, cost, in);
  std::vector<OpSharding> choice;
  choice.reserve(r.layouts.size());
  for (NodeLayout &l : r.layouts)
    choice.push_back(std::move(l.sharding));
  auto same = llvm::find(seeds, choice);
  HullPoint p{r.weightBytes, r.objective, int(same - seeds.begin())};
  if (same == seeds.end())
    seeds.push_back(std::move(choice));
  return p;
}

void PlanSearch::addLightest(Frontier &f) {
  if (f.lightest)
    return;
  // A price at which a byte of weight outweighs any time saved: the
  // lightest layout, the hull's last point.
  std::vector<HullPoint> &pts = f.points;
  f.lightest = true;
  HullPoint light = solveAt(f.base, 1e3 * std::max(pts[0].objective, 1e-9) /
                                        std::max(pts[0].weight, 1.0));
  if (light.seed == pts.back().seed)
    pts.back().adjacentToNext = true;
  else
    pts.push_back(light);
}

void PlanSearch::splitSegment(Frontier &f, size_t i) {
  // The price at which the two points tie: a solution below their
  // segment is a hull point between them.
  std::vector<HullPoint> &pts = f.points;
  HullPoint a = pts[i], b = pts[i + 1];
  double price = (b.objective - a.objective) / (a.weight - b.weight);
  HullPoint c = solveAt(f.base, price);
  double onSegment = a.objective + price * a.weight;
  if (c.seed == a.seed || c.seed == b.seed || c.weight >= a.weight ||
      c.weight <= b.weight ||
      c.objective + price * c.weight >= onSegment * (1 - 1e-9)) {
    pts[i].adjacentToNext = true;
    return;
  }
  pts.insert(pts.begin() + i + 1, c);
}

size_t PlanSearch::cheapestAt(Frontier &f, double price) {
  addLightest(f);
  std::vector<HullPoint> &pts = f.points;
  // The hull is convex: the cheapest known point is the cheapest of all
  // once no point can lie on either side of it.
  auto at = [&](size_t i) { return pts[i].objective + price * pts[i].weight; };
  for (;;) {
    size_t k = 0;
    for (size_t i = 1; i < pts.size(); ++i)
      if (at(i) < at(k))
        k = i;
    if (k > 0 && !pts[k - 1].adjacentToNext)
      splitSegment(f, k - 1);
    else if (k + 1 < pts.size() && !pts[k].adjacentToNext)
      splitSegment(f, k);
    else
      return k;
  }
}

double PlanSearch::gradientSumPrice(const SearchInput &in, int64_t dp,
                                    int64_t tg) const {
  // Seconds per byte of the gradients' all-reduce over dp (its bandwidth
  // term, as priceTraining prices it), once a step.
  bool cross = groupCrossesNodes(tg, dp, cluster);
  double a = 1 << 20, b = 1 << 30;
  double perByte =
      (cost.collectiveTime(CollectiveKind::AllReduce, b, dp, cross) -
       cost.collectiveTime(CollectiveKind::AllReduce, a, dp, cross)) /
      (b - a);
  return perByte / in.weightFactor / in.microbatches;
}

std::pair<int, bool> PlanSearch::seedFor(const SearchInput &in,
                                         FrontierKey key, double sumPrice) {
  Frontier &f = frontiers[key];
  std::vector<HullPoint> &pts = f.points;
  if (pts.empty()) {
    f.base = in;
    pts.push_back(solveAt(f.base, 0));
  }
  double budget = in.weightBudget * (1 + 1e-9);
  for (;;) {
    auto within = llvm::find_if(
        pts, [&](const HullPoint &p) { return p.weight <= budget; });
    if (within == pts.end() && !f.lightest) {
      addLightest(f);
      continue;
    }
    if (within == pts.end())
      return {pts.back().seed, false};
    if (within == pts.begin() || within[-1].adjacentToNext) {
      if (sumPrice <= 0)
        return {within->seed, true};
      // Points are by weight, heaviest first: the lighter of the two.
      HullPoint best = *within;
      size_t k = cheapestAt(f, sumPrice);
      return {pts[k].weight < best.weight ? pts[k].seed : best.seed, true};
    }
    splitSegment(f, within - pts.begin() - 1);
  }
}

std::shared_ptr<const SearchResult>
PlanSearch::sequenceLayout(int64_t tg, int64_t sp, SequenceMode spMode,
                           int64_t dp, int64_t m, double cw, double cc,
                           Pricing pricing) {
  // Priced by what the costs depend on: the layouts, whether the group
  // crosses nodes and the batch share.
  auto key = std::make_tuple(replicaClass(dp), sp, int(spMode),
                             groupCrossesNodes(tg, sp, cluster),
                             1.0 / double(dp * m), pricing != Pricing::Priced);
  if (auto found = sequenceLayouts.find(key); found != sequenceLayouts.end())
    return found->second;
  Derived &fixed = derived(fixedSequence[{replicaClass(dp), sp, int(spMode)}],
                           [&] { return opt.sequenceLayouts(dp, sp, spMode); });
  SearchInput in;
  in.degree = sp;
  in.crossNode = groupCrossesNodes(tg, sp, cluster);
  // The layouts hold the sequence split themselves; the batch share is
  // the data-parallel and microbatch one.
  in.scale = 1.0 / double(dp * m);
  in.computeWeight = cw;
  in.commWeight = cc;
  in.train = opt.train;
  in.microbatches = double(m);
  in.fixed = &fixed.layouts;
  in.fixedPerCopy = fixed.perCopy;
  in.layouts = pricing != Pricing::Priced;
  auto result = std::make_shared<SearchResult>(searchTensorParallel(g, cost, in));
  sequenceLayouts[key] = result;
  return result;
}

PlanSearch::Stages PlanSearch::priceStages(PlanCandidate &c,
                                           const SearchResult &layout,
                                           const SearchResult *sequence,
                                           double cw, double cc) {
  int64_t pp = c.pp, m = c.microbatches;
  // Per unit, one microbatch: its time and what its nodes add up to. A
  // block copy whose costs are folded onto the one before (NodeCosts) adds
  // up to what that one does.
  struct UnitSum {
    double compute = 0, comm = 0, backwardComm = 0, weightBytes = 0,
           gradSync = 0, gradSyncDpSaving = 0,
           resultBytes = 0, backwardWeightBytes = 0, linearCompute = 0;
    uint32_t gradSyncBuckets = 0;
    /// Selective recompute repeats the ops between products that the
    /// backward needs (PlanGraph::selectiveAgain: otherCompute) and keeps the
    /// products' results they read.
    double otherCompute = 0, frozenWeightBytes = 0;
    /// Results the backward reads (PlanNode::savedForBackward), and the
    /// products' results selective recompute keeps.
    double savedBytes = 0, savedProductBytes = 0;
    /// What a zero-bubble step's W part reads (StageSummary's).
    double weightPassBytes = 0;
    /// Parameter tensors, and ZeRO-3's gathers of them per microbatch
    /// (PlanNode::forwardParameterReads and backwardParameterReads).
    int64_t weightTensors = 0, forwardReads = 0, backwardTensors = 0;
    WholeOverDp wholeOverDp;
    double paramElements = 0, largestNodeWeightBytes = 0;
  };
  // ZeRO over dp keeps whole the weights none of whose dimensions its
  // split takes, as the tensor layouts hold them.
  bool zeroWhole = opt.train && c.tp > 1 && c.dp > 1 &&
                   layout.layouts.size() == g.nodes.size();
  Mesh tensorMesh = tensorLayoutMesh(c);
  std::vector<UnitSum> sums(units.size());
  std::vector<double> unitTime(units.size());
  for (auto [u, unit] : llvm::enumerate(units)) {
    bool folded = u > 0 && !layout.costs.owns(unit.first) &&
                  (!sequence || !sequence->costs.owns(unit.first));
    if (folded) {
      sums[u] = sums[u - 1];
    } else {
      double backwardElements = 0;
      for (int i = unit.first; i <= unit.last; ++i) {
        const NodeCost &nc = layout.costs[i];
        UnitSum &sum = sums[u];
        const PlanNode &node = g.nodes[i];
        sum.compute += stepWork(node, cw, opt.train) * nc.compute;
        sum.comm += nc.comm + (sequence ? sequence->costs[i].comm : 0.0);
        sum.backwardComm +=
            nc.backwardComm + (sequence ? sequence->costs[i].backwardComm : 0.0);
        if (opt.train && c.recompute == Recompute::Selective)
          sum.backwardComm += nc.repeatedComm +
                              (sequence ? sequence->costs[i].repeatedComm : 0.0);
        sum.weightBytes += nc.weightBytes;
        sum.frozenWeightBytes += nc.frozenWeightBytes;
        sum.gradSync += nc.gradSync;
        sum.gradSyncBuckets |= nc.gradSyncBuckets;
        sum.gradSyncDpSaving += nc.gradSyncDpSaving;
        sum.resultBytes += nc.resultBytes;
        if (g.selectiveAgain[i])
          sum.otherCompute += nc.compute;
        if (node.linear)
          sum.linearCompute += nc.compute;
        if (node.savedForBackward)
          sum.savedBytes += nc.resultBytes;
        if (keptBySelective[i])
          sum.savedProductBytes += nc.resultBytes;
        // Each weight product's activation operands, as it reads them
        // (gathered, where its layout gathers them: Megatron-SP's norm
        // output), and its result's gradient: what its W part reads. A bias
        // or norm scale needs its result's gradient alone, and a bias added
        // to a product's result shares the product's.
        auto made = [&](int p) {
          while (p >= 0 && g.nodes[p].view && !g.nodes[p].producers.empty())
            p = g.nodes[p].producers.front();
          return p;
        };
        if (opt.train && isTrainedProduct(node, nc)) {
          sum.weightPassBytes += nc.resultBytes + nc.weightOperandBytes;
        } else if (opt.train && !node.derived && nc.weightBytes > 0 &&
                   llvm::none_of(node.producers, [&](int p) {
                     int q = made(p);
                     return q >= 0 && g.nodes[q].linear;
                   })) {
          sum.weightPassBytes += nc.resultBytes;
        }
        sum.weightTensors += node.weightTensors;
        sum.forwardReads += node.forwardParameterReads;
        sum.backwardTensors += backwardGathers(
            node, c.recompute == Recompute::Full && recomputedByFull[i]);
        if (zeroWhole) {
          const OpSharding &own = layout.layouts[i].sharding;
          sum.wholeOverDp += planning::wholeOverDp(
              g, i,
              own.operands.size() == node.op->getNumOperands()
                  ? own
                  : layout.layouts[g.representative(i)].sharding,
              tensorMesh, c.dp);
        }
        sum.paramElements += node.params;
        sum.largestNodeWeightBytes =
            std::max(sum.largestNodeWeightBytes, nc.weightBytes);
        backwardElements += node.backwardParameterElements;
      }
      // The backward gathers blocks as the unit's weights are split.
      UnitSum &sum = sums[u];
      sum.backwardWeightBytes =
          backwardElements * (sum.paramElements > 0
                                  ? sum.weightBytes / sum.paramElements
                                  : double(g.elementBytes) / double(c.tp));
    }
    unitTime[u] = sums[u].compute + cc * sums[u].comm +
                  (opt.train ? sums[u].backwardComm : 0.0);
    // Selective recompute repeats a layer's ops between its products once.
    if (c.recompute == Recompute::Selective && opt.train && unit.block >= 0)
      unitTime[u] += sums[u].otherCompute;
  }
  double totalTime = 0;
  for (double t : unitTime)
    totalTime += t;
  // Interleaved 1F1B cuts pp x v stages; stage s runs on device s % pp.
  int64_t v = c.virtualStages, stages = pp * v;
  std::vector<int> starts = balanceStages(unitTime, stages, pp);
  Stages out;
  out.totalTime = totalTime;
  // Per block, the bytes a copy passes to the next.
  SmallVector<double, 2> boundary;
  for (const RepeatedBlock &b : g.blocks)
    boundary.push_back(blockBoundaryBytes(g, b, layout));
  // The bytes of a copy's input that its stage already holds for the
  // backward (savedInputMakers in the stage), counted there.
  auto inputHeldBefore = [&](int u, int stageFirst) {
    double bytes = 0;
    for (int p : savedInputMakers[u])
      if (p >= stageFirst)
        bytes += layout.costs[p].resultBytes;
    return bytes;
  };
  out.all.assign(pp, StageSummary());
  std::vector<double> deviceTime(pp, 0);
  const std::vector<std::vector<int64_t>> &inFlight =
      heldMicrobatches(pp, v, m);
  for (size_t s = 0; s < starts.size(); ++s) {
    int end = s + 1 < starts.size() ? starts[s + 1] : units.size();
    StageSummary st;
    double time = 0;
    for (int u = starts[s]; u < end; ++u) {
      time += unitTime[u];
      const UnitSum &sum = sums[u];
      st.compute += sum.compute;
      st.linearCompute += sum.linearCompute;
      st.comm += sum.comm;
      st.backwardComm += opt.train ? sum.backwardComm : 0.0;
      st.weightBytes += sum.weightBytes;
      st.frozenWeightBytes += sum.frozenWeightBytes;
      st.gradSync += sum.gradSync;
      st.gradSyncBuckets |= sum.gradSyncBuckets;
      st.gradSyncDpSaving += sum.gradSyncDpSaving;
      st.weightTensors += sum.weightTensors;
      st.forwardReads += sum.forwardReads;
      st.backwardTensors += sum.backwardTensors;
      st.wholeOverDp += sum.wholeOverDp;
      st.backwardWeightBytes += sum.backwardWeightBytes;
      st.weightPassBytes += sum.weightPassBytes;
      st.largestUnitWeightBytes =
          std::max(st.largestUnitWeightBytes, sum.weightBytes);
      st.largestNodeWeightBytes =
          std::max(st.largestNodeWeightBytes, sum.largestNodeWeightBytes);
      // Training holds what the backward reads of the forward.
      double unitBytes = opt.train ? sum.savedBytes : sum.resultBytes;
      st.resultBytes += unitBytes;
      // A copy of the repeated layer: what recompute keeps and repeats.
      bool isCopy = units[u].block >= 0;
      double input = 0;
      if (isCopy)
        input = boundary[units[u].block] -
                (opt.train ? inputHeldBefore(u, units[starts[s]].first) : 0.0);
      input = std::max(0.0, input);
      st.inputBytes += isCopy ? input : unitBytes;
      st.selectiveBytes += isCopy ? input + sum.savedProductBytes : unitBytes;
      if (isCopy) {
        st.largestLayerBytes = std::max(st.largestLayerBytes, unitBytes);
        st.largestRecomputedBytes = std::max(st.largestRecomputedBytes,
                                             unitBytes - sum.savedProductBytes);
      }
    }
    // Stage s is chunk s / pp of device s % pp.
    int64_t d = int64_t(s) % pp, chunk = int64_t(s) / pp;
    // A pipeline's microbatches in flight each keep a copy (the stash) of
    // what their backward reads, besides the one the running microbatch
    // makes in the arena.
    double held =
        opt.train ? double(inFlight[d][chunk]) + (pp > 1 ? 1.0 : 0.0) : 1;
    int firstNode = units[starts[s]].first, lastNode = units[end - 1].last;
    // Recompute keeps, per microbatch in flight, each layer's input (and
    // selective its products' results), plus one layer's recomputed
    // values (the buffer).
    switch (opt.train ? c.recompute : Recompute::None) {
    case Recompute::None:
      st.activations =
          opt.train ? held * st.resultBytes
                    : peakLiveBytes(g, layout, lastUse, firstNode, lastNode);
      break;
    case Recompute::Full:
      st.recomputeBuffer = st.largestLayerBytes;
      st.activations = held * st.inputBytes + st.recomputeBuffer;
      break;
    case Recompute::Selective:
      st.recomputeBuffer = st.largestRecomputedBytes;
      st.activations = held * st.selectiveBytes + st.recomputeBuffer;
      break;
    }
    out.worstChunkTime = std::max(out.worstChunkTime, time);
    c.stageBegin.push_back(units[starts[s]].first);
    // The device's chunks add up (their largest unit and, under recompute,
    // the one recompute buffer: the largest of them).
    StageSummary &dev = out.all[d];
    if (chunk == 0)
      dev = st;
    else
      dev.addChunk(st);
    deviceTime[d] += time;
  }
  // A tied weight read on a device without its first reader is a copy there.
  auto deviceOf = [&](int node) {
    return int64_t(llvm::upper_bound(c.stageBegin, node) -
                   c.stageBegin.begin() - 1) %
           pp;
  };
  for (int i : sharedReaders) {
    int64_t d = deviceOf(i);
    if (llvm::any_of(g.nodes[i].sharedWeights,
                     [&](auto w) { return deviceOf(w.second) != d; }))
      out.all[d].copyWeightBytes += layout.costs[i].sharedWeightBytes;
  }
  for (int64_t d = 0; d < pp; ++d) {
    // Each bucket's latency once a step (NodeCost::gradSyncBuckets).
    out.all[d].gradSync += layout.bucketsLatency(out.all[d].gradSyncBuckets);
    out.maxGradSync = std::max(out.maxGradSync, out.all[d].gradSync);
    if (deviceTime[d] > out.worstTime) {
      out.worstTime = deviceTime[d];
      out.worst = out.all[d];
    }
  }
  return out;
}

void PlanSearch::priceMemory(PlanCandidate &c, const Stages &stages) const {
  // Stored per device: ZeRO-3 keeps 1/dp of each parameter.
  double stored = c.zero >= 3 ? 1.0 / double(c.dp) : 1.0;
  c.memory = 0;
  for (auto [d, st] : llvm::enumerate(stages.all)) {
    // ZeRO-3 gathers a unit's weights before use: a buffer of the largest.
    double gathered = c.zero >= 3 ? st.largestUnitWeightBytes : 0;
    // A tied weight's copy (and, training, its gradient), frozen weights.
    double copies = st.copyWeightBytes + st.frozenWeightBytes;
    double copyGradients = opt.train ? st.copyWeightBytes : 0;
    // Training's transients, each at its moment after the activations'
    // peak, as the compiled step holds them: the gradients' bucket (their
    // flat copy to all-reduce, at most pcc-bucket-gradients' 25 MiB;
    // without ZeRO, over dp) and the update's new moments of the largest
    // weight (AdamW).
    double held = st.activations;
    // ZB-H1: what the W parts a device defers read, per microbatch held.
    if (c.zeroBubble)
      held += double(pccrt::zeroBubbleWeightsHeld(c.pp, d, c.microbatches)) *
              st.weightPassBytes;
    if (opt.train) {
      if (c.dp * c.sp > 1 && c.zero == 0)
        held = std::max(held, std::min(st.weightBytes, 25.0 * (1 << 20)));
      held = std::max(held, 2 * st.largestNodeWeightBytes * stored);
    }
    double weights = st.weightBytes * stored + copies + gathered;
    double state =
        st.weightBytes * (bytesPerParam(c.zero, c.dp) / eb - stored) +
        copyGradients;
    // The report's parts are the fullest device's, so they add up.
    if (weights + state + held <= c.memory)
      continue;
    c.memory = weights + state + held;
    c.weightMemory = weights;
    c.stateMemory = state; // 0 for inference: bytesPerParam is eb
    c.activationMemory = held;
  }
}

PlanCandidate PlanSearch::zeroBubbleOf(const PlanCandidate &c,
                                       const Stages &stages) const {
  // Qi et al. 2023: with each backward split into the input's gradient (B)
  // and the weights' (W), ZB-H1 runs the W passes a device defers in the
  // bubble: it shrinks from (p - 1)(F + B + W) to (p - 1)(F + B - W) per
  // microbatch, holding 1F1B's in-flight forwards and, device d, what up to
  // d + 1 deferred W parts read (PipelineSchedule.h).
  PlanCandidate zb = c;
  zb.zeroBubble = true;
  zb.runnable = runs(zb.toPlan(opt.train));
  priceMemory(zb, stages);
  zb.fits = c.fits && zb.memory <= usable;
  double perMicrobatch = c.bubble / double(c.pp - 1);
  zb.bubble =
      double(c.pp - 1) * std::max(0.0, perMicrobatch - 2 * c.weightGradTime);
  // A deferred W's reads are copied into its stash slot and back (4 passes
  // over the bytes), each microbatch, on every device but the first.
  double stashed = 0;
  for (size_t d = 1; d < stages.all.size(); ++d)
    stashed = std::max(stashed, stages.all[d].weightPassBytes);
  double copies = double(c.microbatches) * cost.kernelTime(0, 4 * stashed);
  zb.compute += copies;
  zb.stepTime = c.stepTime - c.bubble + zb.bubble + copies;
  zb.tflopsPerDevice = zb.flopsPerDevice / zb.stepTime / 1e12;
  return zb;
}

PlanCandidate PlanSearch::withZero(const PlanCandidate &base,
                                   const Stages &stages, int64_t zero) const {
  PlanCandidate c = base;
  c.zero = zero;
  c.runnable = runs(c.toPlan(opt.train));
  priceMemory(c, stages);
  priceTraining(c, stages);
  c.stepTime +=
      c.dataParallel + c.optimizer - base.dataParallel - base.optimizer;
  c.tflopsPerDevice = c.flopsPerDevice / c.stepTime / 1e12;
  c.fits = c.memory <= usable && c.layout->feasible;
  return c;
}

double PlanSearch::batchSumsTime(const PlanCandidate &c) const {
  // Once a step: the loss's sums, and batch statistics' in the forward
  // and (training) the backward.
  auto [replicas, cross] = batchReplicas(c, cluster);
  double t = 0;
  if (replicas > 1)
    for (const PlanGraph::BatchSum &sum : g.batchSums)
      t += (sum.coupled && opt.train ? 2 : 1) *
           cost.collectiveTime(CollectiveKind::AllReduce, sum.bytes, replicas,
                               cross);
  return t;
}

void PlanSearch::priceTraining(PlanCandidate &c, const Stages &stages) const {
  // Gradients are summed over every replica of a weight: data and sequence
  // groups here, the 2.5D depth with the grid's partial sums (maxGradSync).
  auto [replicas, cross] = gradientReplicas(c, cluster);
  // Without ZeRO the update reads each gradient summed: one bucketed
  // all-reduce (pcc-bucket-gradients). With it, each gradient is
  // reduce-scattered onto the dp device that updates its part and each
  // parameter all-gathered again (stages 1 and 2) or before each forward
  // and backward use, per microbatch (stage 3): one collective per tensor.
  // The sum over other replicas (sp) stays an all-reduce.
  double sync = 0, bytes = 0;
  for (const StageSummary &st : stages.all) {
    bytes = std::max(bytes, st.weightBytes);
    if (!c.zero) {
      // (A gradient partial over grid or tp axes is summed over dp in its
      // bucket of them: the dp sum carries a 1/n share of it.)
      double summed = std::max(0.0, st.weightBytes - st.gradSyncDpSaving);
      sync = std::max(sync, cost.collectiveTime(CollectiveKind::AllReduce,
                                                summed, replicas, cross));
      continue;
    }
    bool dpCross = groupCrossesNodes(c.tp * c.sp, c.dp, cluster);
    auto each = [&](CollectiveKind kind, double size, int64_t count) {
      return double(count) *
             cost.collectiveTime(kind,
                                 size / double(std::max<int64_t>(count, 1)),
                                 c.dp, dpCross);
    };
    // Weights ZeRO keeps whole over dp are all-reduced in one bucket,
    // never scattered or gathered.
    const WholeOverDp &whole = st.wholeOverDp;
    double split = st.weightBytes - whole.bytes;
    double t =
        each(CollectiveKind::ReduceScatter, split,
             st.weightTensors - whole.tensors) +
        cost.collectiveTime(CollectiveKind::AllReduce, st.weightBytes,
                            replicas / c.dp, cross) +
        (whole.tensors ? cost.collectiveTime(CollectiveKind::AllReduce,
                                             whole.bytes, c.dp, dpCross)
                       : 0.0);
    if (c.zero >= 3)
      t += double(c.microbatches) *
           (each(CollectiveKind::AllGather, split,
                 st.forwardReads - whole.forwardReads) +
            each(CollectiveKind::AllGather, st.backwardWeightBytes,
                 st.backwardTensors));
    else
      t += each(CollectiveKind::AllGather, split,
                st.weightTensors - whole.tensors);
    sync = std::max(sync, t);
  }
  c.lossSums = batchSumsTime(c);
  c.dataParallel = sync + c.lossSums + stages.maxGradSync;
  // The update runs on each device's part of every parameter under ZeRO.
  double params = bytes / eb / double(c.zero ? c.dp : 1);
  c.optimizer = cost.kernelTime(12 * params, 2 * stateBytesPerParam * params);
}

PlanCandidate PlanSearch::evaluate(int64_t pp, int64_t tg, TensorMode mode,
                                   GridShape grid, TensorLayouts scheme,
                                   int64_t sp, SequenceMode spMode, int64_t dp,
                                   int64_t m, int64_t v, Recompute recompute,
                                   int64_t zero, Pricing pricing,
                                   Stages *stagesOut) {
  double scale = 1.0 / double(dp * m * sp);
  // Full recompute repeats every forward op and collective; selective
  // only its layers' cheap ops (priced per unit in priceStages).
  bool full = recompute == Recompute::Full;
  // Forward passes of compute; a training step adds each op's backward
  // where compute is summed (stepWork).
  double cw = full ? 2 : 1;
  double cc = opt.train ? (full ? 3 : 2) : 1;
  std::shared_ptr<const SearchResult> layout = layoutFor(
      pp, dp, tg, mode, grid, scheme, m, recompute, scale, cw, cc, pricing);
  PlanCandidate c;
  c.dp = dp;
  c.pp = pp;
  c.tp = tg;
  c.sp = sp;
  c.spMode = spMode;
  c.microbatches = m;
  c.virtualStages = v;
  c.mode = mode;
  c.layouts = scheme;
  c.q = grid.first;
  c.depth = grid.second;
  c.recompute = recompute;
  c.zero = zero;
  c.layout = layout;
  c.runnable = runs(c.toPlan(opt.train));

  if (sp > 1)
    c.sequenceLayout = sequenceLayout(tg, sp, spMode, dp, m, cw, cc, pricing);
  Stages stages = priceStages(c, *layout, c.sequenceLayout.get(), cw, cc);
  const StageSummary &worst = stages.worst;

  // Point-to-point sends between stages, per microbatch: the stage that
  // sends the most sets the pace.
  double p2p = 0;
  if (pp > 1) {
    bool cross = groupCrossesNodes(dp * sp * tg, pp, cluster);
    c.transfers = stageTransfers(edges, *layout, c.stageBegin);
    std::vector<double> sendTime(pp);
    for (PlanCandidate::StageTransfer &t : c.transfers) {
      t.seconds =
          cost.collectiveTime(CollectiveKind::SendRecv, t.bytes, 2, cross);
      sendTime[t.from % pp] += t.seconds;
    }
    p2p = (opt.train ? 2 : 1) *
          *std::max_element(sendTime.begin(), sendTime.end());
  }
  double perMicrobatch = stages.worstTime + p2p;
  c.compute = double(m) * worst.compute;
  c.comm = double(m) * (cc * worst.comm + worst.backwardComm + p2p);
  // The pipeline fills and drains in (pp - 1) steps of one stage: a
  // device's share of a microbatch, or with interleaved 1F1B one chunk's
  // (Narayanan et al. 2021: the bubble shrinks by the chunks per device).
  double perChunk = c.virtualStages > 1
                        ? stages.worstChunkTime + p2p / double(c.virtualStages)
                        : perMicrobatch;
  c.bubble = double(pp - 1) * perChunk;
  c.weightGradTime = opt.train ? worst.linearCompute : 0;
  priceMemory(c, stages);
  if (opt.train)
    priceTraining(c, stages);
  else
    c.dataParallel = c.lossSums = batchSumsTime(c);
  c.stepTime =
      double(m) * perMicrobatch + c.bubble + c.dataParallel + c.optimizer;
  // Hardware FLOPs: the forward passes, and a backward of twice the
  // forward's (its products').
  c.flopsPerDevice = g.totalFlops * (cw + (opt.train ? 2 : 0)) / double(n);
  c.tflopsPerDevice = c.flopsPerDevice / c.stepTime / 1e12;
  c.fits = c.memory <= usable && layout->feasible;
  if (stagesOut)
    *stagesOut = std::move(stages);
  return c;
}

void PlanSearch::report(bool done) {
  if (!opt.progress)
    return;
  auto now = std::chrono::steady_clock::now();
  if (!done && now - lastReport < std::chrono::milliseconds(100))
    return;
  lastReport = now;
  progress.candidates = plan.evaluated;
  progress.searches = plan.ilpSolves;
  progress.seconds = std::chrono::duration<double>(now - start).count();
  progress.done = done;
  opt.progress(progress);
}

void PlanSearch::enumerate() {
  SmallVector<TensorMode, 4> modes = tensorModes();
  SmallVector<int64_t> depths;
  for (int64_t pp : divisors(n)) {
    if (!forced(opt.pp, pp) || !partRuns(pp, 1, 1, TensorMode::OneD) ||
        pp > int64_t(units.size()))
      continue;
    // Unless forced, a pipeline cuts between layers: no more stages than
    // copies of the repeated blocks.
    if (!opt.pp && g.layers() && pp > g.layers())
      continue;
    depths.push_back(pp);
  }
  progress.depths = depths.size();
  for (int64_t pp : depths) {
    ++progress.depthsDone;
    for (int64_t tg : divisors(n / pp)) {
      if (!forced(opt.tp, tg))
        continue;
      for (TensorMode mode : modes) {
        if (tg == 1 && mode != TensorMode::OneD)
          continue;
        if (auto grid = tensorGrid(mode, tg, opt.tpDepth))
          enumerateTensor(pp, tg, mode, *grid);
      }
    }
  }
}

void PlanSearch::enumerateTensor(int64_t pp, int64_t tg, TensorMode mode,
                                 GridShape grid) {
  for (int64_t sp : divisors(n / (pp * tg))) {
    if (!forced(opt.sp, sp) || !partRuns(1, sp, 1, TensorMode::OneD) ||
        (sp > 1 && (g.sequence % sp || !opt.sequenceLayouts ||
                    !hasAttention)))
      continue;
    int64_t dp = n / (pp * tg * sp);
    if (!forced(opt.dp, dp) || g.batch % dp)
      continue;
    // Cheap memory bound before any layout work: weights (and training
    // state) spread perfectly over pipeline and tensor groups.
    double perParam = bytesPerParam(zeroChoices(dp).back(), dp);
    if (double need = g.totalParams * perParam / double(pp * tg);
        need > usable) {
      ++plan.infeasible;
      if (need < leastWeightBytes) {
        leastWeightBytes = need;
        widestSplit = pp * tg;
      }
      continue;
    }
    for (SequenceMode spMode : {SequenceMode::Ulysses, SequenceMode::Ring})
      if ((sp > 1 || spMode == SequenceMode::Ulysses) &&
          (!opt.spMode || sp == 1 || *opt.spMode == spMode))
        enumerateBatch(pp, tg, mode, grid, sp, spMode, dp);
  }
}

void PlanSearch::enumerateBatch(int64_t pp, int64_t tg, TensorMode mode,
                                GridShape grid, int64_t sp,
                                SequenceMode spMode, int64_t dp) {
  for (int64_t m : divisors(g.batch / dp)) {
    int64_t mbSize = g.batch / dp / m;
    // 2D, 2.5D and 3D grids split each microbatch again, over their rows
    // and depth (the partitioner's splitBatch).
    int64_t gridParts = mode == TensorMode::OneD ? 1 : grid.first * grid.second;
    if (mbSize % gridParts)
      continue;
    bool inferenceWithoutStages = !opt.train && pp == 1;
    bool sizeForced = opt.microbatches || opt.microbatchSize;
    if (!forced(opt.microbatches, m) || !forced(opt.microbatchSize, mbSize) ||
        (!sizeForced && !inferenceWithoutStages &&
         mbSize > kMaxMicrobatchSize && m < g.batch / dp))
      continue;
    if (inferenceWithoutStages && m > 1 && !sizeForced)
      continue; // inference without stages gains nothing from it
    // Batch statistics are the whole batch's: one microbatch.
    if (m > 1 && g.couplesBatch())
      continue;
    bool batchSplit = dp > 1 || (pp > 1 && m > 1);
    for (Recompute recompute : recomputeChoices()) {
      // The searched layouts' candidate (list, index) and the fastest
      // scheme's step beside it that fits.
      std::optional<std::pair<bool, size_t>> searched;
      double schemeStep = INFINITY;
      for (TensorLayouts scheme : layoutSources(tg, mode, sp)) {
        // A scheme priced on one axis must keep its splits under the batch
        // split (unless forced: then it is priced as asked).
        if (scheme != TensorLayouts::Planned && !opt.layoutScheme &&
            batchSplit && !schemeStacks(scheme, dp, tg))
          continue;
        // ZeRO changes only memory and the gradient sync: each stage is a
        // copy of one evaluation, repriced.
        // So do interleaved pipelines' chunks (the stage cut and bubble).
        SmallVector<int64_t, 3> zeros = zeroChoices(dp);
        // Keep the fastest stage that fits (or, when none does, the one
        // that needs least memory): the others are dominated, and would
        // only crowd the finalists with copies of one layout.
        std::optional<PlanCandidate> kept;
        // A searched chunk count above 1 only shrinks the bubble: skipped
        // when even a perfect cut's microbatches (m x all units / pp)
        // take longer than the fastest plan that fits so far.
        double leastTime = 0;
        for (int64_t v : virtualChoices(pp, m)) {
          if (v > 1 && !opt.ppVirtual && leastTime >= fastestFit)
            continue;
          Stages stages;
          PlanCandidate base =
              evaluate(pp, tg, mode, grid, scheme, sp, spMode, dp, m, v,
                       recompute, zeros.front(), Pricing::Priced, &stages);
          leastTime = double(m) * stages.totalTime / double(pp);
          auto consider = [&](PlanCandidate c) {
            bool better = !kept || (c.fits != kept->fits ? c.fits
                                    : c.fits ? c.stepTime < kept->stepTime
                                             : c.memory < kept->memory);
            if (better)
              kept = std::move(c);
          };
          for (int64_t zero : zeros) {
            ++plan.evaluated;
            PlanCandidate c =
                zero == base.zero ? base : withZero(base, stages, zero);
            if (pricesZeroBubble(pp, v, m))
              consider(zeroBubbleOf(c, stages));
            if (pricesOneFOneB(pp))
              consider(std::move(c));
          }
        }
        if (!kept)
          continue;
        if (kept->fits)
          fastestFit = std::min(fastestFit, kept->stepTime);
        // Layouts are big; only the finalists keep theirs.
        kept->layout = nullptr;
        kept->sequenceLayout = nullptr;
        std::vector<PlanCandidate> &list = kept->fits ? feasible : rejected;
        if (scheme == TensorLayouts::Planned && tg > 1)
          searched = {kept->fits, list.size()};
        else if (kept->fits)
          schemeStep = std::min(schemeStep, kept->stepTime);
        list.push_back(std::move(*kept));
        report();
      }
      if (searched) {
        PlanCandidate &c =
            (searched->first ? feasible : rejected)[searched->second];
        if (schemeStep < c.stepTime)
          c.promise = schemeStep;
      }
    }
  }
}

bool faster(const PlanCandidate &a, const PlanCandidate &b) {
  return a.stepTime < b.stepTime;
}

void PlanSearch::refine() {
  // The fastest candidates get their own exact layout search (and keep
  // their layouts for the report); re-rank. Until the fastest that fits has
  // been searched exactly: an exact search can make a candidate slower (it
  // minimises the per-op objective, not the step) or not fit.
  constexpr int kExactRefine = 8;
  constexpr double kNearMiss = 1.25;
  auto searchTop = [&](std::vector<PlanCandidate> &list,
                       llvm::function_ref<bool(const PlanCandidate &)> worth) {
    // Seeded searched layouts that a scheme beat at the same degrees are
    // searched in that scheme's place (their own search may do as well).
    llvm::stable_sort(list, [](const PlanCandidate &a, const PlanCandidate &b) {
      return std::min(a.stepTime, a.promise) < std::min(b.stepTime, b.promise);
    });
    for (int k = 0, done = 0; k < int(list.size()) && done < kExactRefine;
         ++k) {
      PlanCandidate &c = list[k];
      if (c.layout || !worth(c))
        continue;
      auto again = [&](Pricing pricing) {
        Stages stages;
        PlanCandidate e = evaluate(
            c.pp, c.tp, c.mode, {c.q, c.depth}, c.layouts, c.sp, c.spMode, c.dp,
            c.microbatches, c.virtualStages, c.recompute, c.zero, pricing,
            &stages);
        return c.zeroBubble ? zeroBubbleOf(e, stages) : e;
      };
      // The exact search minimises the per-op objective within a weight
      // budget, not the step within memory: keep the seed's layouts when
      // they are the better plan.
      PlanCandidate exact = again(Pricing::Exact);
      // Training over data-parallel replicas: also the search that prices
      // the gradients' sum (it holds fewer weights whole, and may hold more
      // activations: both are priced in full and the better kept).
      if (opt.train && c.dp > 1 && c.tp > 1 && c.mode == TensorMode::OneD &&
          c.layouts == TensorLayouts::Planned) {
        PlanCandidate summed = again(Pricing::ExactSummed);
        if (summed.fits != exact.fits ? summed.fits
                                      : summed.stepTime < exact.stepTime)
          exact = std::move(summed);
      }
      bool better =
          exact.fits != c.fits ? exact.fits : exact.stepTime <= c.stepTime;
      c = better ? std::move(exact) : again(Pricing::Seeded);
      report();
      ++done;
    }
  };
  // Candidates the seed's layouts did not fit by a little and that would
  // beat the fastest that fits: their own search may fit them.
  llvm::stable_sort(feasible, faster);
  double fastest = feasible.empty() ? INFINITY : feasible.front().stepTime;
  searchTop(rejected, [&](const PlanCandidate &c) {
    return c.memory <= kNearMiss * usable && c.stepTime < fastest;
  });
  do {
    searchTop(feasible, [](const PlanCandidate &) { return true; });
    std::vector<PlanCandidate> keep;
    for (PlanCandidate &c : feasible)
      (c.fits ? keep : rejected).push_back(std::move(c));
    // A re-searched candidate that fits now moves up from the rejects.
    for (auto it = rejected.begin(); it != rejected.end();)
      if (it->fits && it->layout) {
        keep.push_back(std::move(*it));
        it = rejected.erase(it);
      } else {
        ++it;
      }
    feasible = std::move(keep);
    llvm::stable_sort(feasible, faster);
  } while (!feasible.empty() && !feasible.front().layout);
  llvm::stable_sort(rejected, faster);
}

llvm::Expected<Plan> PlanSearch::finish() {
  plan.infeasible += rejected.size();
  auto size = [](double bytes) {
    return bytes >= 1073741824.0 ? formatv("{0:F1} GiB", bytes / 1073741824.0)
                                 : formatv("{0:F1} MiB", bytes / 1048576.0);
  };
  if (feasible.empty()) {
    if (rejected.empty() && leastWeightBytes < INFINITY)
      return planError(formatv(
          "no plan fits in {0} per device: weights{1} alone need {2} per "
          "device when split over {3} pipeline and tensor device{4}",
          size(usable), opt.train ? " and training state" : "",
          size(leastWeightBytes), widestSplit, widestSplit == 1 ? "" : "s"));
    if (rejected.empty())
      return planError(formatv(
          "no plan for {0} device{2} fits the constraints (batch {1}, "
          "forced degrees must multiply to the device count and divide the "
          "batch{3})",
          n, g.batch, n == 1 ? "" : "s",
          (opt.microbatchSize
               ? formatv(", and a replica's share into microbatches of {0}",
                         opt.microbatchSize)
                     .str()
               : std::string()) +
              (opt.ppVirtual > 1
                   ? formatv("; --pp-virtual {0} needs microbatches a "
                             "multiple of pp, and pp x {0} stages at most "
                             "the model's {1} layers and other ops",
                             opt.ppVirtual, units.size())
                         .str()
                   : std::string()) +
              ((opt.microbatches > 1 || opt.microbatchSize) && g.couplesBatch()
                   ? formatv("; the model normalizes by its batch's "
                             "statistics (BatchNormalization in training "
                             "mode, at '{0}'), so a batch is one microbatch",
                             g.nodes[llvm::find_if(g.batchSums,
                                                   [](const auto &s) {
                                                     return s.coupled;
                                                   })
                                         ->node]
                                 .name)
                         .str()
                   : std::string())));
    const PlanCandidate &r = rejected.front();
    return planError(formatv("no plan fits in {0} per device: the best "
                             "candidate ({1}) needs {2}",
                             size(usable), r.label(), size(r.memory)));
  }
  plan.best = feasible.front();
  plan.considered = std::move(feasible);
  if (!rejected.empty())
    plan.considered.push_back(rejected.front());
  plan.seconds = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  return std::move(plan);
}

llvm::Expected<Plan> PlanSearch::run() {
  enumerate();
  refine();
  report(/*done=*/true);
  return finish();
}

} // namespace

llvm::Expected<Plan> makePlan(const PlanGraph &g, const ClusterSpec &cluster,
                              const PlanOptions &opt) {
  if (opt.devices < 1)
    return planError("--devices must be at least 1");
  if (opt.devices > cluster.totalDevices() && !cluster.sharedCores)
    return planError(formatv("{0} devices requested but cluster '{1}' has {2}",
                           opt.devices, cluster.name, cluster.totalDevices()));
  if (g.nodes.empty())
    return planError("the model has no compute ops to plan");
  return PlanSearch(g, cluster, opt).run();
}

} // namespace pcc
