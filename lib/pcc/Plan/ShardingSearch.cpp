//===- ShardingSearch.cpp - exact per-op layout choice (ILP, CBC) ---------===//
//
// Invariants: every option of a node is what inferOpSharding returns for
// some seed layout of its operands, so the partitioner reproduces it; an
// edge costs the steps of planReshard (Reshard.h), which the partitioner
// emits as they are; weights, arguments and constants are laid out at
// compile time, so reading them is free.
//
// The program: x[v][s] in {0,1} with sum_s x[v][s] = 1 per node; for each
// edge between two nodes with several options, continuous e[a][b] >= 0 with
// sum_b e[a][b] = x[u][a] and sum_a e[a][b] = x[v][b] (a transport
// formulation, tight for integral x); minimise the weighted compute and
// collective times.
//
//===----------------------------------------------------------------------===//

#include "pcc/Plan/ShardingSearch.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Sharding/Reshard.h"

#include "llvm/ADT/StringSet.h"

#include <Cbc_C_Interface.h>
#include <Clp_C_Interface.h>

#include <cfloat>
#include <chrono>
#include <map>
#include <tuple>

using namespace mlir;

// CBC's LP factorisations call BLAS; Debian's OpenBLAS then keeps a thread
// per core spinning (sched_yield) between calls, which took a tenth of the
// planner's time on 2 cores for programs this small. Weak: another BLAS
// may be the one installed.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace pcc {

