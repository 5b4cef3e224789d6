//===- WeightsFile.h - layout of a compiled model's weights file -*- C++ -*-===//
//
// Header-only so that the compiler (which writes the file) and the runtime
// (which maps it) share one definition. The file is a 64-byte header followed
// by the weights at the offsets the generated code uses. The header carries a
// fingerprint of the build (generated code, plan and layouts, weight bytes);
// the executable refuses a file whose fingerprint is not its own, so weights
// from another build of the same model, even of the same size, never run.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_WEIGHTSFILE_H
#define PCCRT_WEIGHTSFILE_H

#include <cstdint>

namespace pccrt {

struct WeightsHeader {
  /// kWeightsMagic.
  char magic[8];
  /// Fingerprint of the build (ModelInfo::fingerprint).
  uint64_t fingerprint;
  /// Bytes after the header (ModelInfo::weightsBytes).
  uint64_t dataBytes;
  uint64_t reserved[5];
};
static_assert(sizeof(WeightsHeader) == 64, "the header keeps data 64-aligned");

inline constexpr char kWeightsMagic[8] = {'P', 'C', 'C', 'W',
                                          'T', 'S', '0', '1'};

} // namespace pccrt

#endif // PCCRT_WEIGHTSFILE_H
