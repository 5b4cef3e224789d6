//===- Cluster.h - what the devices and links of a cluster can do -*- C++ -*-===//
//
// A cluster spec is the planner's only view of hardware: per-device peak
// FLOP/s by dtype, memory and its bandwidth, and the two link levels (inside a
// node, between nodes) as bandwidth per device and latency. Specs are JSON
// (docs/planner.md has the schema); dgx-a100, dgx-h100 and h200 are built in,
// `host` is written by `pcc calibrate`, `gpu` by `pcc calibrate --target cuda`.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_PLAN_CLUSTER_H
#define PCC_PLAN_CLUSTER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace pcc {

struct LinkSpec {
  /// Bytes per second each device can send (one direction).
  double bandwidth = 0;
  /// Seconds per message hop.
  double latency = 0;
};

struct ClusterSpec {
  std::string name;
  std::string deviceName;
  int64_t nodes = 1;
  int64_t devicesPerNode = 1;
  /// Dense peak FLOP/s per device by dtype ("fp32", "tf32", "bf16", "fp16").
  std::map<std::string, double> peakFlops;
  /// Device memory in bytes and its bandwidth in bytes per second.
  double memoryBytes = 0;
  double memoryBandwidth = 0;
  LinkSpec intraNode, interNode;
  /// Fractions of peak that large kernels and collectives reach (cuBLAS on
  /// big GEMMs, streaming kernels, nccl-tests bus bandwidth).
  double gemmEfficiency = 0.8;
  double memoryEfficiency = 0.8;
  double networkEfficiency = 0.8;
  /// Fixed cost of launching one kernel, in seconds.
  double kernelOverhead = 0;
  /// The devices are CPU cores (a calibrated host): more ranks than cores
  /// may run, sharing them, and they share the node's memory bandwidth
  /// (`nodeMemoryBandwidth`, bytes per second for all cores together; 0:
  /// each core has `memoryBandwidth` to itself).
  bool sharedCores = false;
  double nodeMemoryBandwidth = 0;
  /// Fraction of its throughput a shared core keeps when more ranks than
  /// cores run (time-slicing refills caches and switches contexts).
  double sharedCoreEfficiency = 1;
  /// Fraction of the GEMM peak reached by GEMMs whose smallest dimension is
  /// `first` (sorted; interpolated on a log scale, clamped at the ends);
  /// empty: every GEMM reaches `gemmEfficiency` of peak.
  std::vector<std::pair<double, double>> gemmShape;
  /// FLOP/s pcc's own fused attention kernels reach per dtype (the
  /// score pairs they compute), as `pcc calibrate --target cuda` measures
  /// them; empty: attention runs at the GEMM rate of its shape.
  std::map<std::string, double> attentionFlops;

  int64_t totalDevices() const { return nodes * devicesPerNode; }
  /// Peak for `dtype`, falling back to fp32 when the device lists none.
  double peak(llvm::StringRef dtype) const;
};

/// Names of the built-in presets.
llvm::ArrayRef<llvm::StringRef> clusterPresetNames();

/// Where `pcc calibrate` writes the `host` spec and `--cluster host` reads
/// it: $PCC_HOST_CLUSTER, else $HOME/.config/pcc/host.json.
std::string hostClusterPath();
/// Where `pcc calibrate --target cuda` writes the `gpu` spec and `--cluster
/// gpu` reads it: $PCC_GPU_CLUSTER, else $HOME/.config/pcc/gpu.json.
std::string gpuClusterPath();

/// A preset by name, `host`, or a JSON file path.
llvm::Expected<ClusterSpec> loadCluster(llvm::StringRef nameOrPath);
llvm::Expected<ClusterSpec> parseCluster(llvm::StringRef json,
                                         llvm::StringRef origin);
std::string clusterToJSON(const ClusterSpec &spec);

} // namespace pcc

#endif // PCC_PLAN_CLUSTER_H
