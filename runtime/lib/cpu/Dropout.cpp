//===- Dropout.cpp - pcc.dropout on host memory ---------------------------===//
//
// Each device computes its block of the result: the mask of an element is
// drawn from its index in the whole tensor (pccrt/Dropout.h), found from the
// block's place (its split over the mesh, this device's coordinates).
//
//===----------------------------------------------------------------------===//

#include "pccrt/Dropout.h"
#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"
#include "pccrt/Status.h"

namespace pccrt {

void dropout(const Mesh &mesh, const float *x, float *y, int rank,
             const int64_t *localShape, const DimSplit *splits, uint64_t seed,
             uint64_t stream, const float *step, double ratio) {
  DropoutPlace p;
  if (!dropoutPlace(rank, localShape, splits, mesh.shape(), mesh.coords(), p)) {
    kernelError("dropout of a tensor of more than 8 dimensions");
    return;
  }
  uint64_t key = dropoutKey(seed, stream, step ? uint64_t(int64_t(*step)) : 0);
  uint32_t threshold = dropoutThreshold(ratio);
  float scale = float(1.0 / (1.0 - ratio));
  if (rank == 0) {
    y[0] = dropoutKeeps(key, 0, threshold) ? x[0] * scale : 0.0f;
    return;
  }
  int last = rank - 1;
  int64_t row = localShape[last], piece = p.piece[last];
  int64_t idx[DropoutPlace::kMaxRank] = {};
  for (int64_t base = 0; base < p.count; base += row) {
    int64_t at = 0;
    for (int d = 0; d < last; ++d)
      at += p.place(d, idx[d]) * p.stride[d];
    // The row in runs of `piece` contiguous global indices: no division
    // per element.
    for (int64_t l0 = 0; l0 < row; l0 += piece) {
      uint64_t g0 = uint64_t(at + p.place(last, l0));
      for (int64_t k = 0; k < piece; ++k) {
        int64_t l = base + l0 + k;
        y[l] = dropoutKeeps(key, g0 + k, threshold) ? x[l] * scale : 0.0f;
      }
    }
    for (int d = last - 1; d >= 0 && ++idx[d] == localShape[d]; --d)
      idx[d] = 0;
  }
}

} // namespace pccrt
