//===- ExpSum.cpp - a softmax row's exponentials, vectorised --------------===//
//
// Built with -fno-trapping-math (runtime/CMakeLists.txt): pccExp's clamps
// are selects that vectorise only where comparisons may not trap.
//
//===----------------------------------------------------------------------===//

#include "ExpSum.h"

#include "pccrt/Kernels.h"

namespace pccrt {

PCC_PART float expShiftedSum(const float *x, float *row, int64_t n,
                             float shift) {
  for (int64_t j = 0; j < n; ++j)
    row[j] = pccExp(x[j] - shift);
  float lane[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l)
      lane[l] += row[j + l];
  for (; j < n; ++j)
    lane[j % 8] += row[j];
  float sum = 0;
  for (float l : lane)
    sum += l;
  return sum;
}

} // namespace pccrt
