//===- pcc.cpp - the pcc compiler driver ----------------------------------===//
//
//   pcc MODEL.onnx [--devices N] [--dp N] [--tp N --tp-mode 1d] [-o DIR]
//       [--cluster C] [--input-shape NAME=AxB]...
//   pcc MODEL.onnx --emit=mlir|mlir-spmd [-o FILE]
//   pcc plan MODEL.onnx --devices N [--cluster C] [--train]
//       [--format text|json|dot] [--compare] [--explain]
//       [--dp --tp --tp-mode 1d|2d|2.5d|3d --pp --sp --microbatches]
//   pcc calibrate [-o FILE] [--ranks N]
//
// Errors go to stderr as exactly one line starting "error:", and the exit
// status is 1; nothing is written to stdout or to an output file unless the
// whole run succeeds.
//
//===----------------------------------------------------------------------===//

#include "pcc/Codegen/Compile.h"
#include "pcc/Dialect/PCC/IR/PCCDialect.h"
#include "pcc/Dialect/PCC/Transforms/Passes.h"
#include "pcc/Import/ONNXImporter.h"
#include "pcc/Partition/Passes.h"
#include "pcc/Partition/Strategy.h"
#include "pcc/Plan/Calibrate.h"
#include "pcc/Plan/PlanReport.h"
#include "pcc/Support/OutputFiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

cl::OptionCategory pccCategory("pcc options");

cl::SubCommand planCmd("plan",
                       "Choose how to spread a model over devices and show "
                       "why, what it costs, and what else was considered");
cl::SubCommand calibrateCmd(
    "calibrate", "Measure this machine (BLAS, memory, MPI) and write the "
                 "'host' cluster spec");

/// Options of compiling and of `pcc plan`.
#define COMPILE_AND_PLAN                                                       \
  cl::sub(cl::SubCommand::getTopLevel()), cl::sub(planCmd), cl::cat(pccCategory)
#define PLAN_ONLY cl::sub(planCmd), cl::cat(pccCategory)

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                               cl::Required, COMPILE_AND_PLAN);

enum class Emit { None, Mlir, MlirImport, MlirSpmd };
cl::opt<Emit> emit(
    "emit", cl::desc("Print an intermediate form instead of compiling"),
    cl::values(clEnumValN(Emit::Mlir, "mlir",
                          "the module after cleanup (folding, GELU/LayerNorm "
                          "raising, CSE), with shardings when devices > 1"),
               clEnumValN(Emit::MlirSpmd, "mlir-spmd",
                          "the per-device program: local shapes and "
                          "collectives"),
               clEnumValN(Emit::MlirImport, "mlir-import",
                          "the module exactly as imported")),
    cl::init(Emit::None), cl::cat(pccCategory));

cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Bind a symbolic input shape: NAME=AxB (a graph input's whole "
             "shape) or DIM=N (an ONNX dim_param); repeatable, or "
             "comma-separated"),
    cl::value_desc("NAME=AxB"), cl::CommaSeparated, COMPILE_AND_PLAN);

cl::opt<std::string> outputPath(
    "o",
    cl::desc("Output directory when compiling (default: out), output file "
             "for --emit (default: stdout), or the spec `pcc calibrate` "
             "writes (default: the host spec path)"),
    cl::value_desc("path"), cl::sub(cl::SubCommand::getTopLevel()),
    cl::sub(calibrateCmd), cl::cat(pccCategory));

cl::opt<int> devices("devices", cl::desc("Number of devices (ranks)"),
                     cl::init(1), COMPILE_AND_PLAN);

cl::opt<int> dpDegree("dp", cl::desc("Data-parallel degree (split the batch)"),
                      cl::init(0), COMPILE_AND_PLAN);
cl::opt<int> tpDegree("tp", cl::desc("Tensor-parallel degree (devices in a "
                                     "tensor group)"),
                      cl::init(0), COMPILE_AND_PLAN);
