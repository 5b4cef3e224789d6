//===- Device.h - the memory a rank computes in ------------------*- C++ -*-===//
//
// What the target's runtime library (cpu or cuda) provides about where a
// model's tensors live: host memory on CPU ranks, the rank's GPU on CUDA
// ranks. The common runtime (collectives' block layout, main()) moves and
// allocates bytes only through these, so it serves both. On the CPU they
// are memcpy and aligned_alloc; on a GPU, copies on the compute stream and
// cudaMalloc.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_DEVICE_H
#define PCCRT_DEVICE_H

#include "pccrt/Model.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace pccrt {

/// How a GPU rank's collectives travel: NCCL between GPUs, or staged through
/// host memory over MPI (ranks that share a GPU, or --comm mpi).
enum class CommKind { Auto, Nccl, Mpi };

/// First thing a process does, before MPI starts: a CPU rank whose BLAS
/// would run kernels older than its CPU runs itself again with better
/// ones (OpenBLAS reads OPENBLAS_CORETYPE only when it loads). Returns
/// only if it does not.
void prepareProcess(char **argv);
/// Picks and starts this rank's device (a GPU by local rank); "" or why it
/// cannot ("no CUDA GPU is visible", ...). Called once, on every rank.
std::string startDevice(CommKind comm);
/// The device's name for reports ("cpu", "NVIDIA H100 80GB HBM3").
std::string deviceName();
/// Whether device memory is host memory (CPU ranks): inputs, outputs and
/// weights are then used where they lie, without copies.
bool deviceIsHost();

/// Device memory, 256-byte aligned; null when exhausted.
void *allocateDeviceBytes(size_t bytes);
void freeDeviceBytes(void *p);

/// Copies within device memory (in stream order on a GPU).
void copyBytes(void *dst, const void *src, int64_t bytes);
/// `rows` rows of `rowBytes` bytes, read `srcPitch` and written `dstPitch`
/// bytes apart.
void copyRows(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
              int64_t rowBytes, int64_t rows);
/// Between host and device memory; these wait for the device.
void copyToDevice(void *dst, const void *src, int64_t bytes);
void copyToHost(void *dst, const void *src, int64_t bytes);
/// Waits until the device has done everything asked of it.
void synchronizeDevice();

/// acc += in over `count` elements of `type` in device memory, in stream
/// order (16-bit floats added through float and rounded once, as the
/// collectives sum them); false for a type that is not a float.
bool addInto(DType type, void *acc, const void *in, int64_t count);

/// Copies the device's copy of every weight block it has uploaded back into
/// the weights mapped at `weights`: a training run's parameters and states,
/// before --save reads them. Nothing to do on CPU ranks, which train the
/// mapping itself. (--resume writes the mapping before the first run, so
/// the first upload takes the resumed values.)
void fetchWeights(char *weights);

/// Runs one step of the model: `step(context)` issues its device work. On
/// GPU ranks whose collectives stay on the device (one rank, or NCCL), a
/// `recordable` step (the same pointers every time, no host-side
/// communication) is recorded once as a CUDA graph, after an eager first
/// run has uploaded the weights, and replayed from then on: one launch
/// instead of one per kernel. CPU ranks call it.
void runStep(void (*step)(void *), void *context, bool recordable);

} // namespace pccrt

#endif // PCCRT_DEVICE_H
