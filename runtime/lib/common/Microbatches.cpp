//===- Microbatches.cpp - accumulation across a step's microbatch runs ----===//
//
// A pipeline runs the program once per microbatch; a training step's sums
// over the whole batch (gradients, the loss) are collectives over the
// microbatch axis, which pcc-accumulate-microbatches leaves alone on that
// axis. Here they accumulate in device memory kept between runs (host
// memory on CPU ranks), and reach the program's buffer in the last run, the
// one that runs the update. A pipeline's stash lives there too.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Device.h"
#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"
#include "pccrt/Status.h"

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace pccrt {

namespace {

/// Device memory kept across runs (an accumulator, a chunk's stash).
struct KeptBuffer {
  char *data = nullptr;
  int64_t bytes = 0;

  /// At least `n` bytes, keeping what it held.
  char *reserve(int64_t n, const char *what) {
    if (n <= bytes)
      return data;
    char *fresh = static_cast<char *>(allocateDeviceBytes(n));
    if (!fresh) {
      // Other ranks may wait in a collective: end the job.
      std::string rank = Mesh::worldSize() > 1
                             ? "rank " + std::to_string(Mesh::worldRank()) + ": "
                             : "";
      std::fprintf(stderr,
                   "error: %sout of device memory: cannot allocate %lld bytes "
                   "for %s\n",
                   rank.c_str(), static_cast<long long>(n), what);
      std::fflush(stderr);
      Mesh::abortWorld(1);
    }
    if (data) {
      copyBytes(fresh, data, bytes);
      synchronizeDevice();
      freeDeviceBytes(data);
    }
    data = fresh;
    bytes = n;
    return data;
  }
};

/// Each collective's running sum or gathered blocks, by id.
std::map<int, KeptBuffer> &accumulators() {
  static std::map<int, KeptBuffer> all;
  return all;
}

} // namespace

bool prologueRun(const Mesh &mesh) {
  return mesh.phase() == Mesh::Phase::Prologue;
}
bool runsForward(const Mesh &mesh) {
  return mesh.phase() == Mesh::Phase::Whole ||
         mesh.phase() == Mesh::Phase::Forward;
}
bool runsBackward(const Mesh &mesh) {
  return mesh.phase() == Mesh::Phase::Whole ||
         mesh.phase() == Mesh::Phase::Backward;
}
bool runsWeightGradients(const Mesh &mesh) {
  return mesh.phase() == Mesh::Phase::Whole ||
         mesh.phase() == Mesh::Phase::BackwardWeight;
}
bool weightsApart(const Mesh &mesh) { return mesh.weightsApart(); }
bool runsUpdate(const Mesh &mesh) {
  return mesh.phase() == Mesh::Phase::Update ||
         (mesh.phase() == Mesh::Phase::Whole && lastMicrobatch(mesh));
}
bool splitPhases(const Mesh &mesh) {
  return mesh.phase() == Mesh::Phase::Forward ||
         mesh.phase() == Mesh::Phase::Backward;
}

// A chunk's forwards and backwards take microbatches in order, so those in
// flight are consecutive: microbatch % slots never collide.
namespace {

char *slotIn(std::vector<KeptBuffer> &stashes, const Mesh &mesh,
             int64_t slots, int64_t slotBytes) {
  if (int64_t(stashes.size()) <= mesh.chunk())
    stashes.resize(mesh.chunk() + 1);
  char *stash = stashes[mesh.chunk()].reserve(slots * slotBytes,
                                              "the pipeline's stash");
  return stash + (mesh.microbatch() % slots) * slotBytes;
}

} // namespace

char *stashSlot(Mesh &mesh, int64_t slotBytes) {
  static std::vector<KeptBuffer> stashes;
  return slotIn(stashes, mesh, mesh.stashSlots(), slotBytes);
}

char *weightStashSlot(Mesh &mesh, int64_t slotBytes) {
  static std::vector<KeptBuffer> stashes;
  return slotIn(stashes, mesh, mesh.weightStashSlots(), slotBytes);
}

bool lastMicrobatch(const Mesh &mesh) {
  return mesh.microbatch() + 1 == mesh.microbatches();
}

void microbatchSum(Mesh &mesh, int id, DType type, const void *in, void *out,
                   int64_t count) {
  int64_t bytes = count * dtypeSize(type);
  char *acc = accumulators()[id].reserve(bytes, "a sum over microbatches");
  if (mesh.microbatch() == 0) {
    copyBytes(acc, in, bytes);
  } else if (!addInto(type, acc, in, count)) {
    kernelError(std::string("a sum over microbatches of ") + dtypeName(type) +
                " (floats only)");
    return;
  }
  if (lastMicrobatch(mesh))
    copyBytes(out, acc, bytes);
}

void microbatchGather(Mesh &mesh, int id, const void *in, void *out,
                      int64_t outer, int64_t blockBytes) {
  int64_t m = mesh.microbatches(), k = mesh.microbatch();
  char *acc = accumulators()[id].reserve(outer * m * blockBytes,
                                         "a gather over microbatches");
  // Row o of this microbatch's block goes to row o, block k of the whole.
  copyRows(acc + k * blockBytes, m * blockBytes, in, blockBytes, blockBytes,
           outer);
  if (lastMicrobatch(mesh))
    copyBytes(out, acc, outer * m * blockBytes);
}

} // namespace pccrt
