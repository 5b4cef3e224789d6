//===- pcc.cpp - the pcc compiler driver ----------------------------------===//
//
//   pcc MODEL.onnx [--devices N] [--dp N] [--tp N --tp-mode 1d] [-o DIR]
//       [--input-shape NAME=AxB]...
//   pcc MODEL.onnx --emit=mlir|mlir-spmd [-o FILE]
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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

cl::OptionCategory pccCategory("pcc options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                               cl::Required, cl::cat(pccCategory));

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
    cl::value_desc("NAME=AxB"), cl::CommaSeparated, cl::cat(pccCategory));

cl::opt<std::string> outputPath(
    "o",
    cl::desc("Output directory when compiling (default: out), or output "
             "file for --emit (default: stdout)"),
    cl::value_desc("path"), cl::cat(pccCategory));

cl::opt<int> devices("devices", cl::desc("Number of devices (ranks) to "
                                         "compile for"),
                     cl::init(1), cl::cat(pccCategory));

cl::opt<int> dpDegree("dp", cl::desc("Data-parallel degree (split the batch)"),
                      cl::init(1), cl::cat(pccCategory));
cl::opt<int> tpDegree("tp", cl::desc("Tensor-parallel degree"), cl::init(1),
                      cl::cat(pccCategory));
cl::opt<std::string> tpMode(
    "tp-mode",
    cl::desc("Tensor-parallel scheme: 1d (Megatron); 2d, 2.5d and 3d are "
             "planned by `pcc plan` but cannot run yet"),
    cl::init("1d"), cl::cat(pccCategory));

cl::opt<std::string> cxxFlags(
    "cxx-flags",
    cl::desc("Extra flags for the C++ compiler that builds the model (e.g. "
             "-march=native)"),
    cl::value_desc("flags"), cl::cat(pccCategory));

cl::opt<bool> quiet("quiet", cl::desc("Do not print the compile summary"),
                    cl::cat(pccCategory));

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

/// The default plan until the planner lands: as much data parallelism as
/// the batch (the first input's leading dimension) allows, the rest tensor
/// parallel.
int defaultDataParallel(mlir::ModuleOp module, int devices) {
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
  int64_t batch = 0;
  if (fn)
    for (mlir::Type t : fn.getArgumentTypes())
      if (auto rt = dyn_cast<mlir::RankedTensorType>(t); rt && rt.getRank()) {
        batch = rt.getDimSize(0);
        break;
      }
  int best = 1;
  for (int d = 1; d <= devices; ++d)
    if (devices % d == 0 && batch % d == 0)
      best = d;
  return best;
}

int fail(const Twine &message) {
  errs() << "error: " << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::HideUnrelatedOptions(pccCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pcc: auto-parallelizing compiler for ONNX models\n\n"
      "  pcc MODEL.onnx --emit=mlir        print the imported pcc-dialect "
      "module\n"
      "  pcc MODEL.onnx --emit=mlir --input-shape tokens=2x32\n"
      "                                    bind symbolic input dims first\n");

  pcc::ImportOptions options;
  for (const std::string &spec : inputShapes) {
    std::string err = pcc::parseInputShapeBinding(spec, options);
    if (!err.empty())
      return fail(err);
  }
  if (devices < 1)
    return fail("--devices must be at least 1, got " + Twine(devices));
  bool forced = dpDegree.getNumOccurrences() || tpDegree.getNumOccurrences();
  if (dpDegree < 1 || tpDegree < 1)
    return fail("--dp and --tp must be at least 1");
  if (tpMode != "1d" && tpMode != "2d" && tpMode != "2.5d" && tpMode != "3d")
    return fail("--tp-mode must be 1d, 2d, 2.5d or 3d, got '" + tpMode + "'");
  if (tpMode != "1d")
    return fail("--tp-mode " + tpMode +
                " cannot be compiled yet (only 1d, Megatron)");
  int dp = dpDegree, tp = tpDegree;
  if (forced) {
    if (devices.getNumOccurrences() && dp * tp != devices)
      return fail("--dp " + Twine(dp) + " x --tp " + Twine(tp) + " is " +
                  Twine(dp * tp) + " devices, but --devices is " +
                  Twine(devices));
    devices = dp * tp;
  }

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
  if (emit != Emit::MlirImport) {
    mlir::PassManager pm(&context);
    pcc::buildImportCleanupPipeline(pm);
    if (mlir::failed(pm.run(*module)))
      return diagnostics.printed ? 1 : fail("cleanup pipeline failed");
  }

  // Devices > 1: shard by the forced strategy (or the default rule), then
  // partition into the per-device program.
  if (devices > 1 && emit != Emit::MlirImport) {
    if (!forced) {
      dp = defaultDataParallel(*module, devices);
      tp = devices / dp;
    }
    mlir::PassManager pm(&context);
    pm.addPass(pcc::createApplyStrategy(
        pcc::ApplyStrategyOptions{dp, tp, tpMode.getValue()}));
    if (emit != Emit::Mlir)
      pm.addPass(pcc::createPartition());
    if (mlir::failed(pm.run(*module)))
      return diagnostics.printed ? 1 : fail("partitioning failed");
  }

  if (emit == Emit::None) {
    pcc::CompileOptions copts;
    copts.outputDir = outputPath.empty() ? std::string("out") : outputPath.getValue();
    copts.modelPath = inputFile;
    copts.devices = devices;
    copts.dp = dp;
    copts.tp = tp;
    copts.cxxFlags = cxxFlags;
    pcc::CompileReport report;
    if (mlir::failed(pcc::compileToExecutable(*module, copts, report)))
      return diagnostics.printed ? 1 : fail("compilation failed");
    if (!quiet)
      outs() << "pcc: wrote " << copts.outputDir << "/model ("
             << report.kernelCalls << " kernel calls, " << report.fusedLoops
             << " fused loops over " << report.fusedOps << " ops; scratch "
             << report.arenaBytes << " bytes (" << report.unsharedBytes
             << " without reuse), weights " << report.weightsBytes
             << " bytes; C++ compile " << format("%.1f", report.cxxSeconds)
             << " s)\n";
    return 0;
  }

  std::string err;
  auto out = mlir::openOutputFile(outputPath.empty() ? std::string("-") : outputPath.getValue(), &err);
  if (!out)
    return fail(err);
  module->print(out->os());
  out->os() << "\n";
  out->keep();
  return 0;
}
