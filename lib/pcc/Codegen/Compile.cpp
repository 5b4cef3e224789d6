//===- Compile.cpp - build a model executable -----------------------------===//
//
// Everything is written into a staging directory (pcc/Support/OutputFiles.h)
// and moved into place only after the C++ compiler succeeds, so a failed
// compile never leaves a half-written output directory behind, and never
// touches a directory that is not pcc's own.
//
//===----------------------------------------------------------------------===//

#include "pcc/Codegen/Compile.h"
#include "pcc/Sharding/ParallelPlan.h"

#include "pcc/Support/OutputFiles.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;

namespace pcc {
namespace {

LogicalResult writeFile(Location loc, StringRef path, StringRef contents) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return emitError(loc) << "cannot write '" << path << "': " << ec.message();
  os << contents;
  return success();
}

/// plan.json: the module's plan (one device when it has none) and what the
/// code generator made of it.
std::string planJson(ModuleOp module, const CompileOptions &options,
                     const EmittedModel &m) {
  ParallelPlan plan =
      readPlan(module).value_or(ParallelPlan::withDegrees(1, 1, 1, 1));
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "{\n  \"schema\": \"pcc-plan/1\",\n  \"model\": \""
     << llvm::sys::path::filename(options.modelPath) << "\",\n"
     << "  \"devices\": " << options.devices << ",\n"
     << "  \"mesh\": {\"dp\": " << plan.degree("dp")
     << ", \"pp\": " << plan.degree("pp") << ", \"tp\": " << plan.degree("tp")
     << ", \"tp_mode\": \""
     << (plan.degree("tp") > 1 ? tensorModeName(plan.tensorMode) : "none")
     << "\", \"sp\": " << plan.degree("sp") << ", \"sp_mode\": \""
     << (plan.degree("sp") > 1 ? sequenceModeName(plan.sequenceMode) : "none")
     << "\", \"tp_layout\": \"" << tensorLayoutsName(plan.tensorLayouts)
     << "\", \"microbatches\": " << plan.microbatches
     << (plan.zeroBubble ? ", \"pipeline_schedule\": \"zb-h1\"" : "")
     << "},\n"
     << "  \"collectives\": {\"all_reduce\": " << m.allReduces
     << ", \"all_gather\": " << m.allGathers
     << ", \"reduce_scatter\": " << m.reduceScatters
     << ", \"all_slice\": " << m.allSlices
     << ", \"bytes_per_device\": " << m.collectiveBytes
     << ", \"all_to_all\": " << m.allToAlls << ", \"send\": " << m.sends
     << ", \"send_bytes\": " << m.sendBytes
     << ", \"ring_shift\": " << m.ringShifts
     << ", \"broadcast\": " << m.broadcasts << "},\n";
  // The program runs once per microbatch (programMesh's microbatch axis), a
  // training step's prologue and update once: what a step does, to compare
  // with `pcc plan`.
  int64_t runs = std::max<int64_t>(1, plan.microbatches);
  auto perStep = [&](int all, int once) {
    return (int64_t(all) - once) * runs + once;
  };
  os << "  \"collectives_per_step\": {\"all_reduce\": "
     << perStep(m.allReduces, m.onceAllReduces)
     << ", \"all_gather\": " << perStep(m.allGathers, m.onceAllGathers)
     << ", \"reduce_scatter\": "
     << perStep(m.reduceScatters, m.onceReduceScatters)
     << ", \"all_to_all\": " << perStep(m.allToAlls, m.onceAllToAlls)
     << ", \"send\": " << int64_t(m.sends) * runs << "},\n"
     << "  \"memory\": {\"weights_bytes\": " << m.weights.fileBytes()
     << ", \"arena_bytes\": " << m.arenaBytes
     << ", \"arena_bytes_without_reuse\": " << m.unsharedBytes
     << ", \"per_stage\": [";
  for (auto [s, stage] : llvm::enumerate(m.stageMemory))
    os << (s ? ", " : "") << "{\"weights_bytes\": " << stage.weightsBytes
       << ", \"arena_bytes\": " << stage.arenaBytes
       << ", \"stash_bytes_per_microbatch\": " << stage.stashBytes
       << (stage.weightStashBytes
               ? ", \"weight_stash_bytes_per_microbatch\": " +
                     std::to_string(stage.weightStashBytes)
               : std::string())
       << "}";
  os << "]},\n"
     << "  \"codegen\": {\"fused_loops\": " << m.fusedLoops
     << ", \"fused_ops\": " << m.fusedOps
     << ", \"kernel_calls\": " << m.kernelCalls << "}\n}\n";
  return s;
}

} // namespace

LogicalResult compileToExecutable(ModuleOp module,
                                  const CompileOptions &options,
                                  CompileReport &report) {
  Location loc = module.getLoc();
  auto t0 = std::chrono::steady_clock::now();
  EmitOptions emitOptions;
  emitOptions.deviceMemoryBytes = options.deviceMemoryBytes;
  emitOptions.unitBytes = options.unitBytes;
  if (!options.target)
    return emitError(loc) << "no back end to compile for";
  auto emitted = options.target->emit(module, emitOptions);
  if (failed(emitted))
    return failure();

  auto staged = StagedDirectory::create(options.outputDir, {options.modelPath});
  if (!staged)
    return emitError(loc) << llvm::toString(staged.takeError());
  auto in = [&](StringRef name) { return staged->file(name); };

  SmallVector<std::string> texts;
  for (const EmittedSource &unit : emitted->sources)
    texts.push_back(unit.text);
  auto fingerprint = writeWeightsFile(loc, in("weights.bin"), emitted->weights,
                                      texts, options.readWeight);
  if (failed(fingerprint))
    return failure();
  std::string fingerprintLine;
  llvm::raw_string_ostream(fingerprintLine)
      << "#define PCC_BUILD_FINGERPRINT 0x"
      << llvm::format_hex_no_prefix(*fingerprint, 16) << "ull\n";
  for (auto [i, unit] : llvm::enumerate(emitted->sources))
    if (failed(writeFile(loc, in(unit.name),
                         (i == 0 ? fingerprintLine : "") + unit.text)))
      return failure();
  if (failed(writeFile(loc, in("plan.json"), planJson(module, options, *emitted))))
    return failure();
  auto t1 = std::chrono::steady_clock::now();
  if (failed(options.target->build(loc, *staged, emitted->sources, options)))
    return failure();
  auto t2 = std::chrono::steady_clock::now();

  if (auto err = staged->commit())
    return emitError(loc) << llvm::toString(std::move(err));
  report.arenaBytes = emitted->arenaBytes;
  report.unsharedBytes = emitted->unsharedBytes;
  report.weightsBytes = emitted->weights.fileBytes();
  report.fusedLoops = emitted->fusedLoops;
  report.fusedOps = emitted->fusedOps;
  report.kernelCalls = emitted->kernelCalls;
  report.codegenSeconds = std::chrono::duration<double>(t1 - t0).count();
  report.cxxSeconds = std::chrono::duration<double>(t2 - t1).count();
  return success();
}

} // namespace pcc