cl::opt<std::string> tpMode(
    "tp-mode",
    cl::desc("Tensor-parallel scheme: 1d (Megatron), 2d (SUMMA, q x q), "
             "2.5d (Tesseract, q x q x d), 3d (q x q x q); only 1d compiles"),
    cl::init(""), COMPILE_AND_PLAN);
enum class TensorLayout { Searched, Megatron };
cl::opt<TensorLayout> tpLayout(
    "tp-layout", cl::desc("Per-op layouts on a 1d tensor-parallel axis"),
    cl::values(clEnumValN(TensorLayout::Searched, "searched",
                          "the planner's exact per-op choice (default)"),
               clEnumValN(TensorLayout::Megatron, "megatron",
                          "Megatron-LM's: column- then row-parallel linear "
                          "layers, vocabulary-parallel embeddings")),
    cl::init(TensorLayout::Searched), COMPILE_AND_PLAN);
cl::opt<int> ppDegree("pp", cl::desc("Pipeline stages (plan only)"),
                      cl::init(0), COMPILE_AND_PLAN);
cl::opt<int> spDegree("sp", cl::desc("Sequence-parallel degree (plan only)"),
                      cl::init(0), COMPILE_AND_PLAN);
cl::opt<int> microbatches("microbatches",
                          cl::desc("Microbatches per step (plan only)"),
                          cl::init(0), PLAN_ONLY);
cl::opt<std::string> clusterName(
    "cluster",
    cl::desc("Cluster spec: dgx-a100, dgx-h100, h200, host (from `pcc "
             "calibrate`) or a JSON file; default host when calibrated, "
             "else dgx-a100"),
    cl::init(""), COMPILE_AND_PLAN);
cl::opt<bool> train("train",
                    cl::desc("Plan a training step: forward, backward and "
                             "Adam update"),
                    PLAN_ONLY);
cl::opt<std::string> recompute(
    "recompute", cl::desc("Activation recompute when training: auto "
                          "(searched), none or full"),
    cl::init("auto"), PLAN_ONLY);
enum class Format { Text, Json, Dot };
cl::opt<Format> outputFormat(
    "format", cl::desc("Plan output format"),
    cl::values(clEnumValN(Format::Text, "text", "readable summary"),
               clEnumValN(Format::Json, "json",
                          "schema pcc-plan-report/1 (docs/planner.md)"),
               clEnumValN(Format::Dot, "dot", "graphviz partitioned graph")),
    cl::init(Format::Text), PLAN_ONLY);
cl::opt<bool> compare("compare", cl::desc("Rank the alternatives considered"),
                      PLAN_ONLY);
cl::opt<bool> explainPlan("explain", cl::desc("Say why the winner won"),
                          PLAN_ONLY);
cl::opt<int> calibrateRanks("ranks",
                            cl::desc("MPI ranks to measure collectives with"),
                            cl::init(2), cl::sub(calibrateCmd),
                            cl::cat(pccCategory));

cl::opt<std::string> cxxFlags(
    "cxx-flags",
    cl::desc("Extra flags for the C++ compiler that builds the model (e.g. "
             "-march=native)"),
    cl::value_desc("flags"), cl::cat(pccCategory));

cl::opt<bool> quiet("quiet", cl::desc("Do not print the compile summary"),
                    cl::cat(pccCategory));

cl::opt<unsigned> codegenUnitBytes(
    "codegen-unit-bytes",
    cl::desc("Generated source per C++ translation unit before splitting "
             "(testing aid: small values split small models)"),
    cl::init(pcc::CompileOptions().unitBytes), cl::Hidden,
    cl::sub(cl::SubCommand::getTopLevel()), cl::cat(pccCategory));

cl::opt<std::string> deviceMemory(
    "device-memory",
    cl::desc("Memory of one device when compiling: every tensor and each "
             "device's total must fit (bytes, or with a suffix K, M, G, T "
             "in powers of 1024; default 64G for CPU ranks)"),
    cl::value_desc("size"), cl::init(""),
    cl::sub(cl::SubCommand::getTopLevel()), cl::cat(pccCategory));

