//===- Calibrate.h - measure this machine as a cluster spec -----*- C++ -*-===//

#ifndef PCC_CALIBRATE_CALIBRATE_H
#define PCC_CALIBRATE_CALIBRATE_H

#include "pcc/Plan/Cluster.h"

#include "llvm/Support/raw_ostream.h"

namespace pcc {

struct CalibrateOptions {
  /// MPI ranks for the collective measurement.
  int ranks = 2;
  /// The pcc-mpi-probe executable (next to pcc by default).
  std::string probe;
};

/// First thing `pcc calibrate` does: runs pcc again (argv) with the BLAS
/// kernels the executables will pick (pccrt/BlasCore.h), so it measures
/// their GEMMs. Returns when OpenBLAS's own choice stands.
void useExecutablesBlas(char **argv);

/// The `host` spec: one node whose devices are the cores, each running one
/// rank with one BLAS thread (how `mpirun -np N model --threads 1` runs):
/// single-thread SGEMM rate, single-thread copy bandwidth, and MPI
/// all-reduce latency and bandwidth between local ranks. Progress goes to
/// `log`.
llvm::Expected<ClusterSpec> calibrateHost(const CalibrateOptions &options,
                                          llvm::raw_ostream &log);

/// One GPU as a one-device spec, from what pcc-gpu-probe prints (one JSON
/// line, schema pcc-gpu-probe/1): measured GEMM rates by dtype and their
/// thin-GEMM fractions, copy bandwidth, time per kernel launch, and the
/// host copy path as its only link (CalibrateGpu.cpp).
llvm::Expected<ClusterSpec> gpuSpecFromProbe(llvm::StringRef probeOutput);
/// Runs the probe executable `probe` on GPU 0 and reads its line.
llvm::Expected<ClusterSpec> calibrateGpu(const std::string &probe,
                                         llvm::raw_ostream &log);

} // namespace pcc

#endif // PCC_CALIBRATE_CALIBRATE_H