namespace {

/// One way a node can run: what it costs and how (its layout and the
/// collectives inside it).
struct Choice : NodeCost {
  OpSharding sharding;
  SmallVector<PlannedCollective, 2> collectives;
};

std::string key(const OpSharding &s, const Mesh &mesh) {
  std::string k;
  for (const TensorSharding &t : s.operands)
    k += describe(t, mesh) + ";";
  k += "->";
  for (const TensorSharding &t : s.results)
    k += describe(t, mesh) + ";";
  return k;
}

/// The axes operand `k`'s gradient is a partial sum over, for an op laid
/// out as `s`: those its work (its results' splits and sums) is split over
/// that the operand's layout does not use.
SmallVector<int64_t, 4> partialGradientAxes(const OpSharding &s, unsigned k) {
  SmallVector<int64_t, 4> over;
  for (const TensorSharding &r : s.results) {
    SmallVector<int64_t, 4> work(r.partial.begin(), r.partial.end());
    for (const DimSharding &d : r.dims)
      llvm::append_range(work, d.axes);
    for (int64_t a : work)
      if (!s.operands[k].usesAxis(a) && !llvm::is_contained(over, a))
        over.push_back(a);
  }
  return over;
}

/// Costs one option of `op` on the per-device shapes.
Choice costOption(const PlanNode &node, OpSharding sharding, const Mesh &mesh,
                  const CostModel &cost, const SearchInput &in) {
  Operation *op = node.op;
  Choice c;
  SmallVector<SmallVector<int64_t>> local, localOut;
  for (auto [i, v, s] :
       llvm::enumerate(op->getOperands(), sharding.operands)) {
    local.push_back(localShape(shapeOf(v), s, mesh));
    if (!v.getDefiningOp<WeightOp>())
      continue;
    // A weight stored in another layout than the op reads (3D) is held in
    // that one and gathered at use.
    const TensorSharding *stored =
        i < sharding.storedOperands.size() &&
                !sharding.storedOperands[i].dims.empty()
            ? &sharding.storedOperands[i]
            : nullptr;
    bool shared =
        llvm::any_of(node.sharedWeights, [&](auto s) { return s.first == i; });
    bool frozen = llvm::is_contained(node.frozenWeights, unsigned(i));
    (frozen   ? c.frozenWeightBytes
     : shared ? c.sharedWeightBytes
              : c.weightBytes) +=
        shapeBytes(stored ? localShape(shapeOf(v), *stored, mesh)
                          : local.back(),
                   elementTypeOf(v));
    if (stored) {
      c.comm += reshardTime(*stored, s, tensorBytes(v), mesh, in.crossNode,
                            cost, &c.collectives);
      // The gathered block lives while the op runs.
      c.scratchBytes += shapeBytes(local.back(), elementTypeOf(v));
    }
  }
  for (auto [v, s] : llvm::zip(op->getResults(), sharding.results)) {
    localOut.push_back(localShape(shapeOf(v), s, mesh));
    // What weights alone make (a transposed weight) does not shrink with
    // the batch share.
    if (!node.view)
      c.resultBytes +=
          shapeBytes(localOut.back(),
                     cast<ShapedType>(v.getType()).getElementType()) *
          resultShare(node, in.scale);
  }
  bool splitWork = llvm::any_of(sharding.results, [](const TensorSharding &t) {
    return !t.isReplicated();
  });
  // A weight (or a value made of weights alone: a transposed weight) not
  // split over every axis the op's work is split over gets a partial
  // gradient over the others (a replicated weight's over all; a grid's
  // bias, split over the columns, over the rows), summed with the step's
  // gradients.
  if (in.train && splitWork) {
    for (auto [i, v, s] :
         llvm::enumerate(op->getOperands(), sharding.operands)) {
      bool weight = v.getDefiningOp<WeightOp>() &&
                    !llvm::is_contained(node.frozenWeights, unsigned(i));
      if (!weight && !llvm::is_contained(node.derivedWeights, unsigned(i)))
        continue;
      SmallVector<int64_t, 4> over = partialGradientAxes(sharding, i);
      // A weight stored split and gathered at use (addStoredSplitOptions;
      // a 3D product's, stored split over x too): its partial gradient is
      // reduce-scattered into that split (the update reads it as stored),
      // half an all-reduce's traffic. (So too where a seed fixes the
      // layout: priced as an all-reduce there, such a weight's gradient
      // was also taken off the sum over dp, 3/4 of every weight at tp 4.)
      bool scattered = i < sharding.storedOperands.size() &&
                       !sharding.storedOperands[i].dims.empty() &&
                       !sharding.storedOperands[i].isReplicated() &&
                       sharding.storedOperands[i] != s;
      if (over.empty())
        continue;
      double bytes = double(tensorBytes(v)) / double(splitFactor(s, mesh));
      if (scattered) {
        c.gradSync += cost.collectiveTime(CollectiveKind::ReduceScatter,
                                          bytes, mesh.size(over), in.crossNode);
        continue;
      }
      // Summed in its set of axes' bucket: the latency is the bucket's,
      // priced once a step (masks of the first five axes; a grid has at
      // most four). The search counts none of it per weight: one weight
      // more in a bucket adds its bytes, not a call.
      uint32_t mask = 0;
      for (int64_t a : over)
        mask |= 1u << a;
      int64_t n = mesh.size(over);
      // Only a weight read as stored, counted once in weightBytes: a value
      // made of weights (a transposed weight) is read whole where its
      // maker may be split, and its gradient then reduce-scattered back
      // into that split, not summed over dp in the bucket (nanoGPT's
      // transposed weights: a saving of 3/4 of every weight at tp 4).
      bool direct = v.getDefiningOp<WeightOp>() &&
                    llvm::none_of(node.sharedWeights,
                                  [&](auto e) { return e.first == i; });
      if (direct)
        c.gradSyncDpSaving += bytes * (1.0 - 1.0 / double(n));
      double t = cost.collectiveTime(CollectiveKind::AllReduce, bytes, n,
                                     in.crossNode);
      if (mask >= 32) {
        c.gradSync += t;
        continue;
      }
      double latency =
          cost.collectiveLatency(CollectiveKind::AllReduce, n, in.crossNode);
      c.gradSync += t - latency;
      c.gradSyncBuckets |= 1u << mask;
    }
  }
  // Ring attention: n - 1 shifts of this device's keys and values around
  // the group, overlapped with the work on the block in hand (only the
  // exceeding part costs time; see below).
  double ringComm = 0;
  if (auto attn = dyn_cast<AttentionOp>(op)) {
    // A 64 x 64 tile of scores and each row's maximum and sum.
    double queryRows = double(numElements(ArrayRef(localOut[0]).drop_back()));
    c.scratchBytes += 4 * (64 * 64 + 2 * queryRows * in.scale);
    size_t rows = shapeOf(attn.getKey()).size() - 2;
    const DimSharding &keys = sharding.operands[1].dims[rows];
    if (keys.isSplit()) {
      int64_t n = mesh.size(keys.axes);
      double bytes = (shapeBytes(local[1], elementTypeOf(attn.getKey())) +
                      shapeBytes(local[2], elementTypeOf(attn.getValue()))) *
                     in.scale;
      double t = cost.collectiveTime(CollectiveKind::RingShift, bytes, n,
                                     in.crossNode);
      for (int64_t s = 1; s < n; ++s)
        c.collectives.push_back({CollectiveKind::RingShift, -1, bytes, t});
      ringComm = double(n - 1) * t;
      c.scratchBytes += 2 * bytes;
      // The backward is not a ring (yet): the gradient's rebuilt chain
      // gathers the keys and values it reads and reduce-scatters their
      // gradients (ringAttentionBackward), instead of shifting again.
      if (in.train)
        c.backwardComm += ringAttentionBackward(attn, sharding, mesh, cost,
                                                in.scale, in.crossNode,
                                                nullptr);
    }
  }
  // SUMMA (the left operand's contraction split over one axis, the
  // weight's over another): q steps, each broadcasting a panel of each
  // along the grid's rows and columns and multiplying the panels.
  int64_t summaSteps = 1;
  if (auto axes = summaAxes(op, sharding)) {
    int64_t q = mesh.shape[axes->second];
    summaSteps = q;
    for (int i : {0, 1}) {
      double bytes = shapeBytes(local[i], elementTypeOf(op->getOperand(i))) *
                     (i == 0 ? in.scale : 1.0);
      double t = cost.collectiveTime(CollectiveKind::Broadcast, bytes, q,
                                     in.crossNode);
      for (int64_t s = 0; s < q; ++s)
        c.collectives.push_back({CollectiveKind::Broadcast, -1, bytes, t});
      c.comm += double(q) * t;
      c.scratchBytes += bytes;
    }
  }
  // A layer norm over a split hidden dimension: two all-reduces of one
  // number per row.
  if (auto ln = dyn_cast<LayerNormOp>(op);
      ln && sharding.operands[0].dims.back().isSplit()) {
    int64_t n = mesh.size(sharding.operands[0].dims.back().axes);
    double bytes = 8.0 * numElements(ArrayRef(local[0]).drop_back()) * in.scale;
    double t = cost.collectiveTime(CollectiveKind::AllReduce, bytes, n,
                                   in.crossNode);
    for (int i = 0; i < 2; ++i)
      c.collectives.push_back({CollectiveKind::AllReduce, -1, bytes, t});
    c.comm += 2 * t;
    c.scratchBytes += 2 * bytes;
  }
  // A softmax over a split axis: one all-gather of each line's (max, sum).
  if (const DimSharding *d = splitSoftmaxAxis(op, sharding.operands[0])) {
    int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
    int64_t n = mesh.size(d->axes);
    double bytes = 16.0 * numElements(local[0]) / local[0][axis] * in.scale;
    double t = cost.collectiveTime(CollectiveKind::AllGather, bytes * n, n,
                                   in.crossNode);
    c.collectives.push_back({CollectiveKind::AllGather, -1, bytes * n, t});
    c.comm += t;
    c.scratchBytes += bytes * (1 + n);
  }
  // A gemm reduce-scattering its product before C multiplies the product's
  // blocks.
  if (!sharding.reduceBeforeBias.empty())
    localOut[0] =
        localShape(shapeOf(op->getResult(0)), productBeforeBias(sharding), mesh);
  OpWork w = opWork(op, local, localOut, in.scale, &node);
  c.compute = node.view || node.epilogue
                  ? 0
                  : double(summaSteps) *
                        cost.kernelTime(w.flops, w.bytes,
                                        /*fused=*/node.fusedResult &&
                                            !node.epilogueAdds,
                                        w.gemmMinDim, w.launches, w.viaBlas);
  c.comm += std::max(0.0, ringComm - c.compute);
  if (!sharding.reduceBeforeBias.empty()) {
    double bytes = tensorBytes(op->getResult(0)) * in.scale;
    TensorSharding product = productBeforeBias(sharding), summed = product;
    summed.partial.clear();
    if (summed == sharding.results[0]) {
      double t = cost.collectiveTime(CollectiveKind::AllReduce, bytes,
                                     in.degree, in.crossNode);
      c.comm += t;
      c.collectives.push_back({CollectiveKind::AllReduce, -1, bytes, t});
    } else {
      // Reduce-scattered onto the rows (a 3D layer's bias).
      c.comm += reshardTime(product, sharding.results[0], bytes, mesh,
                            in.crossNode, cost, &c.collectives);
    }
  }
  c.sharding = std::move(sharding);
  return c;
}

/// Every distinct way `op` can run on the axis: its rule applied to
/// replicated operands and to each operand split on each dimension.
/// Whether `s` (on the one-axis tensor mesh) still holds when the batch is
/// also split: the op's rule, on the layouts with the batch split (axis 0)
/// and the tensor split (axis 1) stacked, keeps both on every result.
/// Otherwise the compiled program would gather one of them (a reshape
/// merging the batch with a split dimension), which this search, seeing one
/// axis, would not price.
bool stacksOnBatch(const PlanNode &node, const OpSharding &s, int64_t degree) {
  Mesh both;
  both.shape = {2, degree};
  both.axisNames = {"dp", "tp"};
  auto onBoth = [](const TensorSharding &t, ArrayRef<bool> batch) {
    TensorSharding out = t;
    for (auto [i, d] : llvm::enumerate(out.dims)) {
      for (int64_t &a : d.axes)
        a = 1;
      if (i < batch.size() && batch[i])
        d.axes.insert(d.axes.begin(), 0);
    }
    for (int64_t &a : out.partial)
      a = 1;
    return out;
  };
  SmallVector<TensorSharding> in, batchOnly;
  for (auto [i, t] : llvm::enumerate(s.operands)) {
    ArrayRef<bool> batch = i < node.batchDims.size()
                               ? ArrayRef<bool>(node.batchDims[i])
                               : ArrayRef<bool>();
    in.push_back(onBoth(t, batch));
    batchOnly.push_back(
        onBoth(TensorSharding::replicated(t.dims.size()), batch));
  }
  OpSharding stacked = inferOpSharding(node.op, in, both);
  // What the batch split alone gives: the tensor layout must not lose it.
  OpSharding plain = inferOpSharding(node.op, batchOnly, both);
  for (auto [want, got, base] :
       llvm::zip(s.results, stacked.results, plain.results)) {
    bool hasTensor = !want.isReplicated();
    if ((hasTensor && !got.usesAxis(1)) ||
        (base.usesAxis(0) && !got.usesAxis(0)))
      return false;
  }
  return true;
}

/// Training: each option of a product that reads a trained weight whole
/// on the axis, again with that weight stored split over the axis and
/// gathered at use (forward, backward and recompute each gather it; its
/// gradient is reduce-scattered into the split): the weight, its gradient
/// and its optimizer state held 1/n, as ZeRO-3 holds them over dp. The
/// read layouts are the option's own, so the partitioner reproduces it
/// (TrainingPropagation stores the weight so at its update,
/// kPlannedStoreAttr). Tied weights keep the layout their first reader
/// stores them in.
void addStoredSplitOptions(const PlanNode &node, const Mesh &mesh,
                           const CostModel &cost, const SearchInput &in,
                           std::vector<Choice> &options) {
  Operation *op = node.op;
  if (!in.train || in.degree <= 1 || in.grid || in.fixed || !node.linear ||
      node.derived)
    return;
  size_t plain = options.size();
  for (size_t o = 0; o < plain; ++o) {
    for (auto [k, v] : llvm::enumerate(op->getOperands())) {
      ArrayRef<int64_t> shape = shapeOf(v);
      if (!v.getDefiningOp<WeightOp>() || !isa<FloatType>(elementTypeOf(v)) ||
          shape.size() < 2 ||
          llvm::is_contained(node.frozenWeights, unsigned(k)) ||
          llvm::any_of(node.sharedWeights,
                       [&](auto s) { return s.first == k; }) ||
          !options[o].sharding.operands[k].isReplicated())
        continue;
      // Rows first: a gather of whole rows is one contiguous block each.
      auto d = llvm::find_if(shape, [&](int64_t size) {
        return size >= in.degree && size % in.degree == 0;
      });
      if (d == shape.end())
        continue;
      OpSharding s = options[o].sharding;
      s.storedOperands.resize(op->getNumOperands());
      s.storedOperands[k] = TensorSharding::replicated(shape.size());
      s.storedOperands[k].dims[d - shape.begin()].axes = {0};
      options.push_back(costOption(node, std::move(s), mesh, cost, in));
    }
  }
}

std::vector<Choice> enumerateOptions(const PlanNode &node, const Mesh &mesh,
                                     const CostModel &cost,
                                     const SearchInput &in) {
  Operation *op = node.op;
  std::vector<Choice> options;
  llvm::StringSet<> seen;
  // Splitting the batch is data parallelism's job (the outer search); a
  // tensor axis splitting it again would double-count it.
  auto onBatch = [&](const OpSharding &s) {
    for (auto [t, batch] : llvm::zip(s.operands, node.batchDims))
      for (auto [d, b] : llvm::zip(t.dims, batch))
        if (b && d.isSplit())
          return true;
    return false;
  };
  auto add = [&](ArrayRef<TensorSharding> seed) {
    OpSharding s = inferOpSharding(op, seed, mesh);
    if (onBatch(s) || (in.batchSplit && !stacksOnBatch(node, s, in.degree)))
      return;
    if (seen.insert(key(s, mesh)).second)
      options.push_back(costOption(node, std::move(s), mesh, cost, in));
  };
  SmallVector<TensorSharding> seed;
  for (Value v : op->getOperands())
    seed.push_back(TensorSharding::replicated(shapeOf(v).size()));
  add(seed);
  if (in.degree <= 1)
    return options;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    for (auto [d, size] : llvm::enumerate(shapeOf(v))) {
      if (size < in.degree || size % in.degree ||
          (i < node.batchDims.size() && node.batchDims[i][d]))
        continue;
      seed[i].dims[d].axes = {0};
      add(seed);
      // A fused Q|K|V projection's columns split group by group, as
      // Megatron lays them out: each device then holds whole heads of Q, K
      // and V, and the split into them needs no collective.
      for (auto [cols, groups] : node.fusedColumns)
        if (size == cols && size % (groups * in.degree) == 0) {
          seed[i].dims[d].groups = groups;
          add(seed);
          seed[i].dims[d].groups = 1;
        }
      seed[i].dims[d].axes.clear();
    }
  }
  addStoredSplitOptions(node, mesh, cost, in, options);
  return options;
}