/// Prints the first error as one line, "error: MESSAGE at node 'NAME'" or
/// "error: FILE: MESSAGE", and drops the rest (follow-on noise).
class OneLineDiagnostics {
public:
  explicit OneLineDiagnostics(mlir::MLIRContext &ctx) {
    id = ctx.getDiagEngine().registerHandler([this](mlir::Diagnostic &d) {
      if (d.getSeverity() != mlir::DiagnosticSeverity::Error)
        return mlir::success();
      if (!printed)
        print(d);
      printed = true;
      return mlir::success();
    });
  }

  /// Keeps the message on one printable line: names from a malformed model
  /// may hold newlines or arbitrary bytes.
  static std::string oneLine(StringRef text) {
    std::string out;
    for (unsigned char c : text) {
      if (c == '\n' || c == '\r' || c == '\t')
        out += ' ';
      else if (c < 0x20 || c >= 0x7f)
        out += "\\x" + llvm::utohexstr(c, /*LowerCase=*/true, /*Width=*/2);
      else
        out += c;
    }
    return out;
  }

  static void print(mlir::Diagnostic &d) {
    std::string msg = oneLine(d.str());
    mlir::Location loc = d.getLocation();
    if (auto name = dyn_cast<mlir::NameLoc>(loc)) {
      errs() << "error: " << msg << " at node '"
             << oneLine(name.getName().getValue()) << "'\n";
      return;
    }
    if (auto file = dyn_cast<mlir::FileLineColLoc>(loc)) {
      errs() << "error: " << oneLine(file.getFilename().getValue()) << ": "
             << msg << "\n";
      return;
    }
    errs() << "error: " << msg << "\n";
  }

  bool printed = false;

private:
  mlir::DiagnosticEngine::HandlerID id;
};

int fail(const Twine &message) {
  errs() << "error: " << message << "\n";
  return 1;
}

/// Parses a byte count: digits, optionally followed by K, M, G or T (powers
/// of 1024, optionally written KiB/KB, ...).
std::optional<int64_t> parseBytes(StringRef text) {
  StringRef digits = text.take_while([](char c) { return isDigit(c); });
  StringRef suffix = text.drop_front(digits.size()).lower();
  uint64_t value;
  if (digits.empty() || digits.getAsInteger(10, value))
    return std::nullopt;
  int shift = 0;
  if (!suffix.empty()) {
    size_t at = StringRef("kmgt").find(suffix[0]);
    StringRef rest = suffix.drop_front();
    if (at == StringRef::npos || !(rest.empty() || rest == "b" || rest == "ib"))
      return std::nullopt;
    shift = 10 * (at + 1);
  }
  if (value == 0 || value > (uint64_t(INT64_MAX) >> shift))
    return std::nullopt;
  return int64_t(value << shift);
}

/// The cluster to plan for: --cluster, else the calibrated host, else the
/// dgx-a100 preset.
Expected<pcc::ClusterSpec> chosenCluster() {
  if (!clusterName.empty())
    return pcc::loadCluster(clusterName);
  if (sys::fs::exists(pcc::hostClusterPath()))
    return pcc::loadCluster("host");
  return pcc::loadCluster("dgx-a100");
}

