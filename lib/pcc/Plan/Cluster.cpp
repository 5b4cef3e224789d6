//===- Cluster.cpp - cluster specs: presets and JSON ----------------------===//

#include "pcc/Plan/Cluster.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

using namespace llvm;

namespace pcc {

namespace {

constexpr double kGB = 1e9, kGiB = 1073741824.0, kTera = 1e12, kMicro = 1e-6;

// Vendor data sheets (dense, no sparsity); link bandwidth is per device and
// per direction: NVLink 3 gives an A100 600 GB/s both ways, a DGX A100 node
// has 8 HDR InfiniBand ports of 200 Gb/s (25 GB/s per GPU), a DGX H100 8 NDR
// ports of 400 Gb/s. Efficiencies are what cuBLAS reaches on large GEMMs and
// what nccl-tests reports as bus bandwidth relative to the link (about 230
// of 300 GB/s for an A100 all-reduce).
ClusterSpec dgxA100() {
  ClusterSpec c;
  c.name = "dgx-a100";
  c.deviceName = "NVIDIA A100-SXM4-80GB";
  c.nodes = 560; // Selene, where Megatron-LM's Table 1 was measured
  c.devicesPerNode = 8;
  c.peakFlops = {{"fp32", 19.5 * kTera},
                 {"tf32", 156 * kTera},
                 {"bf16", 312 * kTera},
                 {"fp16", 312 * kTera}};
  c.memoryBytes = 80 * kGiB;
  c.memoryBandwidth = 2039 * kGB;
  c.intraNode = {300 * kGB, 3 * kMicro};
  c.interNode = {25 * kGB, 8 * kMicro};
  c.gemmEfficiency = 0.8;
  c.memoryEfficiency = 0.8;
  c.networkEfficiency = 0.8;
  c.kernelOverhead = 5 * kMicro;
  return c;
}

ClusterSpec dgxH100() {
  ClusterSpec c = dgxA100();
  c.name = "dgx-h100";
  c.deviceName = "NVIDIA H100-SXM5-80GB";
  c.nodes = 768; // 6144 GPUs, Megatron-Core's largest published H100 run
  c.peakFlops = {{"fp32", 67 * kTera},
                 {"tf32", 494.5 * kTera},
                 {"bf16", 989 * kTera},
                 {"fp16", 989 * kTera}};
  c.memoryBandwidth = 3350 * kGB;
  c.intraNode = {450 * kGB, 3 * kMicro};
  c.interNode = {50 * kGB, 8 * kMicro};
  return c;
}

ClusterSpec h200() {
  ClusterSpec c = dgxH100();
  c.name = "h200";
  c.deviceName = "NVIDIA H200-SXM-141GB";
  c.memoryBytes = 141 * 1e9;
  c.memoryBandwidth = 4800 * kGB;
  return c;
}

Error parseError(StringRef origin, const Twine &what) {
  return createStringError(inconvertibleErrorCode(),
                           origin + ": " + what);
}

} // namespace

double ClusterSpec::peak(StringRef dtype) const {
  auto it = peakFlops.find(dtype.str());
  if (it != peakFlops.end())
    return it->second;
  it = peakFlops.find("fp32");
  return it == peakFlops.end() ? 0 : it->second;
}

ArrayRef<StringRef> clusterPresetNames() {
  static const StringRef names[] = {"dgx-a100", "dgx-h100", "h200", "host",
                                    "gpu"};
  return names;
}

namespace {

std::string calibratedPath(const char *variable, const char *file) {
  if (auto env = sys::Process::GetEnv(variable))
    return *env;
  SmallString<256> path;
  if (auto home = sys::Process::GetEnv("HOME"))
    path = *home;
  sys::path::append(path, ".config", "pcc", file);
  return std::string(path);
}

} // namespace

std::string hostClusterPath() {
  return calibratedPath("PCC_HOST_CLUSTER", "host.json");
}

std::string gpuClusterPath() {
  return calibratedPath("PCC_GPU_CLUSTER", "gpu.json");
}

std::string clusterToJSON(const ClusterSpec &c) {
  json::Object peaks;
  for (const auto &[dtype, flops] : c.peakFlops)
    peaks[dtype] = flops / kTera;
  auto link = [](const LinkSpec &l) {
    return json::Object{{"bandwidth_gb_s", l.bandwidth / kGB},
                        {"latency_us", l.latency / kMicro}};
  };
  json::Object root{
      {"schema", "pcc-cluster/1"},
      {"name", c.name},
      {"device", c.deviceName},
      {"nodes", c.nodes},
      {"devices_per_node", c.devicesPerNode},
      {"peak_tflops", std::move(peaks)},
      {"memory_gib", c.memoryBytes / kGiB},
      {"memory_bandwidth_gb_s", c.memoryBandwidth / kGB},
      {"intra_node", link(c.intraNode)},
      {"inter_node", link(c.interNode)},
      {"efficiency", json::Object{{"gemm", c.gemmEfficiency},
                                  {"memory", c.memoryEfficiency},
                                  {"network", c.networkEfficiency}}},
      {"kernel_overhead_us", c.kernelOverhead / kMicro}};
  if (!c.attentionFlops.empty()) {
    json::Object rates;
    for (const auto &[dtype, flops] : c.attentionFlops)
      rates[dtype] = flops / kTera;
    root["attention_tflops"] = std::move(rates);
  }
  if (c.sharedCores)
    root["shared_cores"] = true;
  if (c.nodeMemoryBandwidth > 0)
    root["node_memory_bandwidth_gb_s"] = c.nodeMemoryBandwidth / kGB;
  if (c.sharedCores)
    root["shared_core_efficiency"] = c.sharedCoreEfficiency;
  if (!c.gemmShape.empty()) {
    json::Array table;
    for (auto [dim, eff] : c.gemmShape)
      table.push_back(json::Array{dim, eff});
    root["gemm_efficiency_by_min_dim"] = std::move(table);
  }
  std::string out;
  raw_string_ostream os(out);
  os << formatv("{0:2}", json::Value(std::move(root))) << "\n";
  return out;
}

Expected<ClusterSpec> parseCluster(StringRef text, StringRef origin) {
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return parseError(origin, "not valid JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return parseError(origin, "expected a JSON object");

  ClusterSpec c;
  // Reads a positive number at `key` of `obj`, scaled to SI units.
  auto number = [&](const json::Object &obj, StringRef key, double scale,
                    double &out, StringRef path) -> Error {
    std::optional<double> v = obj.getNumber(key);
    if (!v)
      return parseError(origin, "missing number '" + path + key + "'");
    if (!(*v > 0))
      return parseError(origin, "'" + path + key + "' must be positive");
    out = *v * scale;
    return Error::success();
  };
  auto integer = [&](StringRef key, int64_t &out) -> Error {
    std::optional<int64_t> v = root->getInteger(key);
    if (!v || *v < 1)
      return parseError(origin, "'" + key + "' must be a positive integer");
    out = *v;
    return Error::success();
  };
  auto link = [&](StringRef key, LinkSpec &out) -> Error {
    const json::Object *l = root->getObject(key);
    if (!l)
      return parseError(origin, "missing object '" + key + "'");
    std::string path = (key + ".").str();
    if (Error e = number(*l, "bandwidth_gb_s", kGB, out.bandwidth, path))
      return e;
    return number(*l, "latency_us", kMicro, out.latency, path);
  };

  c.name = root->getString("name").value_or("").str();
  if (c.name.empty())
    return parseError(origin, "missing string 'name'");
  c.deviceName = root->getString("device").value_or("").str();
  if (Error e = integer("nodes", c.nodes))
    return std::move(e);
  if (Error e = integer("devices_per_node", c.devicesPerNode))
    return std::move(e);
  const json::Object *peaks = root->getObject("peak_tflops");
  if (!peaks || peaks->empty())
    return parseError(origin, "missing object 'peak_tflops'");
  for (const auto &kv : *peaks) {
    double v = 0;
    if (Error e = number(*peaks, kv.first, kTera, v, "peak_tflops."))
      return std::move(e);
    c.peakFlops[kv.first.str()] = v;
  }
  if (const json::Object *rates = root->getObject("attention_tflops"))
    for (const auto &kv : *rates) {
      double v = 0;
      if (Error e = number(*rates, kv.first, kTera, v, "attention_tflops."))
        return std::move(e);
      c.attentionFlops[kv.first.str()] = v;
    }
  if (Error e = number(*root, "memory_gib", kGiB, c.memoryBytes, ""))
    return std::move(e);
  if (Error e = number(*root, "memory_bandwidth_gb_s", kGB, c.memoryBandwidth,
                       ""))
    return std::move(e);
  if (Error e = link("intra_node", c.intraNode))
    return std::move(e);
  if (Error e = link("inter_node", c.interNode))
    return std::move(e);
  c.sharedCores = root->getBoolean("shared_cores").value_or(false);
  if (root->get("node_memory_bandwidth_gb_s"))
    if (Error e = number(*root, "node_memory_bandwidth_gb_s", kGB,
                         c.nodeMemoryBandwidth, ""))
      return std::move(e);
  if (std::optional<double> v = root->getNumber("shared_core_efficiency")) {
    if (!(*v > 0 && *v <= 1))
      return parseError(origin, "'shared_core_efficiency' must be in (0, 1]");
    c.sharedCoreEfficiency = *v;
  }
  if (const json::Value *t = root->get("gemm_efficiency_by_min_dim")) {
    const json::Array *rows = t->getAsArray();
    auto bad = [&] {
      return parseError(origin, "'gemm_efficiency_by_min_dim' must be a list "
                                "of [dimension > 0, efficiency in (0, 1]] "
                                "pairs");
    };
    if (!rows)
      return bad();
    for (const json::Value &row : *rows) {
      const json::Array *pair = row.getAsArray();
      if (!pair || pair->size() != 2)
        return bad();
      std::optional<double> dim = (*pair)[0].getAsNumber();
      std::optional<double> eff = (*pair)[1].getAsNumber();
      if (!dim || !eff || !(*dim > 0) || !(*eff > 0 && *eff <= 1))
        return bad();
      c.gemmShape.push_back({*dim, *eff});
    }
    llvm::sort(c.gemmShape);
  }
  if (const json::Object *eff = root->getObject("efficiency")) {
    for (auto [key, field] :
         {std::pair<StringRef, double *>{"gemm", &c.gemmEfficiency},
          {"memory", &c.memoryEfficiency},
          {"network", &c.networkEfficiency}}) {
      std::optional<double> v = eff->getNumber(key);
      if (!v)
        continue;
      if (!(*v > 0 && *v <= 1))
        return parseError(origin,
                          "'efficiency." + key + "' must be in (0, 1]");
      *field = *v;
    }
  }
  if (std::optional<double> v = root->getNumber("kernel_overhead_us")) {
    if (*v < 0)
      return parseError(origin, "'kernel_overhead_us' must not be negative");
    c.kernelOverhead = *v * kMicro;
  }
  return c;
}

Expected<ClusterSpec> loadCluster(StringRef nameOrPath) {
  if (nameOrPath == "dgx-a100")
    return dgxA100();
  if (nameOrPath == "dgx-h100")
    return dgxH100();
  if (nameOrPath == "h200")
    return h200();
  bool calibrated = nameOrPath == "host" || nameOrPath == "gpu";
  std::string path = nameOrPath == "host"  ? hostClusterPath()
                     : nameOrPath == "gpu" ? gpuClusterPath()
                                           : nameOrPath.str();
  if (calibrated && !sys::fs::exists(path))
    return createStringError(
        inconvertibleErrorCode(),
        "cluster '" + nameOrPath + "' is not calibrated yet (no " + path +
            "); run `pcc calibrate" +
            (nameOrPath == "gpu" ? " --target cuda" : "") + "` first");
  if (!nameOrPath.contains('/') && !nameOrPath.ends_with(".json") &&
      !calibrated)
    return createStringError(
        inconvertibleErrorCode(),
        "unknown cluster '" + nameOrPath +
            "' (presets: dgx-a100, dgx-h100, h200, host, gpu; or a JSON "
            "file)");
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return createStringError(inconvertibleErrorCode(),
                             "cannot read cluster spec '" + path +
                                 "': " + buffer.getError().message());
  return parseCluster((*buffer)->getBuffer(), path);
}

} // namespace pcc
