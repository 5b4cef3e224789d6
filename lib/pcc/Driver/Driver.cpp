//===- Driver.cpp - the compilation pipeline as a library -----------------===//

#include "pcc/Driver/Driver.h"

#include "pcc/Autodiff/TrainStep.h"
#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/Transforms/Passes.h"
#include "pcc/Import/WeightReader.h"
#include "pcc/Partition/Passes.h"
#include "pcc/Partition/Propagation.h"
#include "pcc/Partition/Stages.h"
#include "pcc/Partition/Strategy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace pcc {

namespace {

Error failure(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// Records the planner's per-op tensor-axis layouts on the ops, for
/// pcc-apply-plan with planned layouts: layouts on the tp axis alone, written
/// as axis 0 of a stand-in one-axis grid.
void recordPlannedLayouts(const PlanGraph &graph, const SearchResult &layout) {
  Mesh tensorAxis;
  tensorAxis.name = "plan";
  tensorAxis.shape = {2};
  tensorAxis.axisNames = {"tp"};
  for (auto [i, node] : llvm::enumerate(graph.nodes)) {
    // Later copies of a repeated block carry costs only; their layout is
    // their first copy's.
    const OpSharding &s = layout.layouts[graph.representative(i)].sharding;
    if (s.operands.size() != node.op->getNumOperands())
      continue;
    setOperandShardings(node.op, kPlannedShardingAttr, tensorAxis,
                        s.operands);
    // Weights the search stores split and gathers at use.
    for (auto [k, stored] : llvm::enumerate(s.storedOperands))
      if (auto w = node.op->getOperand(k).getDefiningOp<WeightOp>();
          w && !stored.dims.empty())
        w->setAttr(kPlannedStoreAttr,
                   toAttr(w.getContext(), tensorAxis, stored));
  }
}

int64_t orOne(int64_t degree) { return std::max<int64_t>(1, degree); }

} // namespace

Expected<ClusterSpec> chooseCluster(StringRef name) {
  if (!name.empty())
    return loadCluster(name);
  if (sys::fs::exists(hostClusterPath()))
    return loadCluster("host");
  return loadCluster("dgx-a100");
}

mlir::OwningOpRef<mlir::ModuleOp> loadModel(StringRef path,
                                            mlir::MLIRContext &context,
                                            const ImportOptions &options,
                                            bool cleanup) {
  auto module = importONNXFile(path, context, options);
  if (!module || !cleanup)
    return module;
  mlir::PassManager pm(&context);
  buildImportCleanupPipeline(pm);
  if (mlir::failed(pm.run(*module))) {
    mlir::emitError(mlir::UnknownLoc::get(&context), "cleanup pipeline failed");
    return nullptr;
  }
  return module;
}

mlir::LogicalResult convertPrecision(mlir::ModuleOp module,
                                     StringRef precision) {
  mlir::PassManager pm(module.getContext());
  ConvertPrecisionOptions options;
  options.precision = precision.str();
  pm.addPass(createConvertPrecision(options));
  return pm.run(module);
}

namespace {

/// The degrees a compile runs when some are forced: the devices the forced
/// ones leave go to dp, else (dp forced) to tp.
struct ForcedDegrees {
  int64_t dp, tp, pp, sp;
};
ForcedDegrees forcedDegrees(const PlanOptions &o) {
  ForcedDegrees d{orOne(o.dp), orOne(o.tp), orOne(o.pp), orOne(o.sp)};
  int64_t rest = o.devices / (d.dp * d.tp * d.pp * d.sp);
  if (!o.dp)
    d.dp = rest;
  else if (!o.tp)
    d.tp = rest;
  return d;
}

bool anyForced(const PlanOptions &o) { return o.dp || o.tp || o.pp || o.sp; }

} // namespace

int64_t vocabularyDegree(const PlanOptions &o) {
  if (anyForced(o))
    return std::max<int64_t>(forcedDegrees(o).tp, 1);
  int64_t degree = 1;
  while (degree < 8 && o.devices % (degree * 2) == 0)
    degree *= 2;
  return degree;
}

mlir::LogicalResult padVocabulary(mlir::ModuleOp module, int64_t degree,
                                  int64_t multiple) {
  if (degree <= 1)
    return mlir::success();
  mlir::PassManager pm(module.getContext());
  PadVocabularyOptions options;
  options.tensorDegree = degree;
  options.multiple = multiple;
  pm.addNestedPass<mlir::func::FuncOp>(createPadVocabulary(options));
  return pm.run(module);
}

mlir::LogicalResult fuseSiblingGemms(mlir::ModuleOp module,
                                     ArrayRef<std::string> keep) {
  mlir::PassManager pm(module.getContext());
  FuseSiblingGemmsOptions options;
  options.keep.assign(keep.begin(), keep.end());
  pm.addNestedPass<mlir::func::FuncOp>(createFuseSiblingGemms(options));
  return pm.run(module);
}

Expected<PlanOptions> completeDegrees(PlanOptions o, bool devicesGiven) {
  if (o.devices < 1)
    return failure("--devices must be at least 1, got " + Twine(o.devices));
  // Forced degrees without --devices: the devices they need.
  if (!devicesGiven && (o.dp || o.tp || o.pp || o.sp))
    o.devices = orOne(o.dp) * orOne(o.tp) * orOne(o.pp) * orOne(o.sp);
  int64_t forced = orOne(o.dp) * orOne(o.tp) * orOne(o.pp) * orOne(o.sp);
  bool allForced = o.dp && o.tp && o.pp && o.sp;
  if (o.devices % forced || (allForced && forced != o.devices))
    return failure(formatv("forced degrees (dp {0}, tp {1}, pp {2}, sp {3}) "
                           "do not multiply to --devices {4}",
                           orOne(o.dp), orOne(o.tp), orOne(o.pp), orOne(o.sp),
                           o.devices));
  return o;
}

namespace {

/// Per graph node, its layout in `byOp` (none when absent).
std::vector<OpSharding>
perNode(const PlanGraph &graph,
        llvm::DenseMap<mlir::Operation *, OpSharding> byOp) {
  std::vector<OpSharding> out;
  out.reserve(graph.nodes.size());
  for (const PlanNode &n : graph.nodes) {
    auto it = byOp.find(n.op);
    out.push_back(it == byOp.end() ? OpSharding() : std::move(it->second));
  }
  return out;
}

/// ZeRO-3's gathers in the backward pass of `step` (a training step built
/// from the ops `original` maps back), per forward node: each read of a
/// trained parameter by a gradient op, and each parameter read of a value
/// made from weights alone, made again at its first backward reader
/// (propagateShardings).
void countBackwardParameterReads(
    mlir::func::FuncOp step,
    const llvm::DenseMap<mlir::Operation *, mlir::Operation *> &original,
    const llvm::DenseMap<mlir::Operation *, PlanNode *> &nodeOf) {
  mlir::Block &body = step.getBody().front();
  llvm::DenseSet<mlir::Value> trained, remade;
  for (mlir::Operation &op : body)
    if (op.hasAttr(kOptimizerAttr))
      for (mlir::Value v : op.getOperands())
        if (v.getDefiningOp<WeightOp>())
          trained.insert(v);
  llvm::DenseMap<int64_t, PlanNode *> byForwardId;
  for (auto [op, orig] : original)
    if (auto id = op->getAttrOfType<mlir::IntegerAttr>(kForwardIdAttr))
      if (PlanNode *node = nodeOf.lookup(orig))
        byForwardId[id.getInt()] = node;
  llvm::DenseSet<mlir::Value> views = valuesMadeOfWeights(body);
  std::function<void(mlir::Value, PlanNode &)> count = [&](mlir::Value v,
                                                           PlanNode &node) {
    if (trained.contains(v)) {
      ++node.backwardParameterReads;
      node.backwardParameterElements +=
          double(cast<mlir::ShapedType>(v.getType()).getNumElements());
    } else if (views.contains(v) && remade.insert(v).second) {
      for (mlir::Value o : v.getDefiningOp()->getOperands())
        count(o, node);
    }
  };
  for (mlir::Operation &op : body)
    if (auto of = op.getAttrOfType<mlir::IntegerAttr>(kGradientOfAttr))
      if (PlanNode *node = byForwardId.lookup(of.getInt()))
        for (mlir::Value v : op.getOperands())
          count(v, *node);
}

/// Marks the graph nodes whose results the training step's backward reads
/// (PlanNode::savedForBackward), from the step built on a copy of `fn`
/// (which returns the loss: its own, or the one --loss added). Left as they
/// are (all saved) when the step cannot be built.
void markSavedResults(mlir::func::FuncOp fn, ArrayRef<std::string> frozen,
                      PlanGraph &graph) {
  mlir::OwningOpRef<mlir::ModuleOp> copy(
      cast<mlir::ModuleOp>(fn->getParentOp()->clone()));
  auto copyFn = copy->lookupSymbol<mlir::func::FuncOp>(fn.getSymName());
  // Each copied op names its original (the step erases and creates ops,
  // so addresses alone could be reused).
  constexpr llvm::StringLiteral kOriginalAttr = "pcc.plan_original";
  std::vector<mlir::Operation *> originals;
  mlir::Builder b(fn.getContext());
  for (auto [a, c] : llvm::zip(fn.getBody().front().getOperations(),
                               copyFn.getBody().front().getOperations())) {
    c.setAttr(kOriginalAttr, b.getI64IntegerAttr(originals.size()));
    originals.push_back(&a);
  }
  TrainOptions o;
  o.freeze.assign(frozen.begin(), frozen.end());
  // The step's own diagnostics are not the plan's: the compile reports them.
  mlir::ScopedDiagnosticHandler quiet(
      fn.getContext(), [](mlir::Diagnostic &) { return mlir::success(); });
  if (mlir::failed(buildTrainingStep(*copy, o))) {
    // ZeRO-3's backward gathers as the gradient rules of linear layers and
    // layer norms read weights: their input's gradient needs the weight
    // matrix (a layer norm's scale), not the bias.
    for (PlanNode &node : graph.nodes) {
      bool needsInputGradient =
          llvm::any_of(node.producers, [](int p) { return p >= 0; });
      bool reads = needsInputGradient && node.weightTensors &&
                   (node.linear || isa<LayerNormOp>(node.op));
      node.backwardParameterReads = reads;
      node.backwardParameterElements =
          reads ? node.params / double(node.weightTensors) : 0;
    }
    return;
  }
  llvm::DenseMap<mlir::Operation *, mlir::Operation *> original;
  for (mlir::Operation &op : copyFn.getBody().front())
    if (auto index = op.getAttrOfType<mlir::IntegerAttr>(kOriginalAttr);
        index && !op.hasAttr(kGradientOfAttr))
      original[&op] = originals[index.getInt()];
  llvm::DenseSet<mlir::Operation *> saved;
  for (auto [op, orig] : original)
    if (llvm::any_of(op->getUsers(), [](mlir::Operation *u) {
          return u->hasAttr(kGradientOfAttr);
        }))
      saved.insert(orig);
  // A saved view keeps what it views.
  for (mlir::Operation &op : llvm::reverse(fn.getBody().front()))
    if (saved.contains(&op) && isa<ReshapeOp>(op))
      if (mlir::Operation *def = op.getOperand(0).getDefiningOp())
        saved.insert(def);
  llvm::DenseMap<mlir::Operation *, PlanNode *> nodeOf;
  for (PlanNode &node : graph.nodes) {
    node.savedForBackward = saved.contains(node.op);
    nodeOf[node.op] = &node;
  }
  countBackwardParameterReads(copyFn, original, nodeOf);
}

} // namespace

Expected<PlannedModel> planModel(mlir::func::FuncOp fn,
                                 const ClusterSpec &cluster,
                                 PlanOptions options, TensorLayouts layouts,
                                 const Target &target) {
  // GPU ranks fuse more than CPU ranks do (GEMM epilogues, heads in place).
  PlannedModel planned{
      cluster, buildPlanGraph(fn, target.name() == "cuda", options.frozen), {}};
  // As training's --freeze check (TrainStep.cpp) says it.
  for (const std::string &name : options.frozen)
    if (!llvm::any_of(fn.getOps<WeightOp>(),
                      [&](WeightOp w) { return w.getName() == name; }))
      return failure("--freeze names '" + name +
                     "', which is not a trainable initializer of the model");
  if (options.train)
    markSavedResults(fn, options.frozen, planned.graph);
  if (layouts != TensorLayouts::Planned)
    options.layoutScheme = layouts;
  const PlanGraph &graph = planned.graph;
  options.schemeLayouts = [&](int64_t dp, int64_t tp, TensorLayouts scheme) {
    return perNode(
        graph, megatronShardings(fn, dp, tp,
                                 scheme == TensorLayouts::MegatronSequence));
  };
  options.sequenceLayouts = [&](int64_t dp, int64_t sp, SequenceMode mode) {
    return perNode(graph, sequenceShardings(fn, dp, sp, mode));
  };
  options.gridLayouts = [&](int64_t dp, int64_t tp, TensorMode mode,
                            int64_t depth) {
    return perNode(graph, gridShardings(fn, dp, tp, mode, depth));
  };
  options.cannotRun = [&target](const ParallelPlan &plan) {
    return target.cannotRun(plan);
  };
  auto plan = makePlan(planned.graph, planned.cluster, options);
  if (!plan)
    return plan.takeError();
  planned.plan = std::move(*plan);
  return planned;
}

std::optional<std::string> idleSplitWarning(const PlannedModel &planned,
                                            const PlanOptions &options) {
  const PlanCandidate &best = planned.plan.best;
  if (!options.tp || best.tp <= 1 || best.mode != TensorMode::OneD ||
      !best.layout)
    return std::nullopt;
  for (const NodeLayout &l : best.layout->layouts)
    for (const TensorSharding &t : l.sharding.results)
      if (!t.isReplicated())
        return std::nullopt;
  // Forced layouts split what divides; the searched ones may also keep a
  // divisible op whole where its split was priced slower.
  std::string why =
      options.layoutScheme
          ? formatv("no dimension its layouts could split divides by {0}",
                    best.tp)
                .str()
          : formatv("the searched layouts keep every op whole: no dimension "
                    "divides by {0}, or each split was priced slower; "
                    "--tp-layout megatron forces Megatron's splits",
                    best.tp)
                .str();
  return formatv("--tp {0} splits no op of the model ({1}): the {0} devices "
                 "of each tensor group all do the same work",
                 best.tp, why)
      .str();
}

namespace {

/// The planner's stage of each op, for pcc-apply-plan (kPlannedStageAttr).
void recordPlannedStages(const PlanGraph &graph, ArrayRef<int> stageBegin) {
  for (auto [i, node] : llvm::enumerate(graph.nodes)) {
    int64_t stage = llvm::upper_bound(stageBegin, int(i)) - stageBegin.begin() - 1;
    node.op->setAttr(kPlannedStageAttr,
                     mlir::IntegerAttr::get(
                         mlir::IntegerType::get(node.op->getContext(), 64),
                                      std::max<int64_t>(stage, 0)));
  }
}

} // namespace

Expected<ChosenPlan> choosePlan(mlir::ModuleOp module, PlanOptions o,
                                TensorLayouts layouts,
                                StringRef clusterName, const Target &target) {
  // What the flags force must run here before anything is searched.
  ParallelPlan forcedParts = ParallelPlan::withDegrees(
      orOne(o.pp), orOne(o.dp), orOne(o.sp), orOne(o.tp));
  forcedParts.tensorMode = o.tpMode.value_or(TensorMode::OneD);
  if (auto grid = tensorGrid(forcedParts.tensorMode, orOne(o.tp), o.tpDepth);
      grid && forcedParts.tensorMode == TensorMode::TwoPointFiveD)
    forcedParts.tensorDepth = grid->second;
  forcedParts.train = o.train;
  if (auto why = target.cannotRun(forcedParts))
    return failure("cannot compile " + forcedParts.describe() + " yet: " +
                   *why);
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!fn)
    return failure("the model has no main function");