struct Edge {
  int producer, consumer, operand, result;
  double mult;
};

/// What a search builds before weighing anything: every variable node's
/// options (their output reductions priced), how often each occurs, and
/// the edges between them.
struct LayoutOptions {
  std::vector<std::vector<Choice>> options;
  std::vector<double> nodeMult;
  std::vector<Edge> edges;
};

} // namespace

/// Searches with the same tensor degree, node crossing, batch split and
/// share, training or not, on searched layouts, build the same options.
struct LayoutOptionsCache::Impl {
  using Key = std::tuple<int64_t, bool, bool, double, bool>;
  std::map<Key, std::shared_ptr<const LayoutOptions>> built;
};

LayoutOptionsCache::LayoutOptionsCache() : impl(std::make_unique<Impl>()) {}
LayoutOptionsCache::~LayoutOptionsCache() = default;

namespace {

/// Time of the steps of one reshard (as planReshard gives them), each added
/// to `out` when given.
double stepsTime(ArrayRef<ReshardStep> steps, double bytes, const Mesh &mesh,
                 bool crossNode, const CostModel &cost,
                 SmallVectorImpl<PlannedCollective> *out) {
  double total = 0;
  for (const ReshardStep &step : steps) {
    int64_t n = mesh.size(step.axes);
    if (step.kind == ReshardKind::AllSlice || n <= 1)
      continue;
    CollectiveKind kind = step.kind == ReshardKind::AllReduce
                              ? CollectiveKind::AllReduce
                          : step.kind == ReshardKind::ReduceScatter
                              ? CollectiveKind::ReduceScatter
                          : step.kind == ReshardKind::AllToAll
                              ? CollectiveKind::AllToAll
                              : CollectiveKind::AllGather;
    double buffer = stepBufferBytes(step, bytes, mesh);
    double t = cost.collectiveTime(kind, buffer, n, crossNode);
    total += t;
    if (out)
      out->push_back({kind, -1, buffer, t});
  }
  return total;
}

} // namespace