/// Degrees and mode from the flags (0 = not forced).
Expected<pcc::PlanOptions> planOptions() {
  auto err = [](const Twine &m) {
    return createStringError(inconvertibleErrorCode(), m);
  };
  pcc::PlanOptions o;
  auto given = [](const cl::opt<int> &o) { return o.getNumOccurrences() > 0; };
  for (const cl::opt<int> *f : {&dpDegree, &tpDegree, &ppDegree, &spDegree,
                                &microbatches})
    if (given(*f) && *f < 1)
      return err("--" + f->ArgStr + " must be at least 1, got " +
                 Twine(int(*f)));
  if (devices < 1)
    return err("--devices must be at least 1, got " + Twine(int(devices)));
  o.dp = dpDegree;
  o.tp = tpDegree;
  o.pp = ppDegree;
  o.sp = spDegree;
  o.microbatches = microbatches;
  if (!tpMode.empty()) {
    o.tpMode = pcc::parseTensorMode(tpMode);
    if (!o.tpMode)
      return err("--tp-mode must be 1d, 2d, 2.5d or 3d, got '" + tpMode + "'");
  }
  o.devices = devices;
  // Forced degrees without --devices: the devices they need (unset ones
  // count as 1).
  if (!devices.getNumOccurrences() && (o.dp || o.tp || o.pp || o.sp))
    o.devices = std::max<int64_t>(1, o.dp) * std::max<int64_t>(1, o.tp) *
                std::max<int64_t>(1, o.pp) * std::max<int64_t>(1, o.sp);
  int64_t forcedProduct = 1;
  bool allForced = o.dp && o.tp && o.pp && o.sp;
  for (int64_t d : {o.dp, o.tp, o.pp, o.sp})
    forcedProduct *= std::max<int64_t>(1, d);
  if (o.devices % forcedProduct ||
      (allForced && forcedProduct != o.devices))
    return err(formatv("forced degrees (dp {0}, tp {1}, pp {2}, sp {3}) do "
                       "not multiply to --devices {4}",
                       std::max<int64_t>(1, o.dp), std::max<int64_t>(1, o.tp),
                       std::max<int64_t>(1, o.pp), std::max<int64_t>(1, o.sp),
                       o.devices));
  o.train = train;
  if (recompute == "none")
    o.recompute = false;
  else if (recompute == "full")
    o.recompute = true;
  else if (recompute != "auto")
    return err("--recompute must be auto, none or full, got '" + recompute +
               "'");
  if (o.recompute && !o.train)
    return err("--recompute needs --train");
  return o;
}

struct PlannedModel {
  pcc::ClusterSpec cluster;
  pcc::PlanGraph graph;
  pcc::Plan plan;
};

/// Plans `fn` on the chosen cluster.
Expected<PlannedModel> planModel(mlir::func::FuncOp fn,
                                 const pcc::PlanOptions &options) {
  auto cluster = chosenCluster();
  if (!cluster)
    return cluster.takeError();
  PlannedModel planned{*cluster, pcc::buildPlanGraph(fn), {}};
  pcc::PlanOptions o = options;
  if (tpLayout == TensorLayout::Megatron)
    o.tensorLayouts = [&](int64_t dp, int64_t tp) {
      auto byOp = pcc::megatronShardings(fn, dp, tp);
      std::vector<pcc::OpSharding> layouts;
      for (const pcc::PlanNode &n : planned.graph.nodes)
        layouts.push_back(byOp.lookup(n.op));
      return layouts;
    };
  auto plan = pcc::makePlan(planned.graph, planned.cluster, o);
  if (!plan)
    return plan.takeError();
  planned.plan = std::move(*plan);
  return planned;
}

/// Records the planner's per-op tensor-axis layouts on the ops, for
/// ApplyStrategy's tp-layout=planned.
void annotatePlannedLayouts(const pcc::PlanGraph &graph,
                            const pcc::SearchResult &layout) {
  pcc::Mesh planGrid;
  planGrid.name = "plan";
  planGrid.shape = {2};
  planGrid.axisNames = {"tp"};
  for (auto [i, node] : llvm::enumerate(graph.nodes)) {
    // Later copies of a repeated block carry costs only; their layout is
    // their first copy's.
    const pcc::OpSharding &s =
        layout.nodes[graph.representative(i)].sharding;
    if (s.operands.size() == node.op->getNumOperands())
      pcc::setOperandShardings(node.op, pcc::kPlannedShardingAttr, planGrid,
                               s.operands);
  }
}

