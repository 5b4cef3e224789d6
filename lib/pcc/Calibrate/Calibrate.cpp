//===- Calibrate.cpp - measure GEMM, memory and MPI on this machine -------===//

#include "pcc/Calibrate/Calibrate.h"

#include "pccrt/BlasCore.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace llvm;

namespace pcc {

void useExecutablesBlas(char **argv) {
  pccrt::rerunWithBetterBlas(argv, openblas_get_corename());
}

namespace {

template <typename F> double medianSeconds(int reps, F &&f) {
  std::vector<double> t;
  f(); // warm up
  for (int i = 0; i < reps; ++i) {
    auto s = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - s)
                    .count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// FLOP/s of one-thread SGEMM (m x 1024) * (1024 x 1024): m = 1024 is the
/// peak; thin m is what a layer sees when its rows are split over devices.
double sgemmRate(int m) {
  const int n = 1024;
  std::vector<float> a(size_t(m) * n, 1.0f), b(size_t(n) * n, 0.5f),
      c(size_t(m) * n);
  openblas_set_num_threads(1);
  int reps = std::max(5, 4096 / m);
  double s = medianSeconds(reps, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, n, 1.0f,
                a.data(), n, b.data(), n, 0.0f, c.data(), n);
  });
  return 2.0 * m * n * n / s;
}

/// Fraction of its throughput a core keeps when time-shared: `2 * cores`
/// threads running the same SGEMMs as `cores` threads should take twice as
/// long; they take longer (context switches, caches refilled).
double sharedCoreEfficiency(unsigned cores) {
  const int m = 512, n = 1024, reps = 6;
  auto run = [&](unsigned threads) {
    std::vector<std::vector<float>> a(threads), b(threads), c(threads);
    for (unsigned t = 0; t < threads; ++t) {
      a[t].assign(size_t(m) * n, 1.0f);
      b[t].assign(size_t(n) * n, 0.5f);
      c[t].assign(size_t(m) * n, 0.0f);
    }
    auto work = [&](unsigned t) {
      for (int r = 0; r < reps; ++r)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, n, 1.0f,
                    a[t].data(), n, b[t].data(), n, 0.0f, c[t].data(), n);
    };
    return medianSeconds(3, [&] {
      std::vector<std::thread> workers;
      for (unsigned t = 0; t < threads; ++t)
        workers.emplace_back(work, t);
      for (std::thread &w : workers)
        w.join();
    });
  };
  openblas_set_num_threads(1);
  double alone = run(cores), shared = run(2 * cores);
  return std::clamp(2 * alone / shared, 0.1, 1.0);
}

/// Bytes per second memcpy moves (read + write) on each of `threads`
/// threads copying at once, summed.
double copyBandwidth(unsigned threads) {
  const size_t bytes = size_t(256) << 20;
  std::vector<std::vector<char>> src(threads), dst(threads);
  for (unsigned t = 0; t < threads; ++t) {
    src[t].assign(bytes, 1);
    dst[t].assign(bytes, 0);
  }
  double s = medianSeconds(5, [&] {
    std::vector<std::thread> workers;
    for (unsigned t = 1; t < threads; ++t)
      workers.emplace_back(
          [&, t] { std::memcpy(dst[t].data(), src[t].data(), bytes); });
    std::memcpy(dst[0].data(), src[0].data(), bytes);
    for (std::thread &w : workers)
      w.join();
  });
  return 2.0 * double(bytes) * threads / s;
}

