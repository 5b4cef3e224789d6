//===- Dropout.h - pcc.dropout's counter-based generator ---------*- C++
//-*-===//
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

#include <cstdint>

namespace pccrt {

inline constexpr uint64_t kDropoutGolden = 0x9E3779B97F4A7C15ull;

/// SplitMix64's finalizer (Steele, Lea and Flood 2014).
inline constexpr uint64_t dropoutMix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The key of one dropout (`stream`) at one training step.
inline constexpr uint64_t dropoutKey(uint64_t seed, uint64_t stream,
                                     uint64_t step) {
  return dropoutMix(dropoutMix(dropoutMix(seed + kDropoutGolden) ^ stream) +
                    step * kDropoutGolden);
}

/// ratio * 2^24, rounded: the 24-bit draws below it are dropped.
inline uint32_t dropoutThreshold(double ratio) {
  return uint32_t(ratio * 16777216.0 + 0.5);
}

inline constexpr bool dropoutKeeps(uint64_t key, uint64_t index,
                                   uint32_t threshold) {
  return (dropoutMix(key + (index + 1) * kDropoutGolden) >> 40) >= threshold;
}

} // namespace pccrt

#endif // PCCRT_DROPOUT_H
