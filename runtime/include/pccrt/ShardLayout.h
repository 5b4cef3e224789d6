//===- ShardLayout.h - where a device's block lies in a tensor ---*- C++ -*-===//
//
// Header-only so that the compiler (which writes each weight shard) and the
// runtime (which splits inputs and assembles outputs) share one definition.
// A dimension of global size D split over mesh axes (a0, a1, ...) in G groups
// is viewed as [G, D/G]; each group is cut into n = size(a0) * size(a1) * ...
// blocks, and the device whose in-group index over (a0, a1, ...) is r (a0
// major) holds block r of every group.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_SHARDLAYOUT_H
#define PCCRT_SHARDLAYOUT_H

#include "pccrt/Model.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace pccrt {

/// Row-major coordinates of `index` in a grid of `rank` dims: a device's
/// place in the mesh, or a block's place among a tensor's blocks.
inline void meshCoords(int64_t index, int rank, const int64_t *shape,
                       int64_t *coords) {
  for (int a = rank - 1; a >= 0; --a) {
    coords[a] = index % shape[a];
    index /= shape[a];
  }
}

/// In-group index of the device at `coords` over `split`'s axes.
inline int64_t splitIndex(const DimSplit &split, const int64_t *meshShape,
                          const int64_t *coords) {
  int64_t r = 0;
  for (int i = 0; i < split.numAxes; ++i)
    r = r * meshShape[split.axes[i]] + coords[split.axes[i]];
  return r;
}

inline int64_t splitCount(const DimSplit &split, const int64_t *meshShape) {
  int64_t n = 1;
  for (int i = 0; i < split.numAxes; ++i)
    n *= meshShape[split.axes[i]];
  return n;
}

/// Copies the block of the device at `coords` between a global row-major
/// tensor and a dense local buffer: global -> local if `toLocal`, else local
/// -> global. `splits` may be null (the block is the whole tensor).
inline void copyBlock(bool toLocal, char *global, char *local, int rank,
                      const int64_t *shape, const DimSplit *splits,
                      const int64_t *meshShape, const int64_t *coords,
                      size_t elem) {
  std::vector<int64_t> localShape(rank), piece(rank), groupSize(rank),
      first(rank), globalStride(rank);
  int64_t total = 1;
  for (int d = rank - 1; d >= 0; --d) {
    globalStride[d] = total;
    total *= shape[d];
    int64_t n = splits ? splitCount(splits[d], meshShape) : 1;
    int64_t g = splits && splits[d].numAxes ? splits[d].groups : 1;
    localShape[d] = shape[d] / n;
    groupSize[d] = shape[d] / g;
    piece[d] = groupSize[d] / n;
    first[d] = splits ? splitIndex(splits[d], meshShape, coords) * piece[d] : 0;
  }
  if (rank == 0) {
    toLocal ? std::memcpy(local, global, elem) : std::memcpy(global, local, elem);
    return;
  }
  int64_t localCount = 1;
  for (int d = 0; d < rank; ++d)
    localCount *= localShape[d];
  if (localCount == 0)
    return;
  // Walk local indices; the last dim is copied in contiguous pieces.
  std::vector<int64_t> idx(rank, 0);
  int last = rank - 1;
  size_t run = piece[last] * elem;
  char *out = local;
  while (true) {
    int64_t base = 0;
    for (int d = 0; d < last; ++d) {
      int64_t l = idx[d];
      int64_t gIdx = (l / piece[d]) * groupSize[d] + first[d] + l % piece[d];
      base += gIdx * globalStride[d];
    }
    for (int64_t l = 0; l < localShape[last]; l += piece[last]) {
      int64_t gIdx = (l / piece[last]) * groupSize[last] + first[last];
      char *g = global + (base + gIdx) * elem;
      toLocal ? std::memcpy(out, g, run) : std::memcpy(g, out, run);
      out += run;
    }
    int d = last - 1;
    while (d >= 0 && ++idx[d] == localShape[d])
      idx[d--] = 0;
    if (d < 0)
      break;
  }
}

/// Copies the leading corner both shapes hold (each dim's smaller size)
/// from row-major `src` to row-major `dst`: an unpadded tensor into its
/// zero-padded buffer, or back (a vocabulary padded for tensor
/// parallelism). What `dst` holds outside the corner is left alone.
inline void copyCorner(const char *src, const int64_t *srcShape, char *dst,
                       const int64_t *dstShape, int rank, size_t elem) {
  if (rank == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  std::vector<int64_t> corner(rank), srcStride(rank), dstStride(rank);
  int64_t s = 1, d = 1, count = 1;
  for (int i = rank - 1; i >= 0; --i) {
    corner[i] = srcShape[i] < dstShape[i] ? srcShape[i] : dstShape[i];
    srcStride[i] = s;
    dstStride[i] = d;
    s *= srcShape[i];
    d *= dstShape[i];
    count *= corner[i];
  }
  if (count == 0)
    return;
  size_t row = size_t(corner[rank - 1]) * elem;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t r = 0, rows = count / corner[rank - 1]; r < rows; ++r) {
    int64_t from = 0, to = 0;
    for (int i = 0; i < rank - 1; ++i) {
      from += idx[i] * srcStride[i];
      to += idx[i] * dstStride[i];
    }
    std::memcpy(dst + to * elem, src + from * elem, row);
    for (int i = rank - 2; i >= 0 && ++idx[i] == corner[i]; --i)
      idx[i] = 0;
  }
}

} // namespace pccrt

#endif // PCCRT_SHARDLAYOUT_H
