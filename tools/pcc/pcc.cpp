//===- pcc.cpp - the pcc compiler driver ----------------------------------===//
//
//   pcc MODEL.onnx [--devices N] [--dp N] [--tp N --tp-mode 1d] [-o DIR]
//       [--cluster C] [--input-shape NAME=AxB]...
//   pcc MODEL.onnx --emit=mlir|mlir-spmd [-o FILE]
//   pcc plan MODEL.onnx --devices N [--cluster C] [--train]
//       [--format text|json|dot] [--compare] [--explain]
//       [--dp --tp --tp-mode 1d|2d|2.5d|3d --pp --sp --sp-mode --microbatches]
//   (both: [--precision fp32|tf32|bf16|fp16])
//   pcc calibrate [-o FILE] [--ranks N]
//
// Errors go to stderr as exactly one line starting "error:", and the exit
// status is 1; nothing is written to stdout or to an output file unless the
// whole run succeeds.
//
//===----------------------------------------------------------------------===//

#include "pcc/Autodiff/TrainStep.h"
#include "pcc/Calibrate/Calibrate.h"
#include "pcc/Codegen/Compile.h"
#include "pcc/Codegen/Cpu/CpuTarget.h"
#include "pcc/Codegen/Cuda/CudaTarget.h"
#include "pcc/Dialect/PCC/IR/PCCDialect.h"
#include "pcc/Driver/Driver.h"
#include "pcc/Import/ONNXImporter.h"
#include "pcc/Import/TrainedModel.h"
#include "pcc/Plan/PlanGraph.h"
#include "pcc/Plan/PlanReport.h"
#include "pcc/Support/OutputFiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace llvm;

namespace {

cl::OptionCategory pccCategory("pcc options");

cl::SubCommand planCmd("plan",
                       "Choose how to spread a model over devices and show "
                       "why, what it costs, and what else was considered");
cl::SubCommand exportCmd(
    "export", "Write a model with the initializers a training run saved "
              "(the executable's --save DIR)");
cl::SubCommand calibrateCmd(
    "calibrate", "Measure this machine (BLAS, memory, MPI) and write the "
                 "'host' cluster spec");

/// Options of compiling and of `pcc plan`.
#define COMPILE_AND_PLAN                                                       \
  cl::sub(cl::SubCommand::getTopLevel()), cl::sub(planCmd), cl::cat(pccCategory)
#define PLAN_ONLY cl::sub(planCmd), cl::cat(pccCategory)

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                               COMPILE_AND_PLAN, cl::sub(exportCmd));
cl::opt<std::string> savedWeights(
    "weights", cl::desc("The directory a training run saved (--save)"),
    cl::sub(exportCmd), cl::cat(pccCategory));

cl::opt<bool> listOps("list-ops",
                      cl::desc("Print the ONNX ops pcc imports and exit"),
                      cl::sub(cl::SubCommand::getTopLevel()),
                      cl::cat(pccCategory));

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
    cl::sub(calibrateCmd), cl::sub(exportCmd), cl::cat(pccCategory));

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
             "2.5d (Tesseract, q x q x d), 3d (q x q x q)"),
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
cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    cl::desc("Megatron's sequence parallelism on the 1d tensor axis: norms "
             "and residual adds run on the sequence split, all-reduces become "
             "reduce-scatters and all-gathers (implies --tp-layout megatron)"),
    COMPILE_AND_PLAN);
cl::opt<int> ppDegree("pp", cl::desc("Pipeline stages"),
                      cl::init(0), COMPILE_AND_PLAN);
cl::opt<int> spDegree("sp", cl::desc("Sequence-parallel degree: the "
                                     "sequence split over sp devices"),
                      cl::init(0), COMPILE_AND_PLAN);
cl::opt<int> tpDepth("tp-depth",
                     cl::desc("2.5D depth d: --tp N is a q x q x d grid "
                              "(default: the planner's choice)"),
                     cl::init(0), COMPILE_AND_PLAN);
cl::opt<std::string> spMode(
    "sp-mode",
    cl::desc("How sequence parallelism runs attention: ulysses (all-to-all "
             "to a head split) or ring (key/value blocks passed around); "
             "default: the planner's choice"),
    cl::init(""), COMPILE_AND_PLAN);
