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

#include "pcc/Codegen/CppEmitter.h"
#include "pcc/Config.h"
#include "pcc/Support/OutputFiles.h"
#include "pccrt/ShardLayout.h"
#include "pccrt/WeightsFile.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <thread>

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

/// Dense bytes of an IR constant (bools one byte each, splats expanded).
std::string constantBytes(ElementsAttr value) {
  auto dense = cast<DenseElementsAttr>(value);
  std::string bytes;
  if (dense.getElementType().isInteger(1)) {
    for (bool b : dense.getValues<bool>())
      bytes.push_back(b ? 1 : 0);
    return bytes;
  }
  ArrayRef<char> raw = dense.getRawData();
  if (dense.isSplat()) {
    for (int64_t i = 0, n = dense.getNumElements(); i < n; ++i)
      bytes.append(raw.data(), raw.size());
    return bytes;
  }
  return std::string(raw.data(), raw.size());
}

/// Every block of a split weight, in pccrt::blockIndex order, each padded
/// to `stride` bytes.
std::string splitBlocks(const WeightsEntry &e, std::string &global) {
  int rank = e.globalShape.size();
  std::vector<pccrt::DimSplit> splits(rank);
  for (int d = 0; d < rank; ++d)
    splits[d] = {e.blocks[d] > 1 ? 1 : 0, {d, 0, 0, 0}, e.groups[d]};
  std::string out(e.stride * (e.numBlocks - 1) + e.bytes, '\0');
  std::vector<int64_t> coords(rank);
  for (int64_t b = 0; b < e.numBlocks; ++b) {
    pccrt::meshCoords(b, rank, e.blocks.data(), coords.data());
    pccrt::copyBlock(/*toLocal=*/true, global.data(), out.data() + b * e.stride,
                     rank, e.globalShape.data(), splits.data(),
                     e.blocks.data(), coords.data(), e.elementBytes);
  }
  return out;
}

/// Folds `bytes` at `offset` into a running fingerprint.
uint64_t mixFingerprint(uint64_t h, int64_t offset, StringRef bytes) {
  uint64_t parts[3] = {h, static_cast<uint64_t>(offset),
                       llvm::xxh3_64bits(bytes)};
  return llvm::xxh3_64bits(ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(parts), sizeof(parts)));
}

