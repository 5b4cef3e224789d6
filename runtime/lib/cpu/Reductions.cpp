//===- Reductions.cpp - reductions and arg-reductions -----------------------===//
//
// Over one contiguous block of axes: (outer, n, inner) -> (outer, inner);
// instantiated for every element type generated code uses.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Kernels.h"

#include "ElementTypes.h"
#include "pccrt/Status.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

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
          if constexpr (std::is_same_v<Acc, bool>)
            acc = acc && xp[k * inner]; // a product of booleans
          else
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

template <typename T>
void topK(const T *x, T *values, int64_t *indices, int64_t outer, int64_t n,
          int64_t inner, int64_t k, bool largest) {
  std::vector<int64_t> order(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T *line = x + o * n * inner + i;
      for (int64_t m = 0; m < n; ++m)
        order[m] = m;
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int64_t a, int64_t b) {
                          return topKBefore(line[a * inner], a, line[b * inner],
                                            b, largest);
                        });
      for (int64_t j = 0; j < k; ++j) {
        values[(o * k + j) * inner + i] = line[order[j] * inner];
        indices[(o * k + j) * inner + i] = order[j];
      }
    }
  }
}

#define INSTANTIATE(T)                                                         \
  template void reduce<T>(ReduceKind, const T *, T *, int64_t, int64_t,        \
                          int64_t);                                            \
  template void argReduce<T>(bool, const T *, int64_t *, int64_t, int64_t,     \
                             int64_t);                                         \
  template void topK<T>(const T *, T *, int64_t *, int64_t, int64_t, int64_t,  \
                        int64_t, bool);
PCCRT_FOR_EACH_ELEMENT_TYPE(INSTANTIATE)
#undef INSTANTIATE

} // namespace pccrt
