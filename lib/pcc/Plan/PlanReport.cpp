//===- PlanReport.cpp - plans as text, JSON and dot -----------------------===//

#include "pcc/Plan/PlanReport.h"

#include "PlanPricing.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Sharding/ShardingRules.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <map>
#include <set>

using namespace llvm;

namespace pcc {

namespace {

/// What pipeline stage [begin, end) of the ops holds: whole layers (copies
/// of the repeated blocks) by number, and the ops before, between or after.
std::string stageContents(const PlanGraph &g, int begin, int end) {
  std::string ops = end - begin == 1
                        ? formatv("op {0}", begin).str()
                        : formatv("ops {0}-{1}", begin, end - 1).str();
  if (g.blocks.empty())
    return ops;
  int first = -1, last = -1;
  for (const RepeatedBlock &b : g.blocks)
    for (int k = 0; k < b.count; ++k) {
      int a = b.begin + k * b.period, z = a + b.period;
      if (a >= begin && z <= end) {
        if (first < 0)
          first = b.firstLayer + k;
        last = b.firstLayer + k;
      }
    }
  int layersBegin = g.blocks.front().begin, layersEnd = g.blocks.back().end();
  std::string what;
  if (first >= 0)
    what = first == last ? formatv("layer {0}", first).str()
                         : formatv("layers {0}-{1}", first, last).str();
  else if (end <= layersBegin)
    what = "before the layers";
  else if (begin >= layersEnd)
    what = "after the layers";
  else if (g.layerOf(begin) >= 0)
    what = formatv("part of layer {0}", g.layerOf(begin)).str();
  else
    what = "between layers";
  if (first >= 0 && begin < layersBegin)
    what = "inputs + " + what;
  if (first >= 0 && end > layersEnd)
    what += " + outputs";
  return what + " (" + ops + ")";
}

/// The repeated blocks, as "layers 0-23: 24 copies of a 30-op block from op
/// 5", joined by "; ".
std::string layersSummary(const PlanGraph &g) {
  std::string out;
  for (const RepeatedBlock &b : g.blocks) {
    if (!out.empty())
      out += "; ";
    out += formatv("layers {0}-{1}: {2} copies of a {3}-op block from op {4}",
                   b.firstLayer, b.firstLayer + b.count - 1, b.count, b.period,
                   b.begin);
  }
  return out;
}

constexpr double kGiB = 1073741824.0;

std::string seconds(double s) {
  if (s >= 1)
    return formatv("{0:F3} s", s);
  if (s >= 1e-3)
    return formatv("{0:F3} ms", s * 1e3);
  return formatv("{0:F1} us", s * 1e6);
}

std::string bytes(double b) {
  if (b >= kGiB)
    return formatv("{0:F2} GiB", b / kGiB);
  if (b >= 1048576)
    return formatv("{0:F2} MiB", b / 1048576);
  if (b >= 1024)
    return formatv("{0:F1} KiB", b / 1024);
  return formatv("{0:F0} B", b);
}

std::string count(double v) {
  if (v >= 1e12)
    return formatv("{0:F2} T", v / 1e12);
  if (v >= 1e9)
    return formatv("{0:F2} G", v / 1e9);
  if (v >= 1e6)
    return formatv("{0:F2} M", v / 1e6);
  if (v >= 1e3)
    return formatv("{0:F1} K", v / 1e3);
  return formatv("{0:F0} ", v);
}

/// The one-axis mesh the sequence layouts are priced on (searchTensorParallel
/// names its one axis tp).
Mesh spMesh(const PlanCandidate &c) {
  Mesh m;
  m.shape = {c.sp};
  m.axisNames = {"tp"};
  return m;
}

/// Nodes shown one by one: all but the second and later block copies.
bool shown(const PlanGraph &g, int i) { return g.representative(i) == i; }

std::string layoutOf(const PlanGraph &g, const PlanCandidate &c, int i) {
  if (c.tp == 1)
    return "replicated";
  if (c.mode != TensorMode::OneD)
    return formatv("activations over the {0} grid", tensorModeName(c.mode));
  const OpSharding &s = c.layout->layouts[i].sharding;
  Mesh mesh = planning::tensorLayoutMesh(c);
  std::string out;
  for (auto [k, t] : llvm::enumerate(s.operands)) {
    if (k)
      out += ", ";
    out += describe(t, mesh);
    // A weight stored split and gathered at use.
    if (k < s.storedOperands.size() && !s.storedOperands[k].dims.empty())
      out += " (stored " + describe(s.storedOperands[k], mesh) + ")";
  }
  out += " -> ";
  for (auto [k, t] : llvm::enumerate(s.results)) {
    if (k)
      out += ", ";
    out += describe(t, mesh);
  }
  return out;
}

struct CollectiveSummary {
  std::string kind, axis, example;
  double bytes = 0, seconds = 0;
  int64_t count = 0;
};

struct ZeroTensors {
  int64_t weights = 0, forward = 0, backward = 0;
  double bytes = 0;
  /// The same counts over every pipeline device (a program's collectives,
  /// all stages counted).
  int64_t allWeights = 0, allForward = 0, allBackward = 0;
};

/// The parameter tensors of the pipeline device with the most of them,
/// ZeRO-3's gathers of them per microbatch in the forward and backward
/// passes (PlanNode), and their bytes per device.
ZeroTensors zeroTensors(const PlanGraph &g, const PlanCandidate &c) {
  // Full recompute reads a repeated layer's weights again.
  std::vector<bool> again = c.recompute == Recompute::Full
                                ? recomputedNodes(g)
                                : std::vector<bool>(g.nodes.size(), false);
  // Per pipeline device: its stages (several with interleaved 1F1B).
  std::vector<ZeroTensors> device(std::max<int64_t>(c.pp, 1));
  for (size_t s = 0; s < c.stageBegin.size(); ++s) {
    int end =
        s + 1 < c.stageBegin.size() ? c.stageBegin[s + 1] : int(g.nodes.size());
    ZeroTensors &t = device[s % device.size()];
    for (int i = c.stageBegin[s]; i < end; ++i) {
      const PlanNode &node = g.nodes[i];
      t.weights += node.weightTensors;
      t.bytes += node.params * g.elementBytes;
      t.forward += node.forwardParameterReads;
      t.backward += backwardGathers(node, again[i]);
    }
  }
  ZeroTensors best;
  for (const ZeroTensors &t : device)
    if (t.weights > best.weights)
      best = t;
  best.bytes = best.bytes / double(c.tp);
  for (const ZeroTensors &t : device) {
    best.allWeights += t.weights;
    best.allForward += t.forward;
    best.allBackward += t.backward;
  }
  return best;
}

/// Trained weights ZeRO keeps whole over dp (planning::wholeOverDp), over
/// the graph.
planning::WholeOverDp wholeOverDp(const PlanGraph &g, const PlanCandidate &c) {
  planning::WholeOverDp out;
  if (c.tp <= 1 || !c.layout || c.layout->layouts.size() != g.nodes.size())
    return out;
  Mesh mesh = planning::tensorLayoutMesh(c);
  for (int i = 0, n = g.nodes.size(); i < n; ++i) {
    const OpSharding &own = c.layout->layouts[i].sharding;
    // (Copies after the second carry their first copy's layout.)
    const OpSharding &s =
        own.operands.size() == g.nodes[i].op->getNumOperands()
            ? own
            : c.layout->layouts[g.representative(i)].sharding;
    out += planning::wholeOverDp(g, i, s, mesh, c.dp);
  }
  return out;
}

/// Every collective one step runs, grouped by kind, axis and size.
std::vector<CollectiveSummary> collectives(const PlanGraph &g,
                                           const ClusterSpec &cluster,
                                           const PlanOptions &o,
                                           const PlanCandidate &c) {
  std::map<std::tuple<std::string, std::string, double>, CollectiveSummary> m;
  double passes = o.train ? (c.recompute == Recompute::Full ? 3 : 2) : 1;
  auto add = [&](StringRef kind, StringRef axis, double b, double t,
                 int64_t times, StringRef example) {
    CollectiveSummary &s = m[{kind.str(), axis.str(), b}];
    if (s.count == 0) {
      s.kind = kind.str();
      s.axis = axis.str();
      s.bytes = b;
      s.example = example.str();
    }
    s.count += times;
    s.seconds += t * times;
  };
  int64_t perStep = c.microbatches * int64_t(passes);
  std::vector<bool> again =
      !o.train || c.recompute == Recompute::None
          ? std::vector<bool>(g.nodes.size(), false)
      : c.recompute == Recompute::Selective ? g.selectiveAgain
                                            : recomputedNodes(g);
  CostModel costs(cluster, g.dtype, o.devices);
  // A one-axis layout (`spelled`: training on it spells out its backward)
  // lists its forward collectives once per microbatch, twice at an op
  // recompute runs again (its clone reshards what it reads, the layer's
  // input included, but a kept value's partial sum is reduced once;
  // selective recompute repeats those of the ops between the kept
  // products, and a kept product's reshards of what those make), and its
  // backward's (BackwardCollectives); other layouts
  // count theirs once per pass.
  // A loss the tensor layout leaves partial over tp is summed with its sums
  // over the batch, one all-reduce over dp x tp (pcc-partition sums a
  // value's partial axes together), not one per axis.
  ReplicaGroup batch = batchReplicas(c, cluster);
  std::set<int> lossOverTp;
  // (The sum's own result, or its reader's reshard of it.)
  auto sumsLoss = [&](int node, const PlannedCollective &pc) {
    int sum = pc.producer < 0 ? node : pc.producer;
    return pc.kind == CollectiveKind::AllReduce &&
           llvm::any_of(g.batchSums, [&](const PlanGraph::BatchSum &s) {
             return s.node == sum && !s.coupled;
           });
  };
  auto sumsLossOverTp = [&](StringRef axis, int node,
                            const PlannedCollective &pc) {
    return axis == "tp" && c.lossSums > 0 && batch.size > 1 &&
           sumsLoss(node, pc);
  };
  auto list = [&](StringRef axis, ArrayRef<NodeLayout> layouts, bool spelled,
                  const Mesh &mesh, double scale, int64_t degree) {
    for (auto [i, nc] : llvm::enumerate(layouts))
      for (const PlannedCollective &pc : nc.collectives) {
        if (sumsLossOverTp(axis, i, pc)) {
          lossOverTp.insert(pc.producer < 0 ? int(i) : pc.producer);
          continue;
        }
        // A kept value's partial sum is reduced once, for every reader.
        bool reduction = pc.kind == CollectiveKind::AllReduce ||
                         pc.kind == CollectiveKind::ReduceScatter;
        // A kept product's gradient reads an operand recompute makes
        // again as the forward read it: resharded again (a linear layer's
        // gathered input is gathered again anyway: BackwardCollectives).
        // A recomputed 3D product's gathers (its input over a, its weight
        // over x) are the ones its gradient products read: the backward
        // gathers them once for both.
        bool sharedWithGradients =
            again[i] && pc.kind == CollectiveKind::AllGather &&
            cubeContraction(g.nodes[i].op, nc.sharding);
        bool repeated =
            again[i] ? !sharedWithGradients &&
                           (pc.producer < 0 || again[pc.producer] || !reduction)
                     : pc.producer >= 0 && again[pc.producer] && !reduction &&
                           rereadsRecomputedOperand(
                               g.nodes[i], pc.kind == CollectiveKind::AllGather);
        // A loss's sum over a batch split on the layout's axes (a grid's
        // rows) is summed over the microbatches first, then over the axes
        // once a step (pcc-accumulate-microbatches).
        int64_t runs = sumsLoss(i, pc) ? 1 : c.microbatches;
        add(collectiveName(pc.kind), axis, pc.bytes, pc.seconds,
            spelled ? runs * (repeated ? 2 : 1) : perStep, g.nodes[i].name);
      }
    if (!spelled)
      return BackwardCollectives();
    BackwardCollectives backward = backwardCollectives(
        g, mesh, costs, scale,
        groupCrossesNodes(1, degree, cluster), c.dp > 1,
        axis == "tp" && c.mode == TensorMode::OneD, layouts);
    for (const PlannedCollective &pc : backward.collectives)
      add(collectiveName(pc.kind), axis, pc.bytes, pc.seconds, c.microbatches,
          g.nodes[pc.node].name + " (gradient)");
    for (const PlannedCollective &pc : backward.perStep)
      add(collectiveName(pc.kind), axis, pc.bytes, pc.seconds, 1,
          g.nodes[pc.node].name + " (weight gradient)");
    // (Under ZeRO, its part is then reduce-scattered over dp: ZeRO's.)
    for (const PlannedCollective &pc : backward.storedScatters)
      add(collectiveName(pc.kind), axis, pc.bytes, pc.seconds, 1,
          g.nodes[pc.node].name + " (weight gradient)");
    // A table's partial gradient: reduce-scattered into its split (under
    // ZeRO too: planReshard scatters over tp onto that split, then over dp
    // onto ZeRO's).
    for (const PlannedCollective &pc : backward.lookupScatters)
      add(collectiveName(pc.kind), axis, pc.bytes, pc.seconds, 1,
          g.nodes[pc.node].name + " (weight gradient)");
    return backward;
  };
  bool spelled =
      o.train && c.tp > 1 && c.layout->layouts.size() == g.nodes.size();
  BackwardCollectives backward =
      list("tp", c.layout->layouts, spelled,
           planning::tensorLayoutMesh(c), 1.0 / double(c.dp * c.microbatches * c.sp), c.tp);
  double partialGradients = backward.partialGradientBytes, partialSync = 0;
  uint32_t buckets = 0;
  for (int i : backward.partialGradientNodes) {
    partialSync += c.layout->costs[i].gradSync;
    buckets |= c.layout->costs[i].gradSyncBuckets;
  }
  partialSync += c.layout->bucketsLatency(buckets);
  // Weight gradients summed over the tensor axes as well: a bucket per
  // set of them (a 3D grid's over x and y, and over x and z) beside data
  // parallelism's (without it, the only ones). Under ZeRO over the tensor
  // axes alone: ZeRO's reduce-scatter sums over dp.
  if (partialGradients > 0 && c.dp > 1) {
    int64_t sets =
        std::max<int64_t>(1, int64_t(backward.gradientSumAxes.size()));
    add("all_reduce", c.zero ? "tp" : "dp x tp",
        partialGradients / double(sets),
        partialSync / double(sets), sets,
        "gradients of weights read whole by split ops");
  }
  // The sequence axis's layouts spell out their backward as the tensor
  // axis's do (the attention's included: ringAttentionBackward).
  // Weight gradients that come out split over sp (not partial) are summed
  // over dp in a bucket of their own beside the dp x sp one.
  if (c.sequenceLayout) {
    BackwardCollectives sequence =
        list("sp", c.sequenceLayout->layouts,
             o.train && c.sequenceLayout->layouts.size() == g.nodes.size(),
             spMesh(c), 1.0 / double(c.dp * c.microbatches), c.sp);
    if (sequence.splitGradientBytes > 0 && c.dp > 1 && !c.zero) {
      double bytes = sequence.splitGradientBytes / double(c.sp);
      add("all_reduce", "dp", bytes,
          costs.collectiveTime(CollectiveKind::AllReduce, bytes, batch.size,
                               batch.crossesNodes),
          1, "gradients of weights split over sp");
    }
  }
  for (const PlanCandidate::StageTransfer &t : c.transfers)
    add("send_recv", "pp", t.bytes, t.seconds,
        c.microbatches * (o.train ? 2 : 1),
        formatv("{0} (stage {1} to {2})", g.nodes[t.producer].name, t.from,
                t.to)
            .str());
  if (c.lossSums > 0) {
    // As priceTraining prices them (PlanGraph::batchSums).
    CostModel cost(cluster, g.dtype, o.devices);
    for (const PlanGraph::BatchSum &sum : g.batchSums) {
      ReplicaGroup r = batch;
      bool withTp = lossOverTp.count(sum.node);
      if (withTp) {
        r.size *= c.tp;
        r.crossesNodes |= groupCrossesNodes(1, c.tp, cluster);
      }
      add("all_reduce", withTp ? "dp x tp" : "dp", sum.bytes,
          cost.collectiveTime(CollectiveKind::AllReduce, sum.bytes, r.size,
                              r.crossesNodes),
          sum.coupled && o.train ? 2 : 1,
          !sum.coupled ? "the loss's sums over the batch"
          : o.train    ? "batch statistics, forward and backward"
                       : "batch statistics");
    }
  }
  // Every weight's gradient summed over dp in its grid axes' bucket (a
  // 2.5D grid's depth splits the batch: each weight's gradient is partial
  // over it): data parallelism has no bucket of its own.
  bool allInGridSums = spelled && c.dp > 1 && c.sp == 1 &&
                       partialGradients > 0 && backward.unsummedWeights == 0;
  if (o.train && c.dataParallel > 0 && !c.zero && !allInGridSums) {
    // pcc-bucket-gradients sums each pipeline stage's gradients (f32) in
    // buckets of up to 25 MiB: one all-reduce each.
    int64_t buckets = 0;
    for (size_t s = 0; s < c.stageBegin.size(); ++s) {
      int end = s + 1 < c.stageBegin.size() ? c.stageBegin[s + 1]
                                            : int(g.nodes.size());
      double params = 0;
      for (int i = c.stageBegin[s]; i < end; ++i)
        params += g.nodes[i].params;
      if (params > 0)
        buckets += std::max<int64_t>(
            1, int64_t(std::ceil(params * 4 / double(c.tp) / (25 << 20))));
    }
    buckets = std::max<int64_t>(buckets, 1);
    // A grid without dp sums its partial gradients over the grid's axes:
    // one bucket per set of them (2.5D: weights over the depth, biases
    // over the depth and the rows).
    // Those buckets hold the partial gradients alone, not every weight's.
    bool gridSums = c.mode != TensorMode::OneD && c.dp == 1 && c.sp == 1;
    if (gridSums)
      buckets = std::max<int64_t>(buckets, backward.gradientSumAxes.size());
    add("all_reduce",
        c.sp > 1   ? "dp x sp"
        : c.dp > 1 ? "dp"
                   : "tp",
        (gridSums ? partialGradients : c.weightMemory) / double(buckets),
        (c.dataParallel - c.lossSums) / double(buckets), buckets, "gradients");
  }
  if (c.dataParallel > 0 && c.zero) {
    // One collective per weight tensor of the fullest stage (as
    // Planner.cpp prices them): gradients reduce-scattered once a step,
    // parameters gathered after the update (stages 1, 2) or before each
    // forward and backward use of every microbatch (stage 3).
    // Counted over every pipeline device; their time is the fullest
    // device's (the devices of other stages run theirs meanwhile).
    ZeroTensors t = zeroTensors(g, c);
    // Weights no dimension of which splits over dp (fused Q|K|V biases
    // split by groups): all-reduced over dp, one bucket, never gathered.
    planning::WholeOverDp whole = wholeOverDp(g, c);
    int64_t split = t.allWeights - whole.tensors;
    int64_t gathers =
        c.zero >= 3 ? c.microbatches * (t.allForward + t.allBackward -
                                        whole.forwardReads)
                    : split;
    double wholeSync =
        whole.tensors
            ? costs.collectiveTime(CollectiveKind::AllReduce, whole.bytes,
                                   c.dp,
                                   groupCrossesNodes(c.tp * c.sp, c.dp, cluster))
            : 0.0;
    double half = std::max(0.0, c.dataParallel - c.lossSums - wholeSync) / 2,
           each = t.bytes / double(std::max<int64_t>(t.weights, 1));
    double gather = half / double(std::max<int64_t>(gathers, 1));
    add("reduce_scatter", "dp", each, half / double(std::max<int64_t>(split, 1)),
        split, "gradients");
    add("all_gather", "dp", each, gather, gathers,
        c.zero >= 3 ? "parameters before use" : "parameters");
    if (whole.tensors)
      add("all_reduce", "dp", whole.bytes, wholeSync, 1,
          "gradients ZeRO cannot split over dp");
  }
  std::vector<CollectiveSummary> out;
  for (auto &[k, s] : m)
    out.push_back(s);
  llvm::stable_sort(out, [](const auto &a, const auto &b) {
    return a.seconds > b.seconds;
  });
  return out;
}

std::string family(const PlanCandidate &c) {
  std::string f;
  if (c.dp > 1)
    f += "data";
  if (c.pp > 1)
    f += f.empty() ? "pipeline" : " + pipeline";
  if (c.tp > 1)
    f += (f.empty() ? "" : " + ") + ("tensor " + tensorModeName(c.mode)).str();
  if (c.sp > 1)
    f += f.empty() ? "sequence" : " + sequence";
  return f.empty() ? "single device" : f;
}

/// Why the best plan beats the best of every other family of plans.
void explain(raw_ostream &os, const PlanOptions &o, const Plan &plan) {
  const PlanCandidate &b = plan.best;
  os << "why this plan:\n";
  os << formatv("  {0} is the fastest of {1} candidates that fit ({2} "
                "evaluated, {3} rejected for memory).\n",
                b.label(), plan.considered.size() - (plan.considered.back().fits ? 0 : 1),
                plan.evaluated, plan.infeasible);
  double parts = b.compute + b.comm + b.bubble + b.dataParallel + b.optimizer;
  if (parts > 0)
    os << formatv("  its step is {0:P0} compute, {1:P0} tensor/sequence/"
                  "pipeline communication, {2:P0} bubble, {3:P0} {5}, "
                  "{4:P0} optimizer.\n",
                  b.compute / parts, b.comm / parts, b.bubble / parts,
                  b.dataParallel / parts, b.optimizer / parts,
                  o.train ? "gradient all-reduce" : "sums over the batch");
  std::map<std::string, const PlanCandidate *> bestOf;
  for (const PlanCandidate &c : plan.considered)
    if (c.fits && !bestOf.count(family(c)))
      bestOf[family(c)] = &c;
  for (auto &[fam, c] : bestOf) {
    if (fam == family(b))
      continue;
    std::string reason;
    auto diff = [&](double mine, double theirs, StringRef what) {
      if (theirs - mine > 0.05 * b.stepTime)
        reason += formatv("{0}{1} +{2}", reason.empty() ? "" : ", ", what,
                          seconds(theirs - mine));
    };
    diff(b.compute, c->compute, "compute");
    diff(b.comm, c->comm, "communication");
    diff(b.bubble, c->bubble, "bubble");
    diff(b.dataParallel, c->dataParallel, "gradient all-reduce");
    diff(b.optimizer, c->optimizer, "optimizer");
    if (reason.empty())
      reason = "within noise of the winner";
    os << formatv("  best {0} plan, {1}: {2} ({3:F2}x the step time; {4})\n",
                  fam, c->label(), seconds(c->stepTime),
                  c->stepTime / b.stepTime, reason);
  }
  if (!plan.considered.back().fits) {
    const PlanCandidate &r = plan.considered.back();
    os << formatv("  fastest plan that does not fit: {0}, {1}, needs {2} per "
                  "device\n",
                  r.label(), seconds(r.stepTime), bytes(r.memory));
  }
  if (!o.train && b.pp == 1 && b.dp > 1)
    os << "  inference with data parallelism needs no collectives: each "
          "device runs its share of the batch.\n";
}

} // namespace

void printPlanText(raw_ostream &os, const PlanGraph &g,
                   const ClusterSpec &cluster, const PlanOptions &o,
                   const Plan &plan, const ReportOptions &r) {
  const PlanCandidate &b = plan.best;
  os << formatv("pcc plan: {0} on {1} x {2} (cluster {3}), {4}, {5}\n",
                r.modelPath, o.devices,
                cluster.deviceName.empty() ? std::string("device")
                                           : cluster.deviceName,
                cluster.name, o.train ? "training (Adam)" : "inference",
                g.dtype);
  // pcc plan prices CPU ranks' kernels unless told --target cuda, on a GPU
  // spec too: the report says which.
  if (!r.target.empty())
    os << formatv("priced for: {0} ranks' kernels{1}\n", r.target,
                  r.target == "cpu" && !cluster.sharedCores
                      ? " (--target cuda prices the kernels pcc compiles for "
                        "GPU ranks)"
                      : "");
  os << formatv("model: {0}parameters, {1}FLOP per forward pass, batch {2}, "
                "{3} ops",
                count(g.totalParams), count(g.totalFlops), g.batch,
                g.nodes.size());
  if (!g.blocks.empty())
    os << " (" << layersSummary(g) << ")";
  os << "\n";
  if (g.vocabulary.padded)
    os << formatv("vocabulary: {0} tokens padded to {1} (zero rows to a "
                  "multiple of {2}, as Megatron-LM pads: 128 x the tensor "
                  "degree; --vocab-multiple) so tensor parallelism splits "
                  "it\n",
                  g.vocabulary.rows, g.vocabulary.padded,
                  g.vocabulary.multiple);
  os << "\n";
  os << formatv("plan: {0}\n", b.label());
  os << formatv("mesh: dp={0} pp={1} tp={2} ({3}", b.dp, b.pp, b.tp,
                tensorModeName(b.mode));
  if (b.mode != TensorMode::OneD && b.tp > 1)
    os << formatv(", q={0}, depth={1}", b.q, b.depth);
  os << formatv(") sp={0}; microbatches {1} of {2}; recompute {3}; ", b.sp,
                b.microbatches, g.batch / (b.dp * b.microbatches),
                recomputeName(b.recompute));
  if (o.train && b.dp > 1)
    os << formatv("ZeRO {0}; ", b.zero ? std::to_string(b.zero) : "none");
  if (o.train && b.pp > 1)
    os << (b.virtualStages > 1
               ? formatv("schedule interleaved 1F1B ({0} chunks per device, "
                         "{1} stages); ",
                         b.virtualStages, b.pp * b.virtualStages)
                     .str()
           : b.zeroBubble
               ? std::string("schedule ZB-H1 (weight gradients deferred "
                             "into the bubble); ")
               : std::string("schedule 1F1B; "));
  os << formatv("compiles and runs here: {0}\n", b.runnable ? "yes" : "no");
  os << formatv("predicted step: {0} = compute {1} + communication {2} + "
                "bubble {3}",
                seconds(b.stepTime), seconds(b.compute), seconds(b.comm),
                seconds(b.bubble));
  if (o.train)
    os << formatv(" + gradient {0} {1} + optimizer {2}",
                  b.zero ? "reduce-scatter/all-gather" : "all-reduce",
                  seconds(b.dataParallel), seconds(b.optimizer));
  else if (b.dataParallel > 0)
    os << formatv(" + sums over the batch {0}", seconds(b.dataParallel));
  os << "\n";
  os << formatv("throughput: {0:F2} TFLOP/s per device ({1:P1} of {2} "
                "peak)\n",
                b.tflopsPerDevice,
                b.tflopsPerDevice * 1e12 / cluster.peak(g.dtype), g.dtype);
  os << formatv("memory per device: {0} = weights {1} + optimizer state "
                "{2} + activations {3} (of {4})\n",
                bytes(b.memory), bytes(b.weightMemory), bytes(b.stateMemory),
                bytes(b.activationMemory), bytes(cluster.memoryBytes));
  if (b.pp > 1) {
    os << "stages:\n";
    for (size_t s = 0; s < b.stageBegin.size(); ++s) {
      int end = s + 1 < b.stageBegin.size() ? b.stageBegin[s + 1]
                                            : int(g.nodes.size());
      os << formatv("  {0,-3} {1}{2}\n", s,
                    b.virtualStages > 1
                        ? formatv("(device {0}) ", s % b.pp).str()
                        : std::string(),
                    stageContents(g, b.stageBegin[s], end));
      if (s == 7 && b.stageBegin.size() > 9) {
        os << formatv("  ... ({0} stages)\n", b.stageBegin.size());
        break;
      }
    }
  }

  os << "\ncollectives per step:\n";
  for (const CollectiveSummary &s : collectives(g, cluster, o, b))
    os << formatv("  {0,-14} {1,-8} {2,12} x {3,-6} {4,12}  e.g. {5}\n",
                  s.kind, s.axis, bytes(s.bytes), s.count, seconds(s.seconds),
                  s.example);

  if (b.tp > 1) {
    os << "\nlayouts on the tensor axis";
    if (g.blocks.size() == 1)
      os << formatv(" (block ops shown once, all {0} copies alike)",
                    g.blocks[0].count);
    else if (!g.blocks.empty())
      os << " (each block's ops shown once, all its copies alike)";
    os << ":\n";
    int shownCount = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!shown(g, i))
        continue;
      if (++shownCount > 200) {
        os << "  ...\n";
        break;
      }
      const NodeLayout &nc = b.layout->layouts[i];
      os << formatv("  {0,-40} {1,-14} {2}", g.nodes[i].name,
                    g.nodes[i].op->getName().stripDialect(), layoutOf(g, b, i));
      for (const PlannedCollective &pc : nc.collectives)
        os << formatv("  [{0} {1}]", collectiveName(pc.kind), bytes(pc.bytes));
      os << "\n";
    }
  }

  if (r.compare) {
    os << "\nalternatives (fastest first):\n";
    os << formatv("  {0,-4} {1,-44} {2,12} {3,12} {4,12} {5,12} {6,11} {7,8}\n",
                  "#", "plan", "step", "compute", "comm", "bubble", "memory",
                  "TFLOP/s");
    int shownAlt = 0;
    for (const PlanCandidate &c : plan.considered) {
      if (shownAlt++ >= r.alternatives && c.fits)
        continue;
      os << formatv("  {0,-4} {1,-44} {2,12} {3,12} {4,12} {5,12} {6,11} "
                    "{7,8:F2}{8}\n",
                    c.fits ? std::to_string(shownAlt) : std::string("-"),
                    c.label(), seconds(c.stepTime), seconds(c.compute),
                    seconds(c.comm), seconds(c.bubble), bytes(c.memory),
                    c.tflopsPerDevice, c.fits ? "" : "  (does not fit)");
    }
  }
  if (r.explain) {
    os << "\n";
    explain(os, o, plan);
  }
  os << formatv("\nsearch: {0} candidates, {1} exact layout searches, {2:F3} "
                "s\n",
                plan.evaluated, plan.ilpSolves, plan.seconds);
}

