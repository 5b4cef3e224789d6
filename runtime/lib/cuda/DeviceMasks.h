//===- DeviceMasks.h - attention masks as kernels read them ------*- C++ -*-===//
//
// Private to the CUDA runtime's attention kernels: AttentionMasks with its
// per-batch offset tables (static arrays of the generated code) copied to
// the device, and the score rule the kernels share.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_LIB_CUDA_DEVICEMASKS_H
#define PCCRT_LIB_CUDA_DEVICEMASKS_H

#include "CudaContext.h"

#include "pccrt/Kernels.h"

namespace pccrt::cuda {

struct DeviceMasks {
  const float *add;
  const int64_t *addBatch;
  int64_t addRow, addCol;
  const bool *hide;
  const int64_t *hideBatch;
  int64_t hideRow, hideCol;
  bool band;
  int64_t hideFrom;
  float fill;

  /// Whether some score may be hidden (by a tensor or a band).
  __device__ bool hides() const { return hide || band; }
  /// Whether column `col` is hidden from row `i`, whose hide row (from
  /// hiddenIn) is `rowHide`.
  __device__ bool hidden(const bool *rowHide, int64_t i, int64_t col) const {
    return rowHide ? rowHide[col * hideCol] : band && col - i >= hideFrom;
  }

  /// Query row `i` of batch `b` in each mask (null where there is none).
  __device__ const bool *hiddenIn(int64_t b, int64_t i) const {
    return hide ? hide + hideBatch[b] + i * hideRow : nullptr;
  }
  __device__ const float *addedIn(int64_t b, int64_t i) const {
    return add ? add + addBatch[b] + i * addRow : nullptr;
  }
};

inline DeviceMasks toDevice(const AttentionMasks &masks, int64_t batch) {
  DeviceMasks m{masks.add,  nullptr,        masks.addRow,  masks.addCol,
                masks.hide, nullptr,        masks.hideRow, masks.hideCol,
                masks.band, masks.hideFrom, masks.fill};
  if (masks.add)
    m.addBatch = static_cast<const int64_t *>(
        deviceTable(masks.addBatch, batch * sizeof(int64_t)));
  if (masks.hide)
    m.hideBatch = static_cast<const int64_t *>(
        deviceTable(masks.hideBatch, batch * sizeof(int64_t)));
  return m;
}

/// expf below this is exactly 0 in float: a hidden score this far under its
/// row's maximum adds nothing (as in the CPU kernel).
constexpr float kNoContribution = -104.0f;

/// The largest Euclidean norm of `n` rows of `d` elements, `element(j, c)`
/// giving element c of row j, found by the whole block (every thread calls
/// it, with the same arguments). A NaN makes it infinite, so no bound built
/// on it lets a tile be skipped. Under an additive mask, |score| <=
/// |scale| ||q|| max ||k|| bounds a tile's scores (as in the CPU kernel).
template <typename Element>
__device__ float largestRowNorm(int64_t n, int64_t d, Element element) {
  __shared__ int top; // a non-negative float's bits order as the float
  if (threadIdx.x == 0)
    top = 0;
  __syncthreads();
  float mine = 0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    float sq = 0;
    for (int64_t c = 0; c < d; ++c) {
      float e = element(j, c);
      sq += e * e;
    }
    mine = isnan(sq) ? INFINITY : fmaxf(mine, sq);
  }
  atomicMax(&top, __float_as_int(mine));
  __syncthreads();
  return sqrtf(__int_as_float(top));
}

} // namespace pccrt::cuda

#endif // PCCRT_LIB_CUDA_DEVICEMASKS_H
