//===- CostModel.h - time of kernels and collectives ------------*- C++ -*-===//
//
// Kernels follow a roofline with a fixed launch cost: a kernel takes the
// longer of its FLOPs at the device's GEMM rate and its bytes at the memory
// rate, so small or thin GEMMs come out memory-bound and slow per FLOP while
// large ones approach gemm_efficiency x peak. Collectives follow the alpha-
// beta model with the ring factors nccl-tests uses to turn algorithm
// bandwidth into bus bandwidth: a ring of n devices moves 2(n-1)/n of the
// buffer per device for all-reduce and (n-1)/n for all-gather, reduce-scatter
// and all-to-all, in 2(n-1) or (n-1) latency steps.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_PLAN_COSTMODEL_H
#define PCC_PLAN_COSTMODEL_H

#include "pcc/Plan/Cluster.h"

namespace pcc {

enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  SendRecv,
  /// One step of ring attention: every device of the group sends its block
  /// to the next and receives the previous one's at once.
  RingShift
};

llvm::StringRef collectiveName(CollectiveKind kind);

class CostModel {
public:
  /// `dtype` names the compute precision ("fp32", "bf16", ...); `devices`
  /// is the plan's device count: on a one-node spec (a calibrated host,
  /// whose devices are cores) more ranks than cores share them.
  CostModel(const ClusterSpec &cluster, std::string dtype, int64_t devices);

  const ClusterSpec &cluster() const { return spec; }
  llvm::StringRef dtype() const { return dtypeName; }

  /// Time of one kernel doing `flops` arithmetic and moving `bytes`; a
  /// `fused` op runs inside its consumer's loop (no launch of its own). A
  /// GEMM whose smallest dimension is `gemmMinDim` runs at the spec's
  /// efficiency for that shape. `launches` kernels pay the launch overhead.
  /// Work not done by BLAS GEMMs (`viaBlas` false: pcc's own attention
  /// kernels) runs at the spec's measured attention rate, else at the
  /// GEMM rate of its shape (fp32's under tf32, which only GEMMs use).
  double kernelTime(double flops, double bytes, bool fused = false,
                    double gemmMinDim = 0, int launches = 1,
                    bool viaBlas = true) const;
  /// Fraction of the GEMM rate a GEMM with smallest dimension `dim` gets.
  double gemmShapeEfficiency(double dim) const;
  /// Time of one collective over `n` devices on a buffer of `bytes` (the
  /// whole buffer: the all-reduced tensor, the gathered result, the
  /// reduce-scattered input), on the inter-node link if `crossNode`.
  double collectiveTime(CollectiveKind kind, double bytes, int64_t n,
                        bool crossNode) const;
  /// The part of collectiveTime that does not grow with the bytes: the
  /// hops' latency.
  double collectiveLatency(CollectiveKind kind, int64_t n,
                           bool crossNode) const;

private:
  ClusterSpec spec;
  std::string dtypeName;
  /// Effective rates after efficiencies (and core sharing on a host).
  double flopRate, kernelFlopRate, byteRate;
  bool attentionMeasured = false;
};

} // namespace pcc

#endif // PCC_PLAN_COSTMODEL_H