int runCalibrate() {
  pcc::CalibrateOptions o;
  o.ranks = calibrateRanks;
  if (o.ranks < 2)
    return fail("--ranks must be at least 2, got " + Twine(int(calibrateRanks)));
  SmallString<256> probe(sys::path::parent_path(
      sys::fs::getMainExecutable(nullptr, (void *)&fail)));
  sys::path::append(probe, "pcc-mpi-probe");
  o.probe = std::string(probe);
  auto spec = pcc::calibrateHost(o, errs());
  if (!spec)
    return fail(toString(spec.takeError()));
  std::string path =
      outputPath.empty() ? pcc::hostClusterPath() : outputPath.getValue();
  if (auto ec = sys::fs::create_directories(sys::path::parent_path(path)))
    if (!sys::path::parent_path(path).empty())
      return fail("cannot create the directory of '" + path +
                  "': " + ec.message());
  if (auto err = pcc::writeFileAtomically(path, pcc::clusterToJSON(*spec), {}))
    return fail(toString(std::move(err)));
  outs() << "pcc: wrote " << path << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  pcc::installFailureHandlers();
  cl::HideUnrelatedOptions(pccCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pcc: auto-parallelizing compiler for ONNX models\n\n"
      "  pcc MODEL.onnx --devices 8        compile for 8 ranks (out/model)\n"
      "  pcc plan MODEL.onnx --devices 8 --cluster dgx-a100 --train --explain\n"
      "                                    show the plan and why\n"
      "  pcc calibrate                     measure this machine ('host')\n"
      "  pcc MODEL.onnx --emit=mlir        print the imported pcc-dialect "
      "module\n");

  if (calibrateCmd)
    return runCalibrate();
  bool planning = bool(planCmd);

  pcc::ImportOptions options;
  for (const std::string &spec : inputShapes) {
    std::string err = pcc::parseInputShapeBinding(spec, options);
    if (!err.empty())
      return fail(err);
  }
  auto planOpts = planOptions();
  if (!planOpts)
    return fail(toString(planOpts.takeError()));
  std::optional<int64_t> deviceMemoryBytes;
  if (!deviceMemory.empty()) {
    deviceMemoryBytes = parseBytes(deviceMemory);
    if (!deviceMemoryBytes)
      return fail("--device-memory expects a size such as 64G or "
                  "68719476736, got '" + deviceMemory + "'");
  }
  bool forced = planOpts->dp || planOpts->tp;
  if (!planning) {
    if (planOpts->pp > 1 || planOpts->sp > 1)
      return fail("--pp and --sp are planned by `pcc plan` but cannot be "
                  "compiled yet (only --dp and --tp with --tp-mode 1d)");
    if (planOpts->tpMode && *planOpts->tpMode != pcc::TensorMode::OneD)
      return fail("--tp-mode " + tpMode +
                  " is planned by `pcc plan` but cannot be compiled yet (only "
                  "1d, Megatron)");
    int64_t dp = std::max<int64_t>(1, planOpts->dp);
    int64_t tp = std::max<int64_t>(1, planOpts->tp);
    if (forced && devices.getNumOccurrences() && dp * tp != devices)
      return fail("--dp " + Twine(dp) + " x --tp " + Twine(tp) + " is " +
                  Twine(dp * tp) + " devices, but --devices is " +
                  Twine(int(devices)));
    planOpts->runnableOnly = true;
  }
  int ndev = planOpts->devices;

  mlir::MLIRContext context;
  context.disableMultithreading();
  context.printOpOnDiagnostic(false);
  OneLineDiagnostics diagnostics(context);

  auto module = pcc::importONNXFile(inputFile, context, options);
  if (!module) {
    if (!diagnostics.printed)
      return fail("import of '" + inputFile + "' failed");
    return 1;
  }
  if (emit != Emit::MlirImport || planning) {
    mlir::PassManager pm(&context);
    pcc::buildImportCleanupPipeline(pm);
    if (mlir::failed(pm.run(*module)))
      return diagnostics.printed ? 1 : fail("cleanup pipeline failed");
  }
  auto mainFn = module->lookupSymbol<mlir::func::FuncOp>("main");
  if (!mainFn)
    return fail("the model has no main function");

  if (planning) {
    auto planned = planModel(mainFn, *planOpts);
    if (!planned)
      return fail(toString(planned.takeError()));
    const auto &[cluster, graph, plan] = *planned;
    pcc::ReportOptions report;
    report.modelPath = inputFile;
    report.compare = compare;
    report.explain = explainPlan;
    if (outputFormat == Format::Json)
      pcc::printPlanJSON(outs(), graph, cluster, *planOpts, plan, report);
    else if (outputFormat == Format::Dot)
      pcc::printPlanDot(outs(), graph, plan);
    else
      pcc::printPlanText(outs(), graph, cluster, *planOpts, plan, report);
    return 0;
  }

  // Devices > 1: the forced strategy, or the planner's best plan among
  // those the code generator runs; then partition into the per-device
  // program.
  int dp = std::max<int64_t>(1, planOpts->dp);
  int tp = std::max<int64_t>(1, planOpts->tp);
  std::string planNote;
  if (forced) {
    if (!planOpts->dp)
      dp = ndev / tp;
    if (!planOpts->tp)
      tp = ndev / dp;
    ndev = dp * tp;
  }
  // The planner picks the degrees unless forced, and the per-op layouts on
  // the tensor axis unless they are Megatron's.
  bool searchedLayouts = tpLayout == TensorLayout::Searched;
  if (ndev > 1 && emit != Emit::MlirImport &&
      (!forced || (tp > 1 && searchedLayouts))) {
    planOpts->dp = forced ? dp : 0;
    planOpts->tp = forced ? tp : 0;
    planOpts->pp = planOpts->sp = 1;
    planOpts->devices = ndev;
    planOpts->tpMode = pcc::TensorMode::OneD;
    auto planned = planModel(mainFn, *planOpts);
    if (!planned)
      return fail(toString(planned.takeError()));
    const pcc::PlanCandidate &best = planned->plan.best;
    dp = best.dp;
    tp = best.tp;
    planNote = formatv("plan dp {0} x tp {1} on cluster {2}, predicted {3:F3} "
                       "ms per batch; ",
                       dp, tp, planned->cluster.name, best.stepTime * 1e3);
    if (tp > 1 && searchedLayouts)
      annotatePlannedLayouts(planned->graph, *best.layout);
  }
  if (ndev > 1 && emit != Emit::MlirImport) {
    mlir::PassManager pm(&context);
    pm.addPass(pcc::createApplyStrategy(pcc::ApplyStrategyOptions{
        dp, tp, std::string("1d"),
        std::string(searchedLayouts ? "planned" : "megatron")}));
    if (emit != Emit::Mlir)
      pm.addPass(pcc::createPartition());
    if (mlir::failed(pm.run(*module)))
      return diagnostics.printed ? 1 : fail("partitioning failed");
  }

  if (emit == Emit::None) {
    pcc::CompileOptions copts;
    copts.outputDir = outputPath.empty() ? std::string("out") : outputPath.getValue();
    copts.modelPath = inputFile;
    copts.devices = ndev;
    copts.dp = dp;
    copts.tp = tp;
    copts.cxxFlags = cxxFlags;
    if (deviceMemoryBytes)
      copts.deviceMemoryBytes = *deviceMemoryBytes;
    copts.unitBytes = std::max(1u, unsigned(codegenUnitBytes));
    pcc::CompileReport report;
    if (mlir::failed(pcc::compileToExecutable(*module, copts, report)))
      return diagnostics.printed ? 1 : fail("compilation failed");
    if (!quiet)
      outs() << "pcc: wrote " << copts.outputDir << "/model (" << planNote
             << report.kernelCalls << " kernel calls, " << report.fusedLoops
             << " fused loops over " << report.fusedOps << " ops; scratch "
             << report.arenaBytes << " bytes (" << report.unsharedBytes
             << " without reuse), weights " << report.weightsBytes
             << " bytes; C++ compile " << format("%.1f", report.cxxSeconds)
             << " s)\n";
    return 0;
  }

  std::string text;
  raw_string_ostream os(text);
  module->print(os);
  os << "\n";
  if (auto err = pcc::writeFileAtomically(
          outputPath.empty() ? std::string("-") : outputPath.getValue(), text,
          {inputFile}))
    return fail(toString(std::move(err)));
  return 0;
}
