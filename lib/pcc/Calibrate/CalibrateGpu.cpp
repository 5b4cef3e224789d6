//===- CalibrateGpu.cpp - one GPU as a cluster spec (pcc-gpu-probe) -------===//

#include "pcc/Calibrate/Calibrate.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

using namespace llvm;

namespace pcc {

namespace {

Error probeError(const Twine &what) {
  return createStringError(inconvertibleErrorCode(), "calibrate: " + what);
}

} // namespace

Expected<ClusterSpec> gpuSpecFromProbe(StringRef line) {
  Expected<json::Value> v = json::parse(line.trim());
  if (!v)
    return probeError("the probe's output is not JSON: " +
                      toString(v.takeError()));
  const json::Object *o = v->getAsObject();
  if (!o || o->getString("schema") != "pcc-gpu-probe/1")
    return probeError("the probe's output is not schema pcc-gpu-probe/1");
  auto positive = [&](StringRef key) -> Expected<double> {
    std::optional<double> x = o->getNumber(key);
    if (!x || !(*x > 0))
      return probeError("the probe's '" + key + "' is missing or not positive");
    return *x;
  };
  ClusterSpec c;
  c.name = "gpu";
  c.deviceName = o->getString("device").value_or("GPU").str();
  c.nodes = c.devicesPerNode = 1;
  const json::Object *gemm = o->getObject("gemm_flops");
  for (StringRef dtype : {"fp32", "tf32", "bf16", "fp16"}) {
    std::optional<double> rate = gemm ? gemm->getNumber(dtype) : std::nullopt;
    if (!rate || !(*rate > 0))
      return probeError("the probe measured no " + dtype + " GEMM rate");
    c.peakFlops[dtype.str()] = *rate;
  }
  if (const json::Array *shape = o->getArray("gemm_shape_bf16"))
    for (const json::Value &row : *shape)
      if (const json::Array *pair = row.getAsArray();
          pair && pair->size() == 2 && (*pair)[0].getAsNumber() &&
          (*pair)[1].getAsNumber() && *(*pair)[1].getAsNumber() > 0)
        c.gemmShape.push_back(
            {*(*pair)[0].getAsNumber(), *(*pair)[1].getAsNumber()});
  c.gemmShape.push_back({8192.0, 1.0});
  // pcc's attention kernels (older probes did not measure them).
  if (const json::Object *attention = o->getObject("attention_flops"))
    for (const auto &kv : *attention)
      if (std::optional<double> rate = kv.second.getAsNumber();
          rate && *rate > 0)
        c.attentionFlops[kv.first.str()] = *rate;
  for (auto [key, out] :
       {std::pair<StringRef, double *>{"memory_bytes", &c.memoryBytes},
        {"copy_bytes_s", &c.memoryBandwidth},
        {"kernel_s", &c.kernelOverhead},
        {"host_link_bytes_s", &c.intraNode.bandwidth},
        {"host_link_latency_s", &c.intraNode.latency}}) {
    Expected<double> x = positive(key);
    if (!x)
      return x.takeError();
    *out = *x;
  }
  // One GPU has no peer: its only link is the host copy path that
  // `--comm mpi` stages through. No plan on one device uses it.
  c.interNode = c.intraNode;
  // Rates are measured, not peaks: no further derating.
  c.gemmEfficiency = c.memoryEfficiency = c.networkEfficiency = 1.0;
  return c;
}

Expected<ClusterSpec> calibrateGpu(const std::string &probe,
                                   raw_ostream &log) {
  if (!sys::fs::can_execute(probe))
    return probeError("probe '" + probe +
                      "' not found (pcc was built without CUDA?)");
  SmallString<128> out, err;
  if (sys::fs::createTemporaryFile("pcc-gpu-probe", "json", out) ||
      sys::fs::createTemporaryFile("pcc-gpu-probe", "err", err))
    return probeError("cannot create a temporary file");
  log << "calibrate: GEMMs (fp32, tf32, bf16, fp16), copies and launches on "
         "GPU 0 ...\n";
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(out),
                                          StringRef(err)};
  std::string why;
  int rc = sys::ExecuteAndWait(probe, {probe}, std::nullopt, redirects,
                               /*SecondsToWait=*/300, 0, &why);
  auto text = MemoryBuffer::getFile(out);
  auto errors = MemoryBuffer::getFile(err);
  sys::fs::remove(out);
  sys::fs::remove(err);
  if (rc != 0) {
    std::string said =
        errors ? (*errors)->getBuffer().trim().str() : std::string();
    return probeError(formatv("the GPU probe failed (exit {0}){1}{2}", rc,
                              said.empty() ? "" : ": ",
                              said.empty() ? why : said)
                          .str());
  }
  if (!text)
    return probeError("the GPU probe wrote nothing");
  return gpuSpecFromProbe((*text)->getBuffer());
}

} // namespace pcc