/// Writes the weights file (pccrt/WeightsFile.h). The fingerprint covers the
/// generated source and every weight byte; returns it.
FailureOr<uint64_t> writeWeights(Location loc, StringRef path,
                                 const EmittedModel &model,
                                 const CompileOptions &options) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return emitError(loc) << "cannot write '" << path << "': " << ec.message();
  os.write_zeros(sizeof(pccrt::WeightsHeader));
  uint64_t fingerprint = 0;
  for (const EmittedSource &unit : model.sources)
    fingerprint = mixFingerprint(fingerprint, 0, unit.text);
  int64_t at = 0;
  for (const WeightsEntry &e : model.weights) {
    std::string bytes, error;
    if (!e.weightName.empty()) {
      if (!options.readWeight)
        return emitError(loc) << "no weights to read '" << e.weightName
                              << "' from";
      if (!options.readWeight(e.weightName, bytes, error))
        return emitError(loc) << error;
    } else {
      bytes = constantBytes(e.constant);
    }
    int64_t expected = e.bytes * e.numBlocks;
    if (static_cast<int64_t>(bytes.size()) != expected)
      return emitError(loc) << "weight '" << e.weightName << "' has "
                            << bytes.size() << " bytes, expected " << expected;
    if (e.numBlocks > 1)
      bytes = splitBlocks(e, bytes);
    fingerprint = mixFingerprint(fingerprint, e.offset, bytes);
    os.write_zeros(e.offset - at);
    os << bytes;
    at = e.offset + bytes.size();
  }
  os.write_zeros(model.weightsBytes - at);
  pccrt::WeightsHeader header = {};
  std::memcpy(header.magic, pccrt::kWeightsMagic, sizeof(header.magic));
  header.fingerprint = fingerprint;
  header.dataBytes = model.weightsBytes;
  os.seek(0);
  os.write(reinterpret_cast<const char *>(&header), sizeof(header));
  os.close();
  if (os.has_error()) {
    std::string why = os.error().message();
    os.clear_error();
    return emitError(loc) << "cannot write '" << path << "': " << why;
  }
  return fingerprint;
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
     << "  \"mesh\": {\"dp\": " << plan.degree("dp") << ", \"pp\": "
     << plan.degree("pp") << ", \"tp\": " << plan.degree("tp")
     << ", \"tp_mode\": \""
     << (plan.degree("tp") > 1 ? tensorModeName(plan.tensorMode) : "none")
     << "\", \"sp\": " << plan.degree("sp") << ", \"tp_layout\": \""
     << (plan.tensorLayouts == TensorLayouts::Planned ? "planned" : "megatron")
     << "\", \"microbatches\": " << plan.microbatches << "},\n"
     << "  \"collectives\": {\"all_reduce\": " << m.allReduces
     << ", \"all_gather\": " << m.allGathers << ", \"reduce_scatter\": "
     << m.reduceScatters << ", \"all_slice\": " << m.allSlices
     << ", \"bytes_per_device\": " << m.collectiveBytes << "},\n"
     << "  \"memory\": {\"weights_bytes\": " << m.weightsBytes
     << ", \"arena_bytes\": " << m.arenaBytes
     << ", \"arena_bytes_without_reuse\": " << m.unsharedBytes << "},\n"
     << "  \"codegen\": {\"fused_loops\": " << m.fusedLoops
     << ", \"fused_ops\": " << m.fusedOps
     << ", \"kernel_calls\": " << m.kernelCalls << "}\n}\n";
  return s;
}

/// One compiler run, its output captured in `log`.
struct CompilerJob {
  SmallVector<std::string> args;
  std::string log;
};

/// The first real diagnostic in a compiler log (the linker's summary line
/// comes last).
std::string firstDiagnostic(StringRef log) {
  if (auto buf = llvm::MemoryBuffer::getFile(log))
    for (StringRef line : llvm::split((*buf)->getBuffer(), '\n'))
      if ((line.contains("error") || line.contains("undefined reference")) &&
          !line.contains("collect2"))
        return line.trim().str();
  return "see the compiler output";
}

/// Runs `jobs`, `parallel` at a time, each to completion or failure; stops
/// at the first failure. Everything shares one deadline.
LogicalResult runCompilerJobs(Location loc, ArrayRef<CompilerJob> jobs,
                              unsigned parallel) {
  constexpr unsigned kDeadlineSeconds = 600;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<llvm::sys::ProcessInfo, size_t>> running;
  size_t next = 0;
  auto fail = [&](size_t job, StringRef why) {
    for (auto &[pi, j] : running) {
      ::kill(pi.Pid, SIGKILL);
      llvm::sys::Wait(pi, std::nullopt);
    }
    return emitError(loc) << "C++ compilation of the generated model failed ("
                          << (why.empty() ? firstDiagnostic(jobs[job].log)
                                          : why.str())
                          << ")";
  };
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && running.size() < parallel) {
      const CompilerJob &job = jobs[next];
      SmallVector<StringRef> args(job.args.begin(), job.args.end());
      std::optional<StringRef> redirects[] = {std::nullopt, StringRef(job.log),
                                              StringRef(job.log)};
      std::string error;
      bool failedToStart = false;
      auto pi = llvm::sys::ExecuteNoWait(args[0], args, std::nullopt,
                                         redirects, 0, &error, &failedToStart);
      if (failedToStart)
        return fail(next, error);
      running.emplace_back(pi, next++);
    }
    auto [pi, job] = running.front();
    running.erase(running.begin());
    unsigned spent = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    std::string error;
    auto done = llvm::sys::Wait(
        pi, std::max<unsigned>(1, kDeadlineSeconds - std::min(spent, 599u)),
        &error);
    if (done.ReturnCode != 0)
      return fail(job, done.ReturnCode == -2 && error.empty()
                           ? "the compiler crashed or ran past 600 s"
                           : error);
    llvm::sys::fs::remove(jobs[job].log);
  }
  return success();
}

