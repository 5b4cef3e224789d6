//===- Reductions.cpp - reductions and arg-reductions -----------------------===//
//
// Over one contiguous block of axes: (outer, n, inner) -> (outer, inner);
// instantiated for every element type generated code uses.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Kernels.h"
#include "pccrt/Status.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace pccrt {

template <typename T>
void reduce(ReduceKind kind, const T *x, T *y, int64_t outer, int64_t n,
            int64_t inner) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T *xp = x + o * n * inner + i;
      Acc acc;
      switch (kind) {
      case ReduceKind::Max:
        acc = n ? Acc(xp[0]) : Acc(std::numeric_limits<T>::lowest());
        for (int64_t k = 1; k < n; ++k)
          acc = std::max<Acc>(acc, xp[k * inner]);
        break;
      case ReduceKind::Min:
        acc = n ? Acc(xp[0]) : Acc(std::numeric_limits<T>::max());
        for (int64_t k = 1; k < n; ++k)
          acc = std::min<Acc>(acc, xp[k * inner]);
        break;
      case ReduceKind::Prod:
        acc = 1;
        for (int64_t k = 0; k < n; ++k)
          acc *= xp[k * inner];
        break;
      default:
        acc = 0;
        for (int64_t k = 0; k < n; ++k)
          acc += xp[k * inner];
        if (kind == ReduceKind::Mean && n)
          acc /= n;
        break;
      }
      y[o * inner + i] = T(acc);
    }
  }
}

template <typename T>
void argReduce(bool isMax, const T *x, int64_t *y, int64_t outer, int64_t n,
               int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T *xp = x + o * n * inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < n; ++k)
        if (isMax ? xp[k * inner] > xp[best * inner]
                  : xp[k * inner] < xp[best * inner])
          best = k;
      y[o * inner + i] = best;
    }
  }
}

// Generated code sees only the declarations in Kernels.h.
template void reduce<float>(ReduceKind, const float *, float *, int64_t, int64_t,
                          int64_t);
template void reduce<double>(ReduceKind, const double *, double *, int64_t, int64_t,
                          int64_t);
template void reduce<int8_t>(ReduceKind, const int8_t *, int8_t *, int64_t, int64_t,
                          int64_t);
template void reduce<int16_t>(ReduceKind, const int16_t *, int16_t *, int64_t, int64_t,
                          int64_t);
template void reduce<int32_t>(ReduceKind, const int32_t *, int32_t *, int64_t, int64_t,
                          int64_t);
template void reduce<int64_t>(ReduceKind, const int64_t *, int64_t *, int64_t, int64_t,
                          int64_t);
template void reduce<uint8_t>(ReduceKind, const uint8_t *, uint8_t *, int64_t, int64_t,
                          int64_t);
template void reduce<uint16_t>(ReduceKind, const uint16_t *, uint16_t *, int64_t, int64_t,
                          int64_t);
template void reduce<uint32_t>(ReduceKind, const uint32_t *, uint32_t *, int64_t, int64_t,
                          int64_t);
template void reduce<uint64_t>(ReduceKind, const uint64_t *, uint64_t *, int64_t, int64_t,
                          int64_t);
template void reduce<bool>(ReduceKind, const bool *, bool *, int64_t, int64_t,
                          int64_t);
template void argReduce<float>(bool, const float *, int64_t *, int64_t,
                             int64_t, int64_t);
template void argReduce<double>(bool, const double *, int64_t *, int64_t,
                             int64_t, int64_t);
template void argReduce<int8_t>(bool, const int8_t *, int64_t *, int64_t,
                             int64_t, int64_t);
template void argReduce<int16_t>(bool, const int16_t *, int64_t *, int64_t,
                             int64_t, int64_t);
template void argReduce<int32_t>(bool, const int32_t *, int64_t *, int64_t,
                             int64_t, int64_t);
template void argReduce<int64_t>(bool, const int64_t *, int64_t *, int64_t,
                             int64_t, int64_t);
template void argReduce<uint8_t>(bool, const uint8_t *, int64_t *, int64_t,
                             int64_t, int64_t);
template void argReduce<uint16_t>(bool, const uint16_t *, int64_t *, int64_t,
                             int64_t, int64_t);
template void argReduce<uint32_t>(bool, const uint32_t *, int64_t *, int64_t,
                             int64_t, int64_t);
template void argReduce<uint64_t>(bool, const uint64_t *, int64_t *, int64_t,
                             int64_t, int64_t);
template void argReduce<bool>(bool, const bool *, int64_t *, int64_t,
                             int64_t, int64_t);

} // namespace pccrt