static json::Object candidateJSON(const PlanGraph &g, const PlanCandidate &c) {
  return json::Object{
      {"label", c.label()},
      {"mesh", json::Object{{"dp", c.dp},
                            {"pp", c.pp},
                            {"tp", c.tp},
                            {"tp_mode", tensorModeName(c.mode)},
                            {"q", c.q},
                            {"depth", c.depth},
                            {"sp", c.sp},
                            {"sp_mode", sequenceModeName(c.spMode)},
                            {"zero", c.zero}}},
      {"microbatches", c.microbatches},
      {"virtual_stages", c.virtualStages},
      {"pipeline_schedule", c.pp == 1             ? "none"
                            : c.zeroBubble        ? "zb-h1"
                            : c.virtualStages > 1 ? "interleaved-1f1b"
                                                  : "1f1b"},
      {"microbatch_size", g.batch / (c.dp * c.microbatches)},
      {"recompute", recomputeName(c.recompute)},
      {"runnable", c.runnable},
      {"fits", c.fits},
      {"predicted", json::Object{{"step_time_s", c.stepTime},
                                 {"compute_s", c.compute},
                                 {"communication_s", c.comm},
                                 {"bubble_s", c.bubble},
                                 {"gradient_allreduce_s", c.dataParallel},
                                 {"optimizer_s", c.optimizer},
                                 {"tflops_per_device", c.tflopsPerDevice}}},
      {"memory_per_device_bytes",
       json::Object{{"total", c.memory},
                    {"weights", c.weightMemory},
                    {"optimizer_state", c.stateMemory},
                    {"activations", c.activationMemory}}}};
}

