//===- CostModel.cpp - roofline kernels, alpha-beta collectives -----------===//

#include "pcc/Plan/CostModel.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace pcc {

llvm::StringRef collectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::SendRecv:
    return "send_recv";
  case CollectiveKind::RingShift:
    return "ring_shift";
  }
  return "?";
}

CostModel::CostModel(const ClusterSpec &cluster, std::string dtype,
                     int64_t devices)
    : spec(cluster), dtypeName(std::move(dtype)) {
  flopRate = spec.peak(dtypeName) * spec.gemmEfficiency;
  // TF32 is a mode of the BLAS GEMMs; other kernels compute in fp32. A
  // measured attention rate is used as is.
  std::string kernelDtype = dtypeName == "tf32" ? "fp32" : dtypeName;
  auto measured = spec.attentionFlops.find(kernelDtype);
  attentionMeasured = measured != spec.attentionFlops.end();
  kernelFlopRate = attentionMeasured
                       ? measured->second
                       : spec.peak(kernelDtype) * spec.gemmEfficiency;
  byteRate = spec.memoryBandwidth * spec.memoryEfficiency;
  // A calibrated host's "devices" are cores: ranks beyond the cores share
  // them.
  if (spec.sharedCores && devices > spec.totalDevices()) {
    double share = double(spec.totalDevices()) / double(devices) *
                   spec.sharedCoreEfficiency;
    flopRate *= share;
    kernelFlopRate *= share;
    byteRate *= share;
  }
  // Cores streaming at once split the node's memory bandwidth.
  if (spec.sharedCores && spec.nodeMemoryBandwidth > 0)
    byteRate = std::min(byteRate, spec.nodeMemoryBandwidth *
                                      spec.memoryEfficiency /
                                      double(std::max<int64_t>(1, devices)));
}

double CostModel::gemmShapeEfficiency(double dim) const {
  const auto &t = spec.gemmShape;
  if (t.empty() || dim <= 0)
    return 1;
  if (dim <= t.front().first)
    return t.front().second;
  if (dim >= t.back().first)
    return t.back().second;
  auto hi = std::upper_bound(t.begin(), t.end(), std::make_pair(dim, 2.0));
  auto lo = std::prev(hi);
  double f = std::log(dim / lo->first) / std::log(hi->first / lo->first);
  return lo->second + f * (hi->second - lo->second);
}

double CostModel::kernelTime(double flops, double bytes, bool fused,
                             double gemmMinDim, int launches,
                             bool viaBlas) const {
  double rate = viaBlas ? flopRate * gemmShapeEfficiency(gemmMinDim)
                 : attentionMeasured
                     ? kernelFlopRate
                     : kernelFlopRate * gemmShapeEfficiency(gemmMinDim);
  return std::max(flops / rate, bytes / byteRate) +
         (fused ? 0 : launches * spec.kernelOverhead);
}

double CostModel::collectiveTime(CollectiveKind kind, double bytes, int64_t n,
                                 bool crossNode) const {
  if (n <= 1 || bytes <= 0)
    return 0;
  const LinkSpec &link = crossNode ? spec.interNode : spec.intraNode;
  double bw = link.bandwidth * spec.networkEfficiency;
  double ring = double(n - 1) / double(n);
  double latency = collectiveLatency(kind, n, crossNode);
  switch (kind) {
  case CollectiveKind::AllReduce:
    return latency + 2 * ring * bytes / bw;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return latency + ring * bytes / bw;
  case CollectiveKind::Broadcast:
  case CollectiveKind::SendRecv:
  case CollectiveKind::RingShift:
    return latency + bytes / bw;
  }
  return 0;
}

double CostModel::collectiveLatency(CollectiveKind kind, int64_t n,
                                    bool crossNode) const {
  if (n <= 1)
    return 0;
  double alpha = (crossNode ? spec.interNode : spec.intraNode).latency;
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * (n - 1) * alpha;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
  case CollectiveKind::Broadcast:
    return (n - 1) * alpha;
  case CollectiveKind::SendRecv:
  case CollectiveKind::RingShift:
    return alpha;
  }
  return 0;
}

} // namespace pcc
