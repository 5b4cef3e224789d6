//===- SoftmaxStats.h - a split softmax line's statistics -------*- C++ -*-===//
//
// Shared by the CPU and CUDA kernels of a softmax over a split axis
// (softmaxSplit): each device's block of a line gives (max, sum of
// exp(x - max)); every device merges the group's pairs in group order, so
// all of them compute the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_SOFTMAXSTATS_H
#define PCCRT_SOFTMAXSTATS_H

#include "pccrt/Float16.h"

#include <cmath>
#include <cstdint>

namespace pccrt {

/// One line's max and its sum of exp(x - max) from `devices` pairs,
/// `stride` doubles apart. A block with nothing visible (max -inf) adds
/// nothing.
PCCRT_HD inline void mergeSoftmaxStats(const double *pairs, int64_t devices,
                                       int64_t stride, double &mx,
                                       double &sum) {
  mx = pairs[0];
  for (int64_t r = 1; r < devices; ++r)
    mx = pairs[r * stride] > mx ? pairs[r * stride] : mx;
  sum = 0;
  for (int64_t r = 0; r < devices; ++r)
    if (pairs[r * stride] > -HUGE_VAL)
      sum += pairs[r * stride + 1] * exp(pairs[r * stride] - mx);
}

} // namespace pccrt

#endif // PCCRT_SOFTMAXSTATS_H