void printPlanJSON(raw_ostream &os, const PlanGraph &g,
                   const ClusterSpec &cluster, const PlanOptions &o,
                   const Plan &plan, const ReportOptions &r) {
  json::Object root = candidateJSON(g, plan.best);
  root["schema"] = "pcc-plan-report/1";
  root["model"] = json::Object{{"path", r.modelPath},
                               {"parameters", g.totalParams},
                               {"forward_flops", g.totalFlops},
                               {"dtype", g.dtype},
                               {"batch", g.batch},
                               {"ops", int64_t(g.nodes.size())}};
  if (g.vocabulary.padded)
    root["model"].getAsObject()->try_emplace(
        "vocabulary", json::Object{{"rows", g.vocabulary.rows},
                                   {"padded", g.vocabulary.padded},
                                   {"multiple", g.vocabulary.multiple}});
  root["cluster"] = cluster.name;
  root["devices"] = o.devices;
  root["train"] = o.train;
  json::Array stages;
  for (int s : plan.best.stageBegin)
    stages.push_back(s);
  root["stage_first_op"] = std::move(stages);
  json::Array colls;
  for (const CollectiveSummary &s : collectives(g, cluster, o, plan.best))
    colls.push_back(json::Object{{"kind", s.kind},
                                 {"axis", s.axis},
                                 {"bytes", s.bytes},
                                 {"count_per_step", s.count},
                                 {"seconds_per_step", s.seconds},
                                 {"example", s.example}});
  root["collectives"] = std::move(colls);
  if (plan.best.tp > 1 && plan.best.mode == TensorMode::OneD) {
    json::Array layouts;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (shown(g, i))
        layouts.push_back(json::Object{{"op", g.nodes[i].name},
                                       {"layout", layoutOf(g, plan.best, i)}});
    root["layouts"] = std::move(layouts);
  }
  json::Array alts;
  for (const PlanCandidate &c : plan.considered) {
    if (int64_t(alts.size()) >= r.alternatives)
      break;
    alts.push_back(candidateJSON(g, c));
  }
  root["alternatives"] = std::move(alts);
  root["search"] = json::Object{{"evaluated", plan.evaluated},
                                {"exact_layout_searches", plan.ilpSolves},
                                {"rejected_for_memory", plan.infeasible},
                                {"seconds", plan.seconds}};
  os << formatv("{0:2}", json::Value(std::move(root))) << "\n";
}