Expected<std::pair<double, double>> mpiLink(const CalibrateOptions &o) {
  auto mpirun = sys::findProgramByName("mpirun");
  if (!mpirun)
    return createStringError(inconvertibleErrorCode(),
                             "calibrate: mpirun not found on PATH");
  if (!sys::fs::can_execute(o.probe))
    return createStringError(inconvertibleErrorCode(),
                             "calibrate: probe '" + o.probe +
                                 "' not found (build pcc-mpi-probe)");
  SmallString<128> out;
  if (auto ec = sys::fs::createTemporaryFile("pcc-probe", "json", out))
    return createStringError(ec, "calibrate: cannot create a temporary file");
  std::string np = std::to_string(o.ranks);
  std::vector<StringRef> args{*mpirun, "--oversubscribe", "-q"};
  if (geteuid() == 0)
    args.push_back("--allow-run-as-root");
  args.insert(args.end(), {"-np", np, o.probe});
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(out),
                                          std::nullopt};
  std::string err;
  // Plain shared-memory copies work in containers too.
  SmallVector<StringRef> env;
  std::vector<std::string> envStorage;
  for (char **e = environ; *e; ++e)
    envStorage.push_back(*e);
  envStorage.push_back("OMPI_MCA_btl_vader_single_copy_mechanism=none");
  for (const std::string &e : envStorage)
    env.push_back(e);
  int rc = sys::ExecuteAndWait(*mpirun, args, ArrayRef<StringRef>(env),
                               redirects, /*SecondsToWait=*/120, 0, &err);
  auto buffer = MemoryBuffer::getFile(out);
  sys::fs::remove(out);
  if (rc != 0 || !buffer)
    return createStringError(inconvertibleErrorCode(),
                             "calibrate: mpirun of the probe failed (exit " +
                                 std::to_string(rc) + ") " + err);
  StringRef text = (*buffer)->getBuffer().trim();
  text = text.substr(text.rfind('\n') + 1);
  Expected<json::Value> v = json::parse(text);
  if (!v)
    return v.takeError();
  const json::Object *obj = v->getAsObject();
  auto lat = obj ? obj->getNumber("latency_s") : std::nullopt;
  auto bw = obj ? obj->getNumber("bandwidth_bytes_s") : std::nullopt;
  if (!lat || !bw || *bw <= 0)
    return createStringError(inconvertibleErrorCode(),
                             "calibrate: unexpected probe output: " + text);
  return std::make_pair(std::max(*lat, 1e-7), *bw);
}

} // namespace

Expected<ClusterSpec> calibrateHost(const CalibrateOptions &o,
                                    raw_ostream &log) {
  ClusterSpec c;
  c.name = "host";
  c.nodes = 1;
  c.devicesPerNode = std::max(1u, std::thread::hardware_concurrency());
  c.sharedCores = true;
  c.deviceName = formatv("CPU core ({0} per node)", c.devicesPerNode);
  log << "calibrate: SGEMM 1024^3, 1 thread ... ";
  double flops = sgemmRate(1024);
  log << formatv("{0:F1} GFLOP/s\n", flops / 1e9);
  c.peakFlops["fp32"] = flops;
  log << "calibrate: SGEMM m x 1024 x 1024, 1 thread, m =";
  for (int m : {8, 16, 32, 64, 128, 256, 512}) {
    double eff = std::min(1.0, sgemmRate(m) / flops);
    log << formatv(" {0}: {1:F2}", m, eff);
    c.gemmShape.push_back({double(m), eff});
  }
  c.gemmShape.push_back({1024.0, 1.0});
  log << " of peak\n";
  log << "calibrate: memcpy 256 MiB, 1 thread ... ";
  c.memoryBandwidth = copyBandwidth(1);
  log << formatv("{0:F1} GB/s\n", c.memoryBandwidth / 1e9);
  log << formatv("calibrate: memcpy 256 MiB on {0} threads at once ... ",
                 c.devicesPerNode);
  c.nodeMemoryBandwidth = copyBandwidth(unsigned(c.devicesPerNode));
  log << formatv("{0:F1} GB/s in all\n", c.nodeMemoryBandwidth / 1e9);
  log << formatv("calibrate: SGEMM on {0} threads sharing {1} cores ... ",
                 2 * c.devicesPerNode, c.devicesPerNode);
  c.sharedCoreEfficiency = sharedCoreEfficiency(unsigned(c.devicesPerNode));
  log << formatv("{0:F2} of the unshared throughput\n",
                 c.sharedCoreEfficiency);
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  c.memoryBytes = double(pages) * double(pageSize) / double(c.devicesPerNode);
  log << formatv("calibrate: MPI_Allreduce across {0} local ranks ... ",
                 o.ranks);
  auto link = mpiLink(o);
  if (!link)
    return link.takeError();
  log << formatv("latency {0:F1} us, bandwidth {1:F2} GB/s\n",
                 link->first * 1e6, link->second / 1e9);
  c.intraNode = {link->second, link->first};
  c.interNode = c.intraNode; // one node: never used
  // Rates above are measured, not peaks: no further derating.
  c.gemmEfficiency = c.memoryEfficiency = c.networkEfficiency = 1.0;
  c.kernelOverhead = 1e-6;
  return c;
}

} // namespace pcc
