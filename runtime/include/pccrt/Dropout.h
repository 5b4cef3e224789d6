//===- Dropout.h - pcc.dropout's counter-based generator ---------*- C++ -*-===//
//
// Header-only so that the CPU and CUDA kernels (and anything checking them)
// draw the same masks. An element is kept unless the top 24 bits of a
// SplitMix64 hash of (seed, stream, step, its row-major index in the whole
// tensor) fall below ratio * 2^24: a function of where the element is in the
// model, not of the device computing it or of what ran before.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_DROPOUT_H
#define PCCRT_DROPOUT_H

#include "pccrt/Float16.h"
#include "pccrt/ShardLayout.h"

#include <cstdint>

namespace pccrt {

inline constexpr uint64_t kDropoutGolden = 0x9E3779B97F4A7C15ull;

/// SplitMix64's finalizer (Steele, Lea and Flood 2014).
PCCRT_HD inline constexpr uint64_t dropoutMix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The key of one dropout (`stream`) at one training step.
PCCRT_HD inline constexpr uint64_t dropoutKey(uint64_t seed, uint64_t stream,
                                              uint64_t step) {
  return dropoutMix(dropoutMix(dropoutMix(seed + kDropoutGolden) ^ stream) +
                    step * kDropoutGolden);
}

/// ratio * 2^24, rounded: the 24-bit draws below it are dropped.
inline uint32_t dropoutThreshold(double ratio) {
  return uint32_t(ratio * 16777216.0 + 0.5);
}

PCCRT_HD inline constexpr bool dropoutKeeps(uint64_t key, uint64_t index,
                                            uint32_t threshold) {
  return (dropoutMix(key + (index + 1) * kDropoutGolden) >> 40) >= threshold;
}

/// Where a device's block of a tensor lies in the whole one, by value so
/// that a kernel can take it as an argument: along dim d, local index l is
/// global index (l / piece) * group + first + l % piece (ShardLayout.h's
/// block layout), and the global row-major index adds them times `stride`.
struct DropoutPlace {
  static constexpr int kMaxRank = 8;
  int rank = 0;
  int64_t count = 1;
  int64_t localShape[kMaxRank], piece[kMaxRank], group[kMaxRank],
      first[kMaxRank], stride[kMaxRank];

  PCCRT_HD int64_t place(int d, int64_t l) const {
    return (l / piece[d]) * group[d] + first[d] + l % piece[d];
  }
  /// The whole tensor's row-major index of local element `i`.
  PCCRT_HD int64_t globalIndex(int64_t i) const {
    int64_t at = 0;
    for (int d = rank - 1; d >= 0; --d) {
      at += place(d, i % localShape[d]) * stride[d];
      i /= localShape[d];
    }
    return at;
  }
};

/// The place of the block of the device at `coords` of a tensor whose
/// block is `localShape`, split as `splits` (null: whole); false when the
/// tensor has more than DropoutPlace::kMaxRank dims.
inline bool dropoutPlace(int rank, const int64_t *localShape,
                         const DimSplit *splits, const int64_t *meshShape,
                         const int64_t *coords, DropoutPlace &p) {
  if (rank > DropoutPlace::kMaxRank)
    return false;
  p.rank = rank;
  p.count = 1;
  int64_t globalCount = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const DimSplit *s = splits ? &splits[d] : nullptr;
    int64_t n = s ? splitCount(*s, meshShape) : 1;
    int64_t groups = s && s->numAxes ? s->groups : 1;
    int64_t global = localShape[d] * n;
    p.localShape[d] = localShape[d];
    p.group[d] = global / groups;
    p.piece[d] = p.group[d] / n;
    p.first[d] = s ? splitIndex(*s, meshShape, coords) * p.piece[d] : 0;
    p.stride[d] = globalCount;
    globalCount *= global;
    p.count *= localShape[d];
  }
  return true;
}

} // namespace pccrt

#endif // PCCRT_DROPOUT_H