double reshardTime(const TensorSharding &from, const TensorSharding &to,
                   double bytes, const Mesh &mesh, bool crossNode,
                   const CostModel &cost,
                   SmallVectorImpl<PlannedCollective> *out) {
  return stepsTime(planReshard(from, to), bytes, mesh, crossNode, cost, out);
}

double ringAttentionBackward(Operation *op, const OpSharding &layout,
                             const Mesh &mesh, const CostModel &cost,
                             double scale, bool crossNode,
                             SmallVectorImpl<PlannedCollective> *out) {
  auto attn = dyn_cast<AttentionOp>(op);
  if (!attn)
    return 0;
  size_t rows = shapeOf(attn.getKey()).size() - 2;
  if (layout.operands.size() < 3)
    return 0;
  const DimSharding &keys = layout.operands[1].dims[rows];
  if (!keys.isSplit())
    return 0;
  int64_t n = mesh.size(keys.axes);
  // The gathered buffer: the whole sequence, over the other splits (heads
  // over tp, the batch share).
  TensorSharding wholeRows = layout.operands[1];
  wholeRows.dims[rows] = DimSharding();
  int64_t others = splitFactor(wholeRows, mesh);
  double seconds = 0;
  auto add = [&](CollectiveKind kind, Value v) {
    double bytes = tensorBytes(v) * scale;
    double t = cost.collectiveTime(kind, bytes / double(others), n, crossNode);
    seconds += t;
    if (out)
      out->push_back({kind, -1, bytes, t});
  };
  ArrayRef<int64_t> q = shapeOf(attn.getQuery());
  if (q.size() == 4 && q[1] % n == 0) {
    // On the heads (TrainingPropagation's AttentionGradients): queries,
    // keys, values and the output gradient moved to heads, the three
    // gradients back to the sequence split.
    for (Value v :
         {attn.getQuery(), attn.getKey(), attn.getValue(), attn.getResult(),
          attn.getQuery(), attn.getKey(), attn.getValue()})
      add(CollectiveKind::AllToAll, v);
    return seconds;
  }
  // Keys twice (the scores' Kᵀ and the query gradient's K are two
  // layouts), values once; the key and value gradients' partial sums.
  add(CollectiveKind::AllGather, attn.getKey());
  add(CollectiveKind::AllGather, attn.getKey());
  add(CollectiveKind::AllGather, attn.getValue());
  add(CollectiveKind::ReduceScatter, attn.getKey());
  add(CollectiveKind::ReduceScatter, attn.getValue());
  return seconds;
}

double weightGradientGather(const PlanGraph &g, int i, unsigned operand,
                            const OpSharding &layout,
                            const TensorSharding &stored, const Mesh &mesh,
                            const CostModel &cost, double scale, bool crossNode,
                            SmallVectorImpl<PlannedCollective> *out,
                            const TensorSharding *dy) {
  const PlanNode &node = g.nodes[i];
  Operation *op = node.op;
  Value x = op->getOperand(operand);
  // The trained weight: read directly or through ops of weights alone (a
  // transposed weight).
  auto isWeight = [&](unsigned k) {
    Value v = op->getOperand(k);
    int p = node.producers[k];
    return isa<FloatType>(elementTypeOf(v)) &&
           (p >= 0 ? g.nodes[p].derived
                   : v.getDefiningOp<WeightOp>() &&
                         !llvm::is_contained(node.frozenWeights, k));
  };
  if (!node.linear || operand >= layout.operands.size() ||
      node.producers[operand] < 0 || !isa<FloatType>(elementTypeOf(x)) ||
      isWeight(operand))
    return 0;
  int weight = -1;
  for (unsigned k = 0; k < op->getNumOperands() && k < layout.operands.size();
       ++k)
    if (k != operand && isWeight(k)) {
      weight = int(k);
      break;
    }
  if (weight < 0)
    return 0;
  TensorSharding whole = stored;
  whole.partial.clear();
  std::vector<ReshardStep> steps = planReshard(whole, layout.operands[operand]);
  SmallVector<int64_t, 2> gathered;
  for (const ReshardStep &step : steps)
    if (step.kind == ReshardKind::AllGather)
      llvm::append_range(gathered, step.axes);
  int64_t n = mesh.size(gathered);
  if (n <= 1)
    return 0;
  // The partitioner's choice (gatherCheaperFactor, TrainingPropagation.cpp),
  // in the bytes one device moves: the input gathered again, or the
  // product run on its split rows (the output gradient moved to them where
  // it is split on those axes: an all-to-all) and the weight's partial
  // gradient brought to the weight's layout (a reduce-scatter into its
  // split, as there); a tie keeps the split rows.
  double xBytes = tensorBytes(x) * scale;
  double wBytes = tensorBytes(op->getOperand(weight));
  const TensorSharding &w = layout.operands[weight];
  TensorSharding partial = w;
  partial.gatherAxes(
      [&](int64_t a) { return llvm::is_contained(gathered, a); });
  partial.partial.assign(gathered.begin(), gathered.end());
  std::vector<ReshardStep> sum = planReshard(partial, w);
  // The output gradient, split like the result, on the gathered axes.
  const TensorSharding &y = dy ? *dy : layout.results.front();
  double yBytes = tensorBytes(op->getResult(0)) * scale;
  std::vector<ReshardStep> rows;
  for (auto [d, ds] : llvm::enumerate(y.dims))
    if (rows.empty() && llvm::any_of(gathered, [&](int64_t a) {
          return llvm::is_contained(ds.axes, a);
        })) {
      ReshardStep a2a{ReshardKind::AllToAll, gathered, int64_t(d), 1, y, y};
      a2a.toDim = 0;
      rows.push_back(a2a);
    }
  double keep =
      stepsMovedBytes(rows, yBytes, mesh) + stepsMovedBytes(sum, wBytes, mesh);
  if (stepsMovedBytes(steps, xBytes, mesh) < keep)
    return stepsTime(steps, xBytes, mesh, crossNode, cost, out);
  return stepsTime(rows, yBytes, mesh, crossNode, cost, out) +
         stepsTime(sum, wBytes, mesh, crossNode, cost, out);
}