void printPlanDot(raw_ostream &os, const PlanGraph &g, const Plan &plan) {
  const PlanCandidate &b = plan.best;
  auto esc = [](StringRef s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\')
        out += '\\';
      out += c;
    }
    return out;
  };
  os << "digraph plan {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n";
  os << formatv("  label=\"{0}\";\n", esc(b.label()));
  std::vector<int> stageOf(g.nodes.size(), 0);
  for (size_t s = 0; s < b.stageBegin.size(); ++s)
    for (size_t i = b.stageBegin[s]; i < g.nodes.size(); ++i)
      stageOf[i] = s;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!shown(g, i))
      continue;
    bool inBlock = g.blockOf(i) != nullptr;
    os << formatv("  n{0} [label=\"{1}\\n{2}\\n{3}{4}\"{5}];\n", i,
                  esc(g.nodes[i].name),
                  g.nodes[i].op->getName().stripDialect(),
                  esc(layoutOf(g, b, i)),
                  b.pp > 1 ? formatv("\\nstage {0}", stageOf[i]).str() : "",
                  inBlock ? ", style=filled, fillcolor=lightyellow" : "");
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!shown(g, i))
      continue;
    const NodeLayout &nc = b.layout->layouts[i];
    for (int p : g.nodes[i].producers) {
      if (p < 0)
        continue;
      int rp = g.representative(p);
      bool comm = !nc.collectives.empty();
      os << formatv("  n{0} -> n{1}{2};\n", rp, i,
                    comm ? " [color=red, penwidth=2]" : "");
    }
  }
  if (!g.blocks.empty())
    os << "  note [shape=note, label=\"yellow ops: the first of a repeated "
          "block's identical copies\"];\n";
  os << "}\n";
}

} // namespace pcc