cl::opt<int> microbatches(
    "microbatches",
    cl::desc("Microbatches a pipeline streams per batch (default: the "
             "planner's choice, else as many as stages)"),
    cl::init(0), COMPILE_AND_PLAN);
cl::opt<int> ppVirtual(
    "pp-virtual",
    cl::desc("Training pipelines: chunks of layers per pipeline device "
             "(Megatron's interleaved 1F1B, --num-layers-per-virtual-"
             "pipeline-stage's counterpart; 1: plain 1F1B; default: the "
             "planner's choice). Microbatches must be a multiple of --pp"),
    cl::init(0), COMPILE_AND_PLAN);
cl::opt<std::string> ppSchedule(
    "pp-schedule",
    cl::desc("Training pipelines' schedule: 1f1b (plain or interleaved) or "
             "zb-h1 (zero-bubble ZB-H1: each backward runs as the input's "
             "gradient and, deferred, the weights'; one chunk per device; "
             "default: the planner's choice)"),
    cl::init(""), COMPILE_AND_PLAN);
cl::opt<int> microbatchSize(
    "micro-batch",
    cl::desc("Samples in one microbatch of one data-parallel replica "
             "(Megatron's --micro-batch-size; default: the planner's "
             "choice). The batch is the model's: --global-batch or "
             "--input-shape sets it"),
    cl::init(0), COMPILE_AND_PLAN);
cl::opt<int64_t> globalBatch(
    "global-batch",
    cl::desc("Samples per step over all replicas (Megatron's "
             "--global-batch-size): binds the model's batch dimension (the "
             "first input's leading one, exported dynamic); micro-batches x "
             "microbatches x dp make it up"),
    cl::init(0), COMPILE_AND_PLAN);
cl::opt<int64_t> vocabMultiple(
    "vocab-multiple",
    cl::desc("A vocabulary the tensor-parallel degree does not divide is "
             "padded with zero rows to a multiple of this times the degree "
             "(Megatron's --make-vocab-size-divisible-by; 0: never pad)"),
    cl::init(128), COMPILE_AND_PLAN);
cl::opt<std::string> clusterName(
    "cluster",
    cl::desc("Cluster spec: dgx-a100, dgx-h100, h200, host (from `pcc "
             "calibrate`) or a JSON file; default host when calibrated, "
             "else dgx-a100"),
    cl::init(""), COMPILE_AND_PLAN);
cl::opt<bool> train("train",
                    cl::desc("Compile (or plan) a training step: forward, "
                             "loss, backward and optimizer update"),
                    COMPILE_AND_PLAN);
cl::opt<int> zeroStage(
    "zero",
    cl::desc("Training: ZeRO stage over dp (DeepSpeed's): 1 and 2 split "
             "optimizer states, 3 parameters too (0: none; compiling "
             "defaults to none, planning searches 0, 1 and 3)"),
    cl::init(0), COMPILE_AND_PLAN);
/// Options of compiling a training step (--train).
#define COMPILE_ONLY cl::sub(cl::SubCommand::getTopLevel()), cl::cat(pccCategory)
cl::opt<std::string> optimizerName(
    "optimizer", cl::desc("Training: sgd or adamw (PyTorch's definitions)"),
    cl::init("sgd"), COMPILE_ONLY);
cl::opt<std::string> lossName(
    "loss",
    cl::desc("Training: the model's own scalar output 0 (default), or mse / "
             "cross-entropy of output 0 against an extra input"),
    cl::init(""), COMPILE_AND_PLAN);
cl::opt<double> learningRate("lr", cl::desc("Training: learning rate "
                                            "(default 0.001)"),
                             cl::init(1e-3), COMPILE_ONLY);
cl::opt<double> momentum("momentum", cl::desc("SGD momentum (default 0)"),
                         cl::init(0), COMPILE_ONLY);
cl::opt<double> weightDecay(
    "weight-decay",
    cl::desc("Training: weight decay (default: SGD 0, AdamW 0.01)"),
    cl::init(0), COMPILE_ONLY);
cl::opt<std::string> betas("betas", cl::desc("AdamW betas B1,B2 (default "
                                             "0.9,0.999)"),
                           cl::init(""), COMPILE_ONLY);
cl::opt<double> adamEps("eps", cl::desc("AdamW epsilon (default 1e-8)"),
                        cl::init(1e-8), COMPILE_ONLY);
