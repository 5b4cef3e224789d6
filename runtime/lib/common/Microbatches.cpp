//===- Microbatches.cpp - accumulation across a step's microbatch runs
//-----===//
//
// A pipeline runs the program once per microbatch; a training step's sums
// over the whole batch (gradients, the loss) are collectives over the
// microbatch axis, which pcc-accumulate-microbatches leaves alone on that
// axis. Here they accumulate in host memory kept between runs (training runs
// on CPU ranks), and reach the program's buffer in the last run, the one
// that runs the update.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Device.h"
#include "pccrt/Float16.h"
#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"
#include "pccrt/Status.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace pccrt {

namespace {

/// Each collective's running sum or gathered blocks, by id.
std::map<int, std::vector<char>> &accumulators() {
  static std::map<int, std::vector<char>> all;
  return all;
}

template <typename T> void addInto(void *acc, const void *in, int64_t count) {
  T *a = static_cast<T *>(acc);
  const T *x = static_cast<const T *>(in);
  for (int64_t i = 0; i < count; ++i)
    a[i] += x[i];
}

/// 16-bit values add through float and round once per microbatch, as the
/// collectives sum them over ranks.
template <typename T>
void addIntoSixteenBit(void *acc, const void *in, int64_t count) {
  T *a = static_cast<T *>(acc);
  const T *x = static_cast<const T *>(in);
  for (int64_t i = 0; i < count; ++i)
    a[i] = T(float(a[i]) + float(x[i]));
}

bool onHost() {
  if (deviceIsHost())
    return true;
  kernelError("accumulating over microbatches needs CPU ranks");
  return false;
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
char *stashSlot(Mesh &mesh, int64_t slotBytes) {
  static std::vector<std::vector<char>> stashes;
  if (int64_t(stashes.size()) <= mesh.chunk())
    stashes.resize(mesh.chunk() + 1);
  std::vector<char> &stash = stashes[mesh.chunk()];
  int64_t slots = mesh.stashSlots();
  if (int64_t(stash.size()) < slots * slotBytes)
    stash.resize(slots * slotBytes);
  return stash.data() + (mesh.microbatch() % slots) * slotBytes;
}

bool lastMicrobatch(const Mesh &mesh) {
  return mesh.microbatch() + 1 == mesh.microbatches();
}

void microbatchSum(Mesh &mesh, int id, DType type, const void *in, void *out,
                   int64_t count) {
  if (!onHost())
    return;
  int64_t bytes = count * dtypeSize(type);
  std::vector<char> &acc = accumulators()[id];
  if (mesh.microbatch() == 0) {
    acc.assign(static_cast<const char *>(in),
               static_cast<const char *>(in) + bytes);
  } else if (type == DType::F32) {
    addInto<float>(acc.data(), in, count);
  } else if (type == DType::F64) {
    addInto<double>(acc.data(), in, count);
  } else if (type == DType::BF16) {
    addIntoSixteenBit<BFloat16>(acc.data(), in, count);
  } else if (type == DType::F16) {
    addIntoSixteenBit<Half>(acc.data(), in, count);
  } else {
    kernelError(std::string("a sum over microbatches of ") + dtypeName(type) +
                " (floats only)");
    return;
  }
  if (lastMicrobatch(mesh))
    std::memcpy(out, acc.data(), bytes);
}

void microbatchGather(Mesh &mesh, int id, const void *in, void *out,
                      int64_t outer, int64_t blockBytes) {
  if (!onHost())
    return;
  int64_t m = mesh.microbatches(), k = mesh.microbatch();
  std::vector<char> &acc = accumulators()[id];
  acc.resize(outer * m * blockBytes);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(acc.data() + (o * m + k) * blockBytes,
                static_cast<const char *>(in) + o * blockBytes, blockBytes);
  if (lastMicrobatch(mesh))
    std::memcpy(out, acc.data(), acc.size());
}

} // namespace pccrt
