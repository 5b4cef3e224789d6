//===- Reductions.cu - reductions over one block of axes ------------------===//
//
// One thread per output element, accumulating in double for floats as the
// CPU kernels do (Reductions.cpp).
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "../cpu/ElementTypes.h"
#include "pccrt/Kernels.h"

#include <cfloat>
#include <climits>
#include <type_traits>

namespace pccrt {
namespace {

using namespace cuda;

template <typename T> __device__ T lowestOf() {
  if constexpr (std::is_same_v<T, float>) return -FLT_MAX;
  else if constexpr (std::is_same_v<T, double>) return -DBL_MAX;
  else if constexpr (std::is_same_v<T, bool>) return false;
  else if constexpr (std::is_signed_v<T>) return T(T(1) << (sizeof(T) * 8 - 1));
  else return T(0);
}

template <typename T> __device__ T highestOf() {
  if constexpr (std::is_same_v<T, float>) return FLT_MAX;
  else if constexpr (std::is_same_v<T, double>) return DBL_MAX;
  else if constexpr (std::is_same_v<T, bool>) return true;
  else if constexpr (std::is_signed_v<T>) return T(~lowestOf<T>());
  else return T(~T(0));
}

template <typename T>
__global__ void reduceLines(ReduceKind kind, const T *x, T *y, int64_t outer,
                            int64_t n, int64_t inner) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       t < outer * inner; t += int64_t(gridDim.x) * blockDim.x) {
    const T *xp = x + (t / inner) * n * inner + t % inner;
    Acc acc;
    switch (kind) {
    case ReduceKind::Max:
      acc = n ? Acc(xp[0]) : Acc(lowestOf<T>());
      for (int64_t k = 1; k < n; ++k)
        acc = Acc(xp[k * inner]) > acc ? Acc(xp[k * inner]) : acc;
      break;
    case ReduceKind::Min:
      acc = n ? Acc(xp[0]) : Acc(highestOf<T>());
      for (int64_t k = 1; k < n; ++k)
        acc = Acc(xp[k * inner]) < acc ? Acc(xp[k * inner]) : acc;
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
    y[t] = T(acc);
  }
}

template <typename T>
__global__ void argReduceLines(bool isMax, const T *x, int64_t *y,
                               int64_t outer, int64_t n, int64_t inner) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       t < outer * inner; t += int64_t(gridDim.x) * blockDim.x) {
    const T *xp = x + (t / inner) * n * inner + t % inner;
    int64_t best = 0;
    for (int64_t k = 1; k < n; ++k)
      if (isMax ? xp[k * inner] > xp[best * inner]
                : xp[k * inner] < xp[best * inner])
        best = k;
    y[t] = best;
  }
}

/// One thread a line: the j-th element is the first, in topKBefore's
/// order, of those after the (j-1)-th. O(n k) reads and no scratch, for the
/// small k TopK is used with (beam search, top-5).
template <typename T>
__global__ void topKLines(const T *x, T *values, int64_t *indices,
                          int64_t outer, int64_t n, int64_t inner, int64_t k,
                          bool largest) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       t < outer * inner; t += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = t / inner, i = t % inner;
    const T *line = x + o * n * inner + i;
    T prev{};
    int64_t prevAt = -1;
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      T bestValue{};
      for (int64_t m = 0; m < n; ++m) {
        T v = line[m * inner];
        if (prevAt >= 0 && !topKBefore(prev, prevAt, v, m, largest))
          continue; // taken already
        if (best < 0 || topKBefore(v, m, bestValue, best, largest))
          best = m, bestValue = v;
      }
      values[(o * k + j) * inner + i] = bestValue;
      indices[(o * k + j) * inner + i] = best;
      prev = bestValue, prevAt = best;
    }
  }
}

} // namespace

template <typename T>
void topK(const T *x, T *values, int64_t *indices, int64_t outer, int64_t n,
          int64_t inner, int64_t k, bool largest) {
  if (outer * inner * k == 0)
    return;
  topKLines<<<gridFor(outer * inner), 256, 0, stream()>>>(
      x, values, indices, outer, n, inner, k, largest);
  PCC_LAUNCHED();
}

template <typename T>
void reduce(ReduceKind kind, const T *x, T *y, int64_t outer, int64_t n,
            int64_t inner) {
  if (outer * inner == 0)
    return;
  reduceLines<<<gridFor(outer * inner), 256, 0, stream()>>>(kind, x, y, outer,
                                                            n, inner);
  PCC_LAUNCHED();
}

template <typename T>
void argReduce(bool isMax, const T *x, int64_t *y, int64_t outer, int64_t n,
               int64_t inner) {
  if (outer * inner == 0)
    return;
  argReduceLines<<<gridFor(outer * inner), 256, 0, stream()>>>(isMax, x, y,
                                                               outer, n, inner);
  PCC_LAUNCHED();
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