cl::opt<std::string> lossScale(
    "loss-scale",
    cl::desc("Training: dynamic loss scaling (PyTorch's GradScaler) from an "
             "initial scale, a power of two; or none. Default when fp16 "
             "weights train: 65536 (GradScaler's), 32768 for an fp16 loss; "
             "else none"),
    cl::init(""), COMPILE_ONLY);
cl::opt<uint64_t> dropoutSeed(
    "seed",
    cl::desc("Seed of Dropout's generator (training-mode Dropout with a "
             "nonzero ratio; default 0)"),
    cl::init(0), COMPILE_ONLY);

cl::list<std::string>
    freezeNames("freeze",
                cl::desc("Training: initializers not to train (buffers)"),
                cl::CommaSeparated, COMPILE_AND_PLAN);
cl::opt<std::string>
    recompute("recompute",
              cl::desc("Activation recompute when training: auto "
                       "(the planner's choice), none, full (each "
                       "repeated layer's activations recomputed in the "
                       "backward pass from its input) or selective (its "
                       "matrix products' results kept, the ops between "
                       "them recomputed)"),
              cl::init("auto"), COMPILE_AND_PLAN);
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
cl::opt<std::string> calibrateTarget(
    "target",
    cl::desc("cpu: this machine's cores, BLAS and MPI (the 'host' spec); "
             "cuda: GPU 0, through pcc-gpu-probe (a one-GPU spec)"),
    cl::value_desc("t"), cl::init("cpu"), cl::sub(calibrateCmd),
    cl::cat(pccCategory));
cl::opt<std::string> probeOutput(
    "probe-output",
    cl::desc("With --target cuda: read the line pcc-gpu-probe printed on a "
             "GPU machine from this file instead of running the probe here"),
    cl::value_desc("file"), cl::sub(calibrateCmd), cl::cat(pccCategory));

cl::opt<std::string> cxxFlags(
    "cxx-flags",
    cl::desc("Extra flags for the C++ compiler that builds the model (e.g. "
             "-march=native)"),
    cl::value_desc("flags"), cl::cat(pccCategory));

cl::opt<std::string> targetName(
    "target",
    cl::desc("What the executable runs on: cpu (MPI ranks on CPUs) or cuda "
             "(a GPU per rank; NCCL, or MPI with --comm mpi)"),
    cl::value_desc("t"), cl::init("cpu"), COMPILE_AND_PLAN);

cl::opt<std::string> cudaArch(
    "cuda-arch",
    cl::desc("GPU architectures to build for with --target cuda, as SM "
             "numbers (default 80,90: A100 and H100)"),
    cl::value_desc("list"), cl::init("80,90"),
    cl::sub(cl::SubCommand::getTopLevel()), cl::cat(pccCategory));

cl::opt<std::string> precision(
    "precision",
    cl::desc("Store tensors as fp32, tf32 (fp32 storage, tf32 GEMMs), bf16 or "
             "fp16 (default: the model's own); 16-bit storage computes in "
             "fp32, inputs and outputs keep the model's types"),
    cl::value_desc("p"), cl::init(""), COMPILE_AND_PLAN);

enum class Progress { Auto, Always, Never };
cl::opt<Progress> progressMode(
    "progress", cl::desc("Show the plan search's progress on stderr"),
    cl::values(clEnumValN(Progress::Auto, "auto",
                          "on a terminal, when planning takes over a second"),
               clEnumValN(Progress::Always, "always",
                          "a line every half second, wherever stderr goes"),
               clEnumValN(Progress::Never, "never", "no progress line")),
    cl::init(Progress::Auto), COMPILE_AND_PLAN);

cl::opt<bool> quiet("quiet", cl::desc("Do not print the compile summary"),
                    cl::cat(pccCategory));

cl::opt<unsigned> codegenUnitBytes(
    "codegen-unit-bytes",
    cl::desc("Generated source per C++ translation unit before splitting "
             "(testing aid: small values split small models)"),
    cl::init(pcc::CompileOptions().unitBytes), cl::Hidden,
    cl::sub(cl::SubCommand::getTopLevel()), cl::cat(pccCategory));

cl::opt<bool> fuseSiblings(
    "fuse-siblings",
    cl::desc("Join products of one input by separate weights (separate Q, K, "
             "V) into one before planning (benchmarking aid: "
             "--fuse-siblings=false keeps them apart)"),
    cl::init(true), cl::Hidden, cl::sub(cl::SubCommand::getTopLevel()),
    cl::sub(planCmd), cl::cat(pccCategory));