namespace {

} // namespace

bool rereadsRecomputedOperand(const PlanNode &reader, bool gathers) {
  return isa<ContractionOpInterface>(reader.op) && !(reader.linear && gathers);
}

namespace {

/// Whether `steps` only reduce partial sums (what a recomputed reader does
/// not repeat: the kept value is reduced once).
bool reducesOnly(llvm::ArrayRef<ReshardStep> steps) {
  return llvm::all_of(steps, [](const ReshardStep &s) {
    return s.kind == ReshardKind::AllReduce ||
           s.kind == ReshardKind::ReduceScatter;
  });
}

/// The layout choice as an integer program: one variable per option of
/// every variable node, transport variables per edge with choices on both
/// ends.
class LayoutProblem {
public:
  LayoutProblem(const PlanGraph &g, const CostModel &cost,
                const SearchInput &in)
      : g(g), cost(cost), in(in), n(g.nodes.size()), mesh(meshOf(in)),
        built(optionsFor()), options(built->options),
        nodeMult(built->nodeMult), edges(built->edges), choice(n, 0) {}

  SearchResult solve();

private:
  /// Variables exist for the prefix, the first copy and the suffix.
  /// The node whose option `i` takes: its first copy, or itself when
  /// copies are priced one by one.
  int rep(int i) const { return in.fixedPerCopy ? i : g.representative(i); }
  bool isVariable(int i) const { return rep(i) == i; }
  static Mesh meshOf(const SearchInput &in) {
    if (in.grid)
      return *in.grid;
    Mesh mesh;
    mesh.shape = {std::max<int64_t>(1, in.degree)};
    mesh.axisNames = {"tp"};
    return mesh;
  }
  /// The options of `in`, from its cache where it has them.
  std::shared_ptr<const LayoutOptions> optionsFor() const;
  void collectOptions(LayoutOptions &o) const;
  /// Edges between variables, with how often each occurs in the full graph.
  void collectEdges(LayoutOptions &o) const;
  /// Function results must not stay partial sums: their reduction joins
  /// the producing option's cost.
  void priceOutputReductions(LayoutOptions &o) const;
  /// The edge's reshard as the objective weighs it (commWeight, once more
  /// where a recomputed reader repeats it).
  double edgeCost(const Edge &e, int a, int b) const;
  /// The weight of node `i`'s compute in the objective (stepWork; once
  /// more where selective recompute runs it again).
  double computeWeight(int i) const {
    return stepWork(g.nodes[i], in.computeWeight, in.train) + repeats(i);
  }
  /// Whether selective recompute runs node `i` again (SearchInput::repeated).
  bool repeats(int i) const { return in.repeated && (*in.repeated)[i]; }
  /// rereadsRecomputedOperand for kept node `i` and a reshard's `steps`.
  bool keptRereads(int i, ArrayRef<ReshardStep> steps) const {
    return rereadsRecomputedOperand(
        g.nodes[i], llvm::any_of(steps, [](const ReshardStep &s) {
          return s.kind == ReshardKind::AllGather;
        }));
  }
  /// The weight of node `i`'s own collectives.
  double commWeight(int i) const { return in.commWeight + repeats(i); }
  /// Training: what the backward adds on the edge, once per microbatch
  /// (weightGradientGather; a transposed weight's gradient sum, once a
  /// step, spread over the microbatches as gradSync is).
  double edgeBackwardCost(const Edge &e, int a, int b) const {
    if (!in.train)
      return 0;
    const OpSharding &use = options[e.consumer][b].sharding;
    const TensorSharding &made =
        options[e.producer][a].sharding.results[e.result];
    return weightGradientGather(g, e.consumer, e.operand, use, made, mesh,
                                cost, in.scale, in.crossNode, nullptr) +
           derivedGradientScatter(e.consumer, e.operand, use, e.producer,
                                  made) /
               in.microbatches;
  }
  /// Training: a value of weights alone (a transposed weight) that node
  /// `i` reads whole on axes its work is split over has a partial gradient
  /// over them, which the consumer's option prices as an all-reduce
  /// (costOption). Where its producer `p` makes it split over those axes
  /// (the weight stored split and gathered at use) the gradient is
  /// reduce-scattered into that split instead: the difference, per step.
  double derivedGradientScatter(int i, unsigned k, const OpSharding &use,
                                int p, const TensorSharding &made) const {
    const PlanNode &node = g.nodes[i];
    if (!g.nodes[p].derived || !llvm::is_contained(node.derivedWeights, k) ||
        llvm::all_of(use.results,
                     [](const TensorSharding &r) { return r.isReplicated(); }))
      return 0;
    SmallVector<int64_t, 4> over = partialGradientAxes(use, k);
    if (over.empty() ||
        !llvm::all_of(over, [&](int64_t a) { return made.usesAxis(a); }))
      return 0;
    double bytes = double(tensorBytes(node.op->getOperand(k))) /
                   double(splitFactor(use.operands[k], mesh));
    int64_t n = mesh.size(over);
    return cost.collectiveTime(CollectiveKind::ReduceScatter, bytes, n,
                               in.crossNode) -
           cost.collectiveTime(CollectiveKind::AllReduce, bytes, n,
                               in.crossNode);
  }
  /// The 0-1 program, collected whole and handed to CBC at once: adding
  /// rows one by one makes CBC copy its matrix each time, which took
  /// minutes on graphs of thousands of ops (an unrolled LSTM).
  struct Program {
    std::vector<double> objective, budgetCoef;
    std::vector<std::vector<std::pair<int, double>>> rows;
    std::vector<double> rowLow, rowHigh;
    int addVariable(double cost, double budget) {
      objective.push_back(cost);
      budgetCoef.push_back(budget);
      return int(objective.size()) - 1;
    }
    void addRow(std::vector<std::pair<int, double>> terms, double low,
                double high) {
      rows.push_back(std::move(terms));
      rowLow.push_back(low);
      rowHigh.push_back(high);
    }
  };
  /// Builds and solves the program with CBC; fills `choice`.
  void solveProgram(SearchResult &result);
  void addEdge(Program &p, const Edge &e, SearchResult &result);
  void addWeightBudget(Program &p, SearchResult &result);
  /// Spells the choice out for every node, with the collectives on its
  /// incoming edges as the partitioner will insert them.
  void spellOut(SearchResult &result) const;

