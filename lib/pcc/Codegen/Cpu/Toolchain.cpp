//===- Toolchain.cpp - the C++ compiler that builds CPU models ------------===//
//
// Units compile in parallel (one compiler per core unless told), each
// compiler's output in a log beside it; the first failure stops the rest and
// names the first diagnostic. Everything shares one 600 s deadline.
//
//===----------------------------------------------------------------------===//

#include "Toolchain.h"

#include "pcc/Codegen/Compile.h"
#include "pcc/Config.h"
#include "pcc/Support/OutputFiles.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <chrono>
#include <csignal>
#include <thread>

using namespace mlir;

namespace pcc::cpu {
namespace {

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
LogicalResult runCompilerJobs(Location loc, StringRef language,
                              ArrayRef<CompilerJob> jobs, unsigned parallel) {
  constexpr unsigned kDeadlineSeconds = 600;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<llvm::sys::ProcessInfo, size_t>> running;
  size_t next = 0;
  auto fail = [&](size_t job, StringRef why) {
    for (auto &[pi, j] : running) {
      ::kill(pi.Pid, SIGKILL);
      llvm::sys::Wait(pi, std::nullopt);
    }
    return emitError(loc) << language
                          << " compilation of the generated model failed ("
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

} // namespace

LogicalResult buildWith(const Toolchain &tc, Location loc,
                        const StagedDirectory &staged,
                        ArrayRef<EmittedSource> sources,
                        const CompileOptions &options) {
  SmallVector<std::string> common = {tc.compiler};
  common.append(tc.compileFlags.begin(), tc.compileFlags.end());
  auto linkFlags = [&](SmallVector<std::string> &args) {
    args.append({"-o", staged.file("model")});
    args.append(tc.linkInputs.begin(), tc.linkInputs.end());
  };
  if (sources.size() == 1) {
    CompilerJob job{common, staged.file("compile.log")};
    job.args.push_back(staged.file(sources[0].name));
    linkFlags(job.args);
    return runCompilerJobs(loc, tc.language, job, 1);
  }
  std::vector<CompilerJob> compiles;
  CompilerJob link{common, staged.file("link.log")};
  for (const EmittedSource &unit : sources) {
    std::string object = staged.file(unit.name + ".o");
    CompilerJob job{common, staged.file(unit.name + ".log")};
    job.args.append({"-c", staged.file(unit.name), "-o", object});
    compiles.push_back(std::move(job));
    link.args.push_back(object);
  }
  linkFlags(link.args);
  unsigned parallel = options.jobs ? options.jobs
                                   : std::max(1u, std::thread::hardware_concurrency());
  if (failed(runCompilerJobs(loc, tc.language, compiles, parallel)) ||
      failed(runCompilerJobs(loc, tc.language, link, 1)))
    return failure();
  for (const EmittedSource &unit : sources)
    llvm::sys::fs::remove(staged.file(unit.name + ".o"));
  return success();
}

LogicalResult buildExecutable(Location loc, const StagedDirectory &staged,
                              ArrayRef<EmittedSource> sources,
                              const CompileOptions &options) {
  Toolchain tc;
  tc.language = "C++";
  tc.compiler = PCC_CXX_COMPILER;
  // No trapping math: the kernels read no floating-point exception flags,
  // and selects around operations that may trap (pccTanh's) then vectorise.
  // No errno either: nothing reads it, and a square root that may set it
  // is a call that keeps its loop scalar (AdamW's update ran one float at
  // a time). Both leave every result's bits as they are.
  tc.compileFlags = {"-std=c++17",
                     "-O3",
                     "-w",
                     "-fno-trapping-math",
                     "-fno-math-errno",
                     std::string("-I") + PCC_RUNTIME_INCLUDE_DIR};
  for (StringRef flag : llvm::split(StringRef(options.cxxFlags), ' '))
    if (!flag.empty())
      tc.compileFlags.push_back(flag.str());
  tc.linkInputs.push_back(PCC_RUNTIME_LIBRARY);
  for (StringRef flag : llvm::split(StringRef(PCC_RUNTIME_LINK_FLAGS), ' '))
    if (!flag.empty())
      tc.linkInputs.push_back(flag.str());
  return buildWith(tc, loc, staged, sources, options);
}

} // namespace pcc::cpu