cl::opt<std::string> deviceMemory(
    "device-memory",
    cl::desc("Memory of one device when compiling: every tensor and each "
             "device's total must fit (bytes, or with a suffix K, M, G, T "
             "in powers of 1024; default 64G for CPU ranks, 80G for GPU ranks)"),
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

/// Degrees and mode from the flags (0 = not forced).
Expected<pcc::PlanOptions> planOptions() {
  auto err = [](const Twine &m) {
    return createStringError(inconvertibleErrorCode(), m);
  };
  pcc::PlanOptions o;
  auto given = [](const cl::opt<int> &o) { return o.getNumOccurrences() > 0; };
  for (const cl::opt<int> *f : {&dpDegree, &tpDegree, &ppDegree, &spDegree,
                                &microbatches, &microbatchSize, &ppVirtual})
    if (given(*f) && *f < 1)
      return err("--" + f->ArgStr + " must be at least 1, got " +
                 Twine(int(*f)));
  o.dp = dpDegree;
  o.tp = tpDegree;
  o.pp = ppDegree;
  o.sp = spDegree;
  o.microbatches = microbatches;
  o.microbatchSize = microbatchSize;
  if (microbatches && microbatchSize)
    return err("--microbatches and --micro-batch both set the microbatch; "
               "give one");
  if (tpDepth.getNumOccurrences()) {
    if (tpDepth < 1)
      return err("--tp-depth must be at least 1, got " + Twine(int(tpDepth)));
    if (tpMode != "2.5d")
      return err("--tp-depth is the depth of a 2.5d grid; use it with "
                 "--tp-mode 2.5d");
    o.tpDepth = tpDepth;
  }
  if (!spMode.empty()) {
    o.spMode = pcc::parseSequenceMode(spMode);
    if (!o.spMode)
      return err("--sp-mode must be ulysses or ring, got '" + spMode + "'");
  }
  if (sequenceParallel && spDegree > 1)
    return err("--sp and --sequence-parallel both split the sequence; "
               "choose one");
  if (sequenceParallel && tpLayout.getNumOccurrences() &&
      tpLayout != TensorLayout::Megatron)
    return err("--sequence-parallel is Megatron's: use it with --tp-layout "
               "megatron or without --tp-layout");
  if (!tpMode.empty()) {
    o.tpMode = pcc::parseTensorMode(tpMode);
    if (!o.tpMode)
      return err("--tp-mode must be 1d, 2d, 2.5d or 3d, got '" + tpMode + "'");
    if ((tpLayout == TensorLayout::Megatron || sequenceParallel) &&
        *o.tpMode != pcc::TensorMode::OneD)
      return err(Twine(sequenceParallel ? "--sequence-parallel"
                                        : "--tp-layout megatron") +
                 " is a 1d layout; it cannot be used with --tp-mode " + tpMode);
  } else if (sequenceParallel || (tpLayout.getNumOccurrences() &&
                                  tpLayout == TensorLayout::Megatron)) {
    // Megatron's layouts are 1D: plan them as asked, never a 2D/3D grid.
    o.tpMode = pcc::TensorMode::OneD;
  }
  o.devices = devices;
  if (progressMode != Progress::Never)
    o.progress = pcc::planProgressPrinter(progressMode == Progress::Always);
  auto completed = pcc::completeDegrees(o, devices.getNumOccurrences() > 0);
  if (!completed)
    return completed.takeError();
  o = *completed;
  if (o.tp > 1 && o.tpMode && *o.tpMode != pcc::TensorMode::OneD &&
      !pcc::tensorGrid(*o.tpMode, o.tp, o.tpDepth))
    return err("--tp " + Twine(o.tp) + " is not a " +
               pcc::tensorModeName(*o.tpMode) + " grid (2d: q x q, 2.5d: " +
               "q x q x depth, 3d: q x q x q, q >= 2" +
               (o.tpDepth ? ", depth " + std::to_string(o.tpDepth) : "") +
               ")");
  o.train = train;
  if (recompute != "auto") {
    o.recompute = pcc::parseRecompute(recompute);
    if (!o.recompute)
      return err("--recompute must be auto, none, full or selective, got '" +
                 recompute + "'");
  }
  if (o.recompute && !o.train)
    return err("--recompute needs --train");
  if (freezeNames.getNumOccurrences() && !o.train)
    return err("--freeze needs --train");
  o.frozen.assign(freezeNames.begin(), freezeNames.end());
  if (ppVirtual.getNumOccurrences()) {
    if (!o.train)
      return err("--pp-virtual interleaves a training step's pipeline; it "
                 "needs --train");
    if (ppVirtual > 1 && o.pp == 1)
      return err("--pp-virtual " + Twine(int(ppVirtual)) +
                 " needs a pipeline (--pp 2 or more)");
    if (ppVirtual > 1 && o.pp > 1 && o.microbatches && o.microbatches % o.pp)
      return err("--pp-virtual needs --microbatches a multiple of --pp "
                 "(the interleaved schedule runs microbatches in groups of "
                 "pp), got " +
                 Twine(o.microbatches) + " for --pp " + Twine(o.pp));
    o.ppVirtual = ppVirtual;
  }
  if (ppSchedule.getNumOccurrences()) {
    if (ppSchedule != "1f1b" && ppSchedule != "zb-h1")
      return err("--pp-schedule must be 1f1b or zb-h1, got '" + ppSchedule +
                 "'");
    if (!o.train)
      return err("--pp-schedule schedules a training step's pipeline; it "
                 "needs --train");
    if (ppSchedule == "zb-h1" && ppVirtual > 1)
      return err("--pp-schedule zb-h1 runs one chunk per pipeline device; "
                 "it does not take --pp-virtual " +
                 Twine(int(ppVirtual)));
    o.zeroBubble = ppSchedule == "zb-h1";
  }
  if (zeroStage < 0 || zeroStage > 3)
    return err("--zero must be a ZeRO stage 0, 1, 2 or 3, got " +
               Twine(int(zeroStage)));
  if (zeroStage.getNumOccurrences() && !o.train)
    return err("--zero needs --train");
  // Compiling applies ZeRO only when asked; a plan searches the stages.
  if (zeroStage.getNumOccurrences() || !planCmd)
    o.zero = zeroStage;
  return o;
}

/// The training options the flags give, or a one-line error.
Expected<pcc::TrainOptions> trainOptions() {
  auto err = [](const Twine &m) {
    return createStringError(inconvertibleErrorCode(), m);
  };
  pcc::TrainOptions o;
  if (optimizerName == "adamw")
    o.optimizer = pcc::Optimizer::AdamW;
  else if (optimizerName != "sgd")
    return err("--optimizer must be sgd or adamw, got '" + optimizerName +
               "'");
  if (lossName == "mse")
    o.loss = pcc::LossKind::Mse;
  else if (lossName == "cross-entropy")
    o.loss = pcc::LossKind::CrossEntropy;
  else if (!lossName.empty())
    return err("--loss must be mse or cross-entropy, got '" + lossName + "'");
  auto finite = [](double v) { return v == v && v - v == 0; };
  if (!finite(learningRate) || learningRate < 0)
    return err("--lr must be a non-negative number");
  if (!finite(momentum) || momentum < 0)
    return err("--momentum must be a non-negative number");
  if (!finite(weightDecay) || weightDecay < 0)
    return err("--weight-decay must be a non-negative number");
  if (!finite(adamEps) || adamEps < 0)
    return err("--eps must be a non-negative number");
  o.lr = learningRate;
  o.momentum = momentum;
  if (weightDecay.getNumOccurrences())
    o.weightDecay = weightDecay;
  o.eps = adamEps;
  if (!betas.empty()) {
    SmallVector<StringRef> parts;
    StringRef(betas).split(parts, ',');
    double b1, b2;
    if (parts.size() != 2 || parts[0].trim().getAsDouble(b1) ||
        parts[1].trim().getAsDouble(b2) || !(b1 >= 0 && b1 < 1) ||
        !(b2 >= 0 && b2 < 1))
      return err("--betas expects B1,B2 in [0, 1), got '" + betas + "'");
    o.beta1 = b1;
    o.beta2 = b2;
  }
  if (o.optimizer == pcc::Optimizer::Sgd &&
      (betas.getNumOccurrences() || adamEps.getNumOccurrences()))
    return err("--betas and --eps are AdamW's; add --optimizer adamw");
  if (o.optimizer == pcc::Optimizer::AdamW && momentum.getNumOccurrences())
    return err("--momentum is SGD's; AdamW takes --betas");
  for (const std::string &n : freezeNames)
    o.freeze.push_back(n);
  if (lossScale == "none") {
    o.lossScaling = pcc::LossScaling::None;
  } else if (!lossScale.empty()) {
    double scale;
    int exponent = 0;
    if (StringRef(lossScale).getAsDouble(scale) || !(scale >= 1) ||
        std::frexp(scale, &exponent) != 0.5 || exponent > 128)
      return err("--loss-scale must be a power of two from 1 to 2^127, or "
                 "none, got '" +
                 lossScale + "'");
    o.lossScaling = pcc::LossScaling::Dynamic;
    o.lossScaleLog2 = exponent - 1;
  }
  return o;
}

/// Training flags given without --train.
std::optional<std::string> trainFlagWithoutTrain() {
  cl::Option *flags[] = {
      &optimizerName, &lossName, &learningRate, &momentum,
      &weightDecay,   &betas,    &adamEps,      std::addressof(freezeNames),
      &zeroStage,     &lossScale};
  for (cl::Option *o : flags)
    if (o->getNumOccurrences())
      return "--" + o->ArgStr.str() + " needs --train";
  return std::nullopt;
}

pcc::TensorLayouts tensorLayouts() {
  if (sequenceParallel)
    return pcc::TensorLayouts::MegatronSequence;
  return tpLayout == TensorLayout::Megatron ? pcc::TensorLayouts::Megatron
                                            : pcc::TensorLayouts::Planned;
}

const pcc::Target &selectedTarget() {
  return targetName == "cuda" ? pcc::cudaTarget() : pcc::cpuTarget();
}

/// `pcc plan`: plans `fn` and prints the report in the chosen format.
int printPlan(mlir::func::FuncOp fn, const pcc::PlanOptions &options) {
  auto cluster = pcc::chooseCluster(clusterName);
  if (!cluster)
    return fail(toString(cluster.takeError()));
  auto planned = pcc::planModel(fn, *cluster, options, tensorLayouts(),
                                 selectedTarget());
  if (!planned)
    return fail(toString(planned.takeError()));
  if (auto w = pcc::idleSplitWarning(*planned, options))
    errs() << "warning: " << *w << "\n";
  const auto &[spec, graph, plan] = *planned;
  pcc::ReportOptions report;
  report.modelPath = inputFile;
  report.target = selectedTarget().name().str();
  report.compare = compare;
  report.explain = explainPlan;
  if (outputFormat == Format::Json)
    pcc::printPlanJSON(outs(), graph, spec, options, plan, report);
  else if (outputFormat == Format::Dot)
    pcc::printPlanDot(outs(), graph, plan);
  else
    pcc::printPlanText(outs(), graph, spec, options, plan, report);
  return 0;
}

/// --emit: the module as text, to -o or stdout.
int writeText(mlir::ModuleOp module) {
  std::string text;
  raw_string_ostream os(text);
  module.print(os);
  os << "\n";
  if (auto err = pcc::writeFileAtomically(
          outputPath.empty() ? std::string("-") : outputPath.getValue(), text,
          {inputFile}))
    return fail(toString(std::move(err)));
  return 0;
}

/// The GPU spec, measured here or read from a probe's saved output.
Expected<pcc::ClusterSpec> calibrateGpu(StringRef probe) {
  if (probeOutput.empty())
    return pcc::calibrateGpu(probe.str(), errs());
  auto text = MemoryBuffer::getFile(probeOutput);
  if (!text)
    return createStringError(text.getError(), "cannot read '" + probeOutput +
                                                  "': " +
                                                  text.getError().message());
  return pcc::gpuSpecFromProbe((*text)->getBuffer());
}

int runCalibrate() {
  if (calibrateTarget != "cpu" && calibrateTarget != "cuda")
    return fail("--target must be cpu or cuda, got '" + calibrateTarget + "'");
  bool gpu = calibrateTarget == "cuda";
  if (!gpu && !probeOutput.empty())
    return fail("--probe-output goes with --target cuda");
  pcc::CalibrateOptions o;
  o.ranks = calibrateRanks;
  if (o.ranks < 2)
    return fail("--ranks must be at least 2, got " + Twine(int(calibrateRanks)));
  SmallString<256> probe(sys::path::parent_path(
      sys::fs::getMainExecutable(nullptr, (void *)&fail)));
  sys::path::append(probe, gpu ? "pcc-gpu-probe" : "pcc-mpi-probe");
  o.probe = std::string(probe);
  auto spec = gpu ? calibrateGpu(probe) : pcc::calibrateHost(o, errs());
  if (!spec)
    return fail(toString(spec.takeError()));
  std::string path = !outputPath.empty() ? outputPath.getValue()
                     : gpu               ? pcc::gpuClusterPath()
                                         : pcc::hostClusterPath();
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
      "  pcc export MODEL.onnx --weights DIR -o TRAINED.onnx\n"
      "                                    the model with a training run's "
      "weights\n"
      "  pcc --list-ops                    the ONNX ops pcc imports\n"
      "  pcc MODEL.onnx --emit=mlir        print the imported pcc-dialect "
      "module\n");

  if (calibrateCmd) {
    pcc::useExecutablesBlas(argv);
    return runCalibrate();
  }
  if (exportCmd) {
    if (inputFile.empty() || savedWeights.empty() || outputPath.empty())
      return fail("usage: pcc export MODEL.onnx --weights DIR -o "
                  "TRAINED.onnx");
    auto n = pcc::writeTrainedModel(inputFile, savedWeights, outputPath);
    if (!n)
      return fail(toString(n.takeError()));
    outs() << "pcc: wrote " << outputPath << " (" << *n
           << " trained initializers from " << savedWeights << ")\n";
    return 0;
  }
  if (listOps) {
    for (const std::string &op : pcc::supportedOnnxOps())
      outs() << op << "\n";
    return 0;
  }
  if (inputFile.empty())
    return fail("no model given: pcc MODEL.onnx [options] (see --help)");
  bool planning = bool(planCmd);

  pcc::ImportOptions options;
  for (const std::string &spec : inputShapes) {
    std::string err = pcc::parseInputShapeBinding(spec, options);
    if (!err.empty())
      return fail(err);
  }
  if (globalBatch.getNumOccurrences() && globalBatch < 1)
    return fail("--global-batch must be at least 1, got " +
                std::to_string(globalBatch));
  options.globalBatch = globalBatch;
  options.training = train;
  options.seed = dropoutSeed;
  if (targetName != "cpu" && targetName != "cuda")
    return fail("--target must be cpu or cuda, got '" + targetName + "'");
  for (StringRef arch : split(StringRef(cudaArch), ','))
    if (arch.trim().empty() || !llvm::all_of(arch.trim(), llvm::isDigit))
      return fail("--cuda-arch expects SM numbers such as 80,90, got '" +
                  cudaArch + "'");
  if (!precision.empty() && precision != "fp32" && precision != "tf32" &&
      precision != "bf16" && precision != "fp16")
    return fail("--precision must be fp32, tf32, bf16 or fp16, got '" +
                precision + "'");
  auto planOpts = planOptions();
  if (!planOpts)
    return fail(toString(planOpts.takeError()));
  if (!train)
    if (auto why = trainFlagWithoutTrain())
      return fail(*why);
  auto trainOpts = trainOptions();
  if (!trainOpts)
    return fail(toString(trainOpts.takeError()));
  if (vocabMultiple < 0 || vocabMultiple > 65536)
    return fail("--vocab-multiple must be from 0 to 65536, got " +
                std::to_string(vocabMultiple));
  std::optional<int64_t> deviceMemoryBytes;
  if (!deviceMemory.empty()) {
    deviceMemoryBytes = parseBytes(deviceMemory);
    if (!deviceMemoryBytes)
      return fail("--device-memory expects a size such as 64G or "
                  "68719476736, got '" + deviceMemory + "'");
  }

  mlir::MLIRContext context;
  context.disableMultithreading();
  context.printOpOnDiagnostic(false);
  OneLineDiagnostics diagnostics(context);

  auto module = pcc::loadModel(inputFile, context, options,
                               /*cleanup=*/emit != Emit::MlirImport ||
                                   planning);
  if (!module)
    return diagnostics.printed ? 1
                               : fail("import of '" + inputFile + "' failed");
  auto mainFn = module->lookupSymbol<mlir::func::FuncOp>("main");
  if (!mainFn)
    return fail("the model has no main function");
  if (!precision.empty() &&
      mlir::failed(pcc::convertPrecision(*module, precision)))
    return diagnostics.printed ? 1 : fail("precision conversion failed");
  // The loss --loss adds is part of what is planned.
  if (train && trainOpts->loss != pcc::LossKind::ModelOutput) {
    if (mlir::failed(pcc::addTrainingLoss(*module, *trainOpts)))
      return diagnostics.printed ? 1 : fail("adding the loss failed");
    trainOpts->loss = pcc::LossKind::ModelOutput;
  }

  // Padded before planning, so the plan prices the split vocabulary.
  if (vocabMultiple &&
      mlir::failed(pcc::padVocabulary(*module, pcc::vocabularyDegree(*planOpts),
                                      vocabMultiple)))
    return diagnostics.printed ? 1 : fail("padding the vocabulary failed");
  // Separate Q, K, V products planned and run as one (a training step
  // saves the joined weights as their initializers; frozen ones stay
  // apart).
  if (fuseSiblings && (planning || emit != Emit::MlirImport) &&
      mlir::failed(pcc::fuseSiblingGemms(
          *module, train ? llvm::ArrayRef<std::string>(trainOpts->freeze)
                         : llvm::ArrayRef<std::string>())))
    return diagnostics.printed ? 1 : fail("fusing sibling products failed");

  if (planning)
    return printPlan(mainFn, *planOpts);
  if (emit == Emit::MlirImport)
    return writeText(*module);

  auto chosen = pcc::choosePlan(*module, *planOpts, tensorLayouts(),
                                clusterName, selectedTarget());
  if (!chosen)
    return fail(toString(chosen.takeError()));
  if (!chosen->warning.empty())
    errs() << "warning: " << chosen->warning << "\n";
  // The step is differentiated after planning (the planner prices training
  // from the forward graph) and before the plan is applied, so the
  // backward pass and the update are partitioned with the rest.
  // Recompute (forced or the planner's choice) checkpoints the layers the
  // planner found, so the step holds what the planner priced.
  if (train && chosen->plan.recompute != pcc::Recompute::None) {
    trainOpts->recompute = true;
    trainOpts->selective = chosen->plan.recompute == pcc::Recompute::Selective;
    pcc::markRepeatedLayers(mainFn);
  }
  pcc::TrainStepReport trained;
  if (train &&
      mlir::failed(pcc::buildTrainingStep(*module, *trainOpts, &trained)))
    return diagnostics.printed ? 1 : fail("building the training step failed");
  if (trainOpts->recompute)
    chosen->note += formatv("recompute: {0} forward ops repeated in the "
                            "backward pass; ",
                            trained.recomputedOps)
                        .str();
  // ZeRO is a layout of the step's stored tensors: part of the plan.
  if (zeroStage && chosen->plan.devices() > 1) {
    chosen->plan.zero = zeroStage;
    pcc::writePlan(*module, chosen->plan);
  }
  if (chosen->plan.partitions() &&
      mlir::failed(pcc::applyPlan(*module, emit != Emit::Mlir)))
    return diagnostics.printed ? 1 : fail("partitioning failed");
  if (emit != Emit::None)
    return writeText(*module);

  pcc::CompileOptions copts;
  copts.outputDir =
      outputPath.empty() ? std::string("out") : outputPath.getValue();
  copts.modelPath = inputFile;
  copts.target = &selectedTarget();
  copts.cudaArch = cudaArch;
  copts.devices = chosen->plan.devices();
  copts.cxxFlags = cxxFlags;
  if (deviceMemoryBytes)
    copts.deviceMemoryBytes = *deviceMemoryBytes;
  else if (targetName == "cuda")
    copts.deviceMemoryBytes = int64_t(80) << 30; // an A100 or H100 80GB
  copts.unitBytes = std::max(1u, unsigned(codegenUnitBytes));
  pcc::CompileReport report;
  if (mlir::failed(pcc::compileModel(*module, copts, report)))
    return diagnostics.printed ? 1 : fail("compilation failed");
  if (!quiet)
    outs() << "pcc: wrote " << copts.outputDir << "/model (" << chosen->note
           << report.kernelCalls << " kernel calls, " << report.fusedLoops
           << " fused loops over " << report.fusedOps << " ops; scratch "
           << report.arenaBytes << " bytes (" << report.unsharedBytes
           << " without reuse), weights " << report.weightsBytes
           << " bytes; C++ compile " << format("%.1f", report.cxxSeconds)
           << " s)\n";
  return 0;
}