/// Compiles and links the generated units into the staged `model`: one
/// compiler run for one unit; otherwise each unit to an object in parallel,
/// then a link.
LogicalResult buildExecutable(Location loc, const StagedDirectory &staged,
                              ArrayRef<EmittedSource> sources,
                              const CompileOptions &options) {
  SmallVector<std::string> common = {PCC_CXX_COMPILER, "-std=c++17", "-O3",
                                     "-w",
                                     std::string("-I") + PCC_RUNTIME_INCLUDE_DIR};
  for (StringRef flag : llvm::split(StringRef(options.cxxFlags), ' '))
    if (!flag.empty())
      common.push_back(flag.str());
  auto linkFlags = [&](SmallVector<std::string> &args) {
    args.append({"-o", staged.file("model"), PCC_RUNTIME_LIBRARY});
    for (StringRef flag : llvm::split(StringRef(PCC_RUNTIME_LINK_FLAGS), ' '))
      if (!flag.empty())
        args.push_back(flag.str());
  };
  if (sources.size() == 1) {
    CompilerJob job{common, staged.file("compile.log")};
    job.args.push_back(staged.file(sources[0].name));
    linkFlags(job.args);
    return runCompilerJobs(loc, job, 1);
  }
  std::vector<CompilerJob> compiles;
  CompilerJob link{{PCC_CXX_COMPILER}, staged.file("link.log")};
  for (const EmittedSource &unit : sources) {
    std::string object = staged.file(unit.name + ".o");
    CompilerJob job{common, staged.file(unit.name + ".log")};
    job.args.append({"-c", staged.file(unit.name), "-o", object});
    compiles.push_back(std::move(job));
    link.args.push_back(object);
  }
  for (StringRef flag : llvm::split(StringRef(options.cxxFlags), ' '))
    if (!flag.empty())
      link.args.push_back(flag.str());
  linkFlags(link.args);
  unsigned parallel = options.jobs ? options.jobs
                                   : std::max(1u, std::thread::hardware_concurrency());
  if (failed(runCompilerJobs(loc, compiles, parallel)) ||
      failed(runCompilerJobs(loc, link, 1)))
    return failure();
  for (const EmittedSource &unit : sources)
    llvm::sys::fs::remove(staged.file(unit.name + ".o"));
  return success();
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
  auto emitted = emitCpp(module, emitOptions);
  if (failed(emitted))
    return failure();

  auto staged = StagedDirectory::create(options.outputDir, {options.modelPath});
  if (!staged)
    return emitError(loc) << llvm::toString(staged.takeError());
  auto in = [&](StringRef name) { return staged->file(name); };

  auto fingerprint =
      writeWeights(loc, in("weights.bin"), *emitted, options);
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
  if (failed(buildExecutable(loc, *staged, emitted->sources, options)))
    return failure();
  auto t2 = std::chrono::steady_clock::now();

  if (auto err = staged->commit())
    return emitError(loc) << llvm::toString(std::move(err));
  report.arenaBytes = emitted->arenaBytes;
  report.unsharedBytes = emitted->unsharedBytes;
  report.weightsBytes = emitted->weightsBytes;
  report.fusedLoops = emitted->fusedLoops;
  report.fusedOps = emitted->fusedOps;
  report.kernelCalls = emitted->kernelCalls;
  report.codegenSeconds = std::chrono::duration<double>(t1 - t0).count();
  report.cxxSeconds = std::chrono::duration<double>(t2 - t1).count();
  return success();
}

} // namespace pcc
