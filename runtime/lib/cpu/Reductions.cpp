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
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace pccrt {

namespace {

/// Folds the n rows of `inner` elements at x into acc, row by row: each
/// output element sees its inputs in the same order as a walk down its
/// column would (the same result to the bit), but the rows are read
/// contiguously and the loop over them vectorises (a column sum over the
/// tokens, a bias gradient, read every element `inner` apart before).
template <typename Acc, typename T, typename Op>
void foldRows(const T *x, Acc *acc, int64_t n, int64_t inner, int64_t from,
              Op op) {
  for (int64_t k = from; k < n; ++k) {
    const T *row = x + k * inner;
    for (int64_t i = 0; i < inner; ++i)
      acc[i] = op(acc[i], Acc(row[i]));
  }
}

} // namespace

template <typename T>
void reduce(ReduceKind kind, const T *x, T *y, int64_t outer, int64_t n,
            int64_t inner) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  // Not std::vector: vector<bool> has no data().
  std::unique_ptr<Acc[]> acc(new Acc[std::max<int64_t>(inner, 1)]);
  for (int64_t o = 0; o < outer; ++o) {
    const T *xo = x + o * n * inner;
    switch (kind) {
    case ReduceKind::Max:
      for (int64_t i = 0; i < inner; ++i)
        acc[i] = n ? Acc(xo[i]) : Acc(std::numeric_limits<T>::lowest());
      foldRows(xo, acc.get(), n, inner, 1,
               [](Acc a, Acc v) { return std::max<Acc>(a, v); });
      break;
    case ReduceKind::Min:
      for (int64_t i = 0; i < inner; ++i)
        acc[i] = n ? Acc(xo[i]) : Acc(std::numeric_limits<T>::max());
      foldRows(xo, acc.get(), n, inner, 1,
               [](Acc a, Acc v) { return std::min<Acc>(a, v); });
      break;
    case ReduceKind::Prod:
      std::fill(acc.get(), acc.get() + inner, Acc(1));
      foldRows(xo, acc.get(), n, inner, 0, [](Acc a, Acc v) {
        if constexpr (std::is_same_v<Acc, bool>)
          return Acc(a && v); // a product of booleans
        else
          return Acc(a * v);
      });
      break;
    default:
      if constexpr (std::is_floating_point_v<Acc>) {
        if (inner == 1) {
          // One contiguous row (a softmax's or a norm's backward sum):
          // four chains of double sums, so the adds do not wait on each
          // other (the order differs from one chain's by double roundings
          // of float inputs).
          Acc s[4] = {0, 0, 0, 0};
          int64_t k = 0;
          for (; k + 4 <= n; k += 4)
            for (int j = 0; j < 4; ++j)
              s[j] += Acc(xo[k + j]);
          for (; k < n; ++k)
            s[0] += Acc(xo[k]);
          acc[0] = (s[0] + s[1]) + (s[2] + s[3]);
          if (kind == ReduceKind::Mean && n)
            acc[0] /= n;
          break;
        }
      }
      std::fill(acc.get(), acc.get() + inner, Acc(0));
      foldRows(xo, acc.get(), n, inner, 0,
               [](Acc a, Acc v) { return Acc(a + v); });
      if (kind == ReduceKind::Mean && n)
        for (int64_t i = 0; i < inner; ++i)
          acc[i] /= n;
      break;
    }
    for (int64_t i = 0; i < inner; ++i)
      y[o * inner + i] = T(acc[i]);
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