  // A named cluster must exist whether or not anything is planned.
  if (!clusterName.empty())
    if (auto cluster = chooseCluster(clusterName); !cluster)
      return cluster.takeError();

  ChosenPlan chosen;
  bool forced = anyForced(o);
  ForcedDegrees degrees = forced ? forcedDegrees(o) : ForcedDegrees{1, 1, 1, 1};
  int64_t dp = degrees.dp, tp = degrees.tp, pp = degrees.pp, sp = degrees.sp;
  if (forced && dp * tp * pp * sp != o.devices) {
    std::string degrees;
    for (auto [flag, d] :
         {std::pair{"dp", dp}, {"tp", tp}, {"pp", pp}, {"sp", sp}})
      if (d > 1 || flag == StringRef("dp"))
        degrees += formatv("{0}--{1} {2}", degrees.empty() ? "" : " x ", flag,
                           d).str();
    int64_t total = dp * tp * pp * sp;
    return failure(formatv("{0} is {1} device{2}, but --devices is {3}",
                           degrees, total, total == 1 ? "" : "s",
                           o.devices));
  }
  int64_t devices = forced ? dp * tp * pp * sp : o.devices;
  // The planner picks the degrees unless forced, the per-op layouts on the
  // tensor axis unless they are Megatron's, and the stage cut of a pipeline.
  bool searched = layouts == TensorLayouts::Planned;
  bool plannedLayouts = false;
  if (devices > 1 &&
      (!forced || (tp > 1 && searched) || pp > 1 || (sp > 1 && !o.spMode))) {
    auto cluster = chooseCluster(clusterName);
    if (!cluster)
      return cluster.takeError();
    // Only plans the target runs (its cannotRun prunes the rest).
    o.dp = forced ? dp : 0;
    o.tp = forced ? tp : 0;
    o.pp = forced ? pp : 0;
    o.sp = forced ? sp : 0;
    o.devices = devices;
    o.runnableOnly = true;
    auto planned = planModel(fn, *cluster, o, layouts, target);
    if (!planned)
      return planned.takeError();
    const PlanCandidate &best = planned->plan.best;
    if (auto w = idleSplitWarning(*planned, o))
      chosen.warning = *w;
    chosen.plan = best.toPlan(o.train);
    dp = best.dp;
    tp = best.tp;
    chosen.note = formatv("plan {0} on cluster {1}, predicted {2:F3} ms per "
                          "batch; ",
                          chosen.plan.describe(), planned->cluster.name,
                          best.stepTime * 1e3);
    // CPU ranks planned with a GPU preset: say so, and how to do better.
    if (clusterName.empty() && target.name() == "cpu" &&
        planned->cluster.name != "host")
      chosen.note += "this machine is not calibrated, so CPU ranks were "
                     "planned as " + planned->cluster.name +
                     " GPUs (run `pcc calibrate` to plan for this "
                     "machine); ";
    if (tp > 1 && searched && best.layouts == TensorLayouts::Planned) {
      recordPlannedLayouts(planned->graph, *best.layout);
      plannedLayouts = true;
    } else if (tp > 1 && searched) {
      // The search chose a scheme's layouts: the partitioner derives them.
      layouts = best.layouts;
      searched = false;
    }
    if (best.pp > 1)
      recordPlannedStages(planned->graph, best.stageBegin);
  } else {
    chosen.plan = ParallelPlan::withDegrees(pp, dp, sp, tp);
    chosen.plan.sequenceMode = o.spMode.value_or(SequenceMode::Ulysses);
    chosen.plan.tensorMode = o.tpMode.value_or(TensorMode::OneD);
    chosen.plan.tensorDepth = std::max<int64_t>(o.tpDepth, 1);
    chosen.plan.recompute =
        o.train ? o.recompute.value_or(Recompute::None) : Recompute::None;
  }
  // A pipeline's microbatches are the planner's unless forced.
  if (o.microbatches)
    chosen.plan.microbatches = o.microbatches;
  chosen.plan.tensorLayouts = plannedLayouts ? TensorLayouts::Planned
                              : searched    ? TensorLayouts::Megatron
                                            : layouts;
  // One device needs no plan on the module unless it runs microbatches:
  // nothing is split.
  if (chosen.plan.partitions())
    writePlan(module, chosen.plan);
  return chosen;
}

mlir::LogicalResult applyPlan(mlir::ModuleOp module, bool partition) {
  mlir::PassManager pm(module.getContext());
  pm.addPass(createApplyPlan());
  if (partition) {
    pm.addPass(createPartition());
    pm.addNestedPass<mlir::func::FuncOp>(createBucketGradients());
    pm.addPass(createAccumulateMicrobatches());
    pm.addPass(createPipelineStages());
  }
  return pm.run(module);
}

mlir::LogicalResult compileModel(mlir::ModuleOp module, CompileOptions options,
                                 CompileReport &report) {
  // Opened at the first weight: models without weights never parse twice.
  std::shared_ptr<WeightReader> reader;
  std::string modelPath = options.modelPath;
  options.readWeight = [reader, modelPath](StringRef name, std::string &bytes,
                                           std::string &error) mutable {
    if (!reader)
      reader = WeightReader::open(modelPath, error);
    return reader && reader->read(name, bytes, error);
  };
  return compileToExecutable(module, options, report);
}

} // namespace pcc