  const PlanGraph &g;
  const CostModel &cost;
  const SearchInput &in;
  int n;
  Mesh mesh;
  std::shared_ptr<const LayoutOptions> built;
  const std::vector<std::vector<Choice>> &options;
  const std::vector<double> &nodeMult;
  const std::vector<Edge> &edges;
  std::vector<int> choice, firstVar;
};

std::shared_ptr<const LayoutOptions> LayoutProblem::optionsFor() const {
  auto build = [&] {
    auto o = std::make_shared<LayoutOptions>();
    o->options.resize(n);
    o->nodeMult.assign(n, 0);
    collectOptions(*o);
    collectEdges(*o);
    priceOutputReductions(*o);
    return o;
  };
  // Fixed layouts and grids cost their own options.
  if (!in.cache || in.fixed || in.grid)
    return build();
  LayoutOptionsCache::Impl::Key key(in.degree, in.crossNode, in.batchSplit,
                                    in.scale, in.train);
  std::shared_ptr<const LayoutOptions> &entry = in.cache->impl->built[key];
  if (!entry)
    entry = build();
  return entry;
}

void LayoutProblem::collectOptions(LayoutOptions &o) const {
  for (int i = 0; i < n; ++i) {
    if (!isVariable(i))
      continue;
    o.options[i] = in.fixed ? std::vector<Choice>{costOption(
                                  g.nodes[i], (*in.fixed)[i], mesh, cost, in)}
                            : enumerateOptions(g.nodes[i], mesh, cost, in);
    const RepeatedBlock *b = in.fixedPerCopy ? nullptr : g.blockOf(i);
    o.nodeMult[i] = b ? b->count : 1;
  }
}

void LayoutProblem::collectEdges(LayoutOptions &o) const {
  std::vector<Edge> &edges = o.edges;
  for (int i = 0; i < n; ++i) {
    if (!isVariable(i))
      continue;
    Operation *op = g.nodes[i].op;
    const RepeatedBlock *b = in.fixedPerCopy ? nullptr : g.blockOf(i);
    for (auto [k, p] : llvm::enumerate(g.nodes[i].producers)) {
      if (p < 0)
        continue;
      int ri = cast<OpResult>(op->getOperand(k)).getResultNumber();
      int rp = rep(p);
      if (!b) {
        edges.push_back({rp, i, int(k), ri, 1});
        continue;
      }
      double copies = b->count;
      if (p >= b->begin) { // inside the first copy
        edges.push_back({p, i, int(k), ri, copies});
        continue;
      }
      // From before the block: shared by every copy, or the first copy's
      // input that later copies take from their predecessor.
      int next = g.nodes[i + b->period].producers[k];
      if (next == p) {
        edges.push_back({rp, i, int(k), ri, copies});
      } else {
        edges.push_back({rp, i, int(k), ri, 1});
        edges.push_back({p + b->period, i, int(k), ri, copies - 1});
      }
    }
  }
}

void LayoutProblem::priceOutputReductions(LayoutOptions &o) const {
  for (auto [node, r] : g.outputs) {
    int i = rep(node);
    Value v = g.nodes[node].op->getResult(r);
    for (Choice &c : o.options[i]) {
      const TensorSharding &s = c.sharding.results[r];
      if (s.partial.empty())
        continue;
      TensorSharding whole = s;
      whole.partial.clear();
      double bytes = tensorBytes(v) * in.scale;
      c.comm += reshardTime(s, whole, bytes, mesh, in.crossNode, cost,
                            &c.collectives);
    }
  }
}

double LayoutProblem::edgeCost(const Edge &e, int a, int b) const {
  std::vector<ReshardStep> steps =
      planReshard(options[e.producer][a].sharding.results[e.result],
                  options[e.consumer][b].sharding.operands[e.operand]);
  double t = stepsTime(steps, g.resultBytes(e.producer, e.result, in.scale),
                       mesh, in.crossNode, cost, nullptr);
  // A recomputed reader reshards again, and so does a kept product's
  // gradient reading a recomputed operand; a partial sum is reduced once.
  bool again = !reducesOnly(steps) &&
               (repeats(e.consumer) ||
                (repeats(e.producer) && keptRereads(e.consumer, steps)));
  return (in.commWeight + again) * t;
}

void LayoutProblem::addEdge(Program &p, const Edge &e,
                            SearchResult &result) {
  int nu = options[e.producer].size(), nv = options[e.consumer].size();
  if (nu == 1 && nv == 1)
    return;
  if (nu == 1 || nv == 1) {
    // One side fixed: the edge cost joins the other side's objective.
    for (int s = 0; s < std::max(nu, nv); ++s) {
      auto [a, b] = nu == 1 ? std::pair(0, s) : std::pair(s, 0);
      double c =
          e.mult * (edgeCost(e, a, b) + edgeBackwardCost(e, a, b));
      int var = (nu == 1 ? firstVar[e.consumer] : firstVar[e.producer]) + s;
      p.objective[var] += c;
    }
    return;
  }
  int base = int(p.objective.size());
  for (int a = 0; a < nu; ++a)
    for (int c = 0; c < nv; ++c)
      p.addVariable(e.mult * (edgeCost(e, a, c) + edgeBackwardCost(e, a, c)),
                    0);
  // sum_b e[a][b] = x[u][a] and sum_a e[a][b] = x[v][b].
  auto marginal = [&](int count, int stride, int offset, int x) {
    std::vector<std::pair<int, double>> terms;
    for (int k = 0; k < count; ++k)
      terms.push_back({base + offset + k * stride, 1.0});
    terms.push_back({x, -1.0});
    p.addRow(std::move(terms), 0, 0);
  };
  for (int a = 0; a < nu; ++a)
    marginal(nv, 1, a * nv, firstVar[e.producer] + a);
  for (int c = 0; c < nv; ++c)
    marginal(nu, nv, c, firstVar[e.consumer] + c);
  result.constraints += nu + nv;
}

void LayoutProblem::addWeightBudget(Program &p, SearchResult &result) {
  double fixed = 0;
  for (int i = 0; i < n; ++i)
    if (options[i].size() == 1)
      fixed += nodeMult[i] * options[i][0].weightBytes * in.weightFactor;
  std::vector<std::pair<int, double>> terms;
  for (auto [v, coef] : llvm::enumerate(p.budgetCoef))
    if (coef > 0)
      terms.push_back({int(v), coef});
  if (terms.empty())
    return;
  p.addRow(std::move(terms), -DBL_MAX, in.weightBudget - fixed);
  ++result.constraints;
}

void LayoutProblem::solveProgram(SearchResult &result) {
  Program p;
  firstVar.assign(n, -1);
  for (int i = 0; i < n; ++i) {
    if (options[i].size() <= 1)
      continue;
    firstVar[i] = int(p.objective.size());
    std::vector<std::pair<int, double>> one;
    for (const Choice &c : options[i]) {
      double objective =
          nodeMult[i] * (computeWeight(i) * c.compute + commWeight(i) * c.comm +
                         c.gradSync / in.microbatches +
                         in.weightPrice * c.weightBytes * in.weightFactor);
      one.push_back({p.addVariable(objective, nodeMult[i] * c.weightBytes *
                                                  in.weightFactor),
                     1.0});
    }
    p.addRow(std::move(one), 1, 1);
    ++result.constraints;
  }
  // Only the option choices need to be integral: the edge variables of a
  // chosen pair follow from the marginal rows.
  size_t choices = p.objective.size();
  for (const Edge &e : edges)
    addEdge(p, e, result);
  if (in.weightBudget > 0)
    addWeightBudget(p, result);
  int vars = int(p.objective.size()), rows = int(p.rows.size());
  result.variables = vars;
  // Rows to compressed columns, as Cbc_loadProblem takes them.
  std::vector<CoinBigIndex> start(vars + 1, 0);
  for (const auto &row : p.rows)
    for (auto [col, coef] : row)
      ++start[col + 1];
  for (int v = 0; v < vars; ++v)
    start[v + 1] += start[v];
  std::vector<int> index(start[vars]);
  std::vector<double> value(start[vars]);
  std::vector<CoinBigIndex> fill(start.begin(), start.end() - 1);
  for (auto [r, row] : llvm::enumerate(p.rows))
    for (auto [col, coef] : row) {
      index[fill[col]] = int(r);
      value[fill[col]++] = coef;
    }
  std::vector<double> low(vars, 0), high(vars, 1);
  static const bool oneBlasThread = [] {
    if (openblas_set_num_threads)
      openblas_set_num_threads(1);
    return true;
  }();
  (void)oneBlasThread;
  auto take = [&](const double *x) {
    for (int i = 0; i < n; ++i) {
      if (firstVar[i] < 0)
        continue;
      for (size_t s = 0; s < options[i].size(); ++s)
        if (x[firstVar[i] + s] > 0.5)
          choice[i] = s;
    }
  };
  // The relaxation first: on these programs (one choice per node, edges
  // through marginal rows) its optimum is most often integral, and then it
  // is the program's optimum; branch and bound only when it is not. CBC's
  // set-up alone (its parameter table, its tree) cost more than the
  // simplex: a third of planning GPT-1T on 3072 GPUs.
  Clp_Simplex *lp = Clp_newModel();
  Clp_setLogLevel(lp, 0);
  Clp_loadProblem(lp, vars, rows, start.data(), index.data(), value.data(),
                  low.data(), high.data(), p.objective.data(), p.rowLow.data(),
                  p.rowHigh.data());
  Clp_dual(lp, 0);
  bool solved = false;
  if (Clp_isProvenPrimalInfeasible(lp)) {
    result.optimal = true;
    result.feasible = false;
    solved = true;
  } else if (Clp_isProvenOptimal(lp)) {
    const double *x = Clp_primalColumnSolution(lp);
    constexpr double kIntegral = 1e-7;
    solved = std::all_of(x, x + choices, [](double v) {
      return v < kIntegral || v > 1 - kIntegral;
    });
    if (solved) {
      result.optimal = result.feasible = true;
      take(x);
    }
  }
  Clp_deleteModel(lp);
  if (solved)
    return;
  Cbc_Model *model = Cbc_newModel();
  Cbc_setLogLevel(model, 0);
  // The primal heuristics cost more than the branch and bound they would
  // shorten on programs this small (half the search time on a 48-layer
  // GPT's candidates); the search stays exact without them.
  Cbc_setParameter(model, "heuristics", "off");
  Cbc_setMaximumSeconds(model, 30);
  // Nor do the cut generators, CBC's preprocessing or Clp's presolve: a
  // weight budget's row made the cuts take 1.2 s of one solve (806
  // branch-and-bound nodes; 5 without them) on a 105-layer GPT's
  // candidates, and presolving a program solved in a few pivots cost more
  // than the pivots (planning GPT-146B on 1536 GPUs: 3.6 s -> 2.3 s). The
  // same plans, still exact.
  Cbc_setParameter(model, "cuts", "off");
  Cbc_setParameter(model, "preprocess", "off");
  Cbc_setParameter(model, "presolve", "off");
  Cbc_loadProblem(model, vars, rows, start.data(), index.data(), value.data(),
                  low.data(), high.data(), p.objective.data(),
                  p.rowLow.data(), p.rowHigh.data());
  for (size_t v = 0; v < choices; ++v)
    Cbc_setInteger(model, int(v));
  Cbc_solve(model);
  result.optimal = Cbc_isProvenOptimal(model);
  result.feasible = !Cbc_isProvenInfeasible(model) &&
                    Cbc_getColSolution(model) != nullptr;
  if (result.feasible)
    take(Cbc_getColSolution(model));
  Cbc_deleteModel(model);
}

void LayoutProblem::spellOut(SearchResult &result) const {
  result.costs = NodeCosts(n, g.blocks, !in.fixedPerCopy);
  if (in.layouts)
    result.layouts.resize(n);
  llvm::DenseMap<Value, SmallVector<TensorSharding, 1>> resharded,
      weightOperands;
  // What selective recompute repeats (NodeCost::repeatedComm).
  const std::vector<bool> &again =
      in.repeated ? *in.repeated : g.selectiveAgain;
  auto runsAgain = [&](int j) {
    return j >= 0 && size_t(j) < again.size() && again[j];
  };
  for (int i = 0; i < n; ++i) {
    // Copies after the second are wired like the second: they cost what it
    // does.
    const RepeatedBlock *b = in.fixedPerCopy ? nullptr : g.blockOf(i);
    if (b && i >= b->begin + 2 * b->period) {
      if (!in.layouts)
        continue;
      // Collectives only: layouts are read from the first copy.
      auto &to = result.layouts[i].collectives;
      to = result.layouts[i - b->period].collectives;
      for (PlannedCollective &pc : to) {
        pc.node = i;
        // Wired like the copy before: its producers one copy later.
        if (pc.producer >= b->begin)
          pc.producer += b->period;
      }
      continue;
    }
    int r = rep(i);
    const Choice &chosen = options[r][choice[r]];
    NodeCost c = chosen;
    c.repeatedComm = runsAgain(i) ? c.comm : 0.0;
    SmallVector<PlannedCollective, 2> colls;
    if (in.layouts)
      colls = chosen.collectives;
    const PlanNode &node = g.nodes[i];
    Operation *op = node.op;
    bool trainsWeights = in.train && isTrainedProduct(node, c);
    for (auto [k, p] : llvm::enumerate(node.producers)) {
      Value v = op->getOperand(k);
      // A model input arrives in the layout the fixed layouts stored it in
      // (searched layouts take it as their reader wants it).
      bool input = p < 0 && isa<BlockArgument>(v) &&
                   k < chosen.sharding.storedOperands.size() &&
                   !chosen.sharding.storedOperands[k].dims.empty();
      const TensorSharding &to = chosen.sharding.operands[k];
      // (A model input is at hand whenever the W part runs; a value of
      // weights alone is not an activation.)
      if (trainsWeights && p >= 0 && !g.nodes[p].derived) {
        SmallVector<TensorSharding, 1> &read = weightOperands[v];
        if (!llvm::is_contained(read, to)) {
          read.push_back(to);
          c.weightOperandBytes +=
              shapeBytes(localShape(shapeOf(v), to, mesh), elementTypeOf(v)) *
              resultShare(g.nodes[p], in.scale);
        }
      }
      if (p < 0 && !input)
        continue;
      int rp = input ? -1 : rep(p);
      const TensorSharding &from =
          input ? chosen.sharding.storedOperands[k]
                : options[rp][choice[rp]]
                      .sharding.results[cast<OpResult>(v).getResultNumber()];
      if (in.train && !input) {
        c.backwardComm +=
            weightGradientGather(g, i, k, chosen.sharding, from, mesh,
                                 cost, in.scale, in.crossNode, nullptr);
        c.gradSync += derivedGradientScatter(i, k, chosen.sharding, p, from);
      }
      std::vector<ReshardStep> steps = planReshard(from, to);
      // The partitioner reshards a value once per layout, however many
      // ops read it so (a layer's input, read by its norm and its
      // residual add).
      SmallVector<TensorSharding, 1> &done = resharded[v];
      if (steps.empty() || llvm::is_contained(done, to))
        continue;
      done.push_back(to);
      size_t before = colls.size();
      double share = input ? in.scale : resultShare(g.nodes[p], in.scale);
      double t = stepsTime(steps, tensorBytes(v) * share, mesh, in.crossNode,
                           cost, in.layouts ? &colls : nullptr);
      c.comm += t;
      if (!reducesOnly(steps) &&
          (runsAgain(i) || (runsAgain(p) && keptRereads(i, steps))))
        c.repeatedComm += t;
      for (size_t j = before; j < colls.size(); ++j)
        colls[j].producer = p;
      // A gathered or moved operand is a buffer of its own while the op
      // runs (a sum's result takes its producer's place in the arena).
      if (llvm::any_of(steps, [](const ReshardStep &s) {
            return s.kind == ReshardKind::AllGather ||
                   s.kind == ReshardKind::AllToAll;
          }))
        c.scratchBytes +=
            shapeBytes(localShape(shapeOf(v), to, mesh), elementTypeOf(v)) *
            share;
    }
    result.costs[i] = c;
    if (!in.layouts)
      continue;
    for (PlannedCollective &pc : colls)
      pc.node = i;
    result.layouts[i] = {chosen.sharding, std::move(colls)};
  }
}

SearchResult LayoutProblem::solve() {
  auto start = std::chrono::steady_clock::now();
  SearchResult result;
  if (llvm::any_of(options, [](const auto &o) { return o.size() > 1; }))
    solveProgram(result);
  else
    result.optimal = true;
  spellOut(result);
  for (uint32_t m = 1; m < result.bucketLatency.size(); ++m) {
    SmallVector<int64_t, 4> axes;
    for (int64_t a = 0; a < int64_t(mesh.shape.size()); ++a)
      if (m & (1u << a))
        axes.push_back(a);
    if (int(axes.size()) == llvm::popcount(m))
      result.bucketLatency[m] = cost.collectiveLatency(
          CollectiveKind::AllReduce, mesh.size(axes), in.crossNode);
  }
  for (int i = 0; i < n; ++i) {
    const NodeCost &c = result.costs[i];
    result.objective += computeWeight(i) * c.compute + in.commWeight * c.comm +
                        (in.repeated ? c.repeatedComm : 0.0) + c.backwardComm +
                        c.gradSync / in.microbatches;
    result.weightBytes += c.weightBytes * in.weightFactor;
  }
  result.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  return result;
}

} // namespace

SearchResult searchTensorParallel(const PlanGraph &g, const CostModel &cost,
                                  const SearchInput &in) {
  return LayoutProblem(g, cost, in).solve();
}

bool layoutsStackOnBatch(const PlanGraph &g, ArrayRef<OpSharding> layouts,
                         int64_t degree) {
  for (auto [i, node] : llvm::enumerate(g.nodes))
    if (g.representative(i) == int(i) &&
        layouts[i].operands.size() == node.op->getNumOperands() &&
        !stacksOnBatch(node, layouts[i], degree))
      return false;
  return true;
}

bool copiesAlike(const PlanGraph &g, ArrayRef<OpSharding> layouts) {
  for (const RepeatedBlock &b : g.blocks)
    for (int i = b.begin + b.period; i < b.end(); ++i)
      if (!(layouts[i] == layouts[i - b.period]))
        return false;
  return true;
}

} // namespace pcc
