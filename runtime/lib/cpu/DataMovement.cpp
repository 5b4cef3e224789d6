//===- DataMovement.cpp - gather, strided copies, concat, split, trilu ----===//
//
// By element size where the element type does not matter; trilu is
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

template <typename Index>
bool gather(size_t elem, const char *in, const Index *idx, char *out,
            int64_t outer, int64_t axisDim, int64_t numIdx, int64_t inner,
            int64_t offset, int64_t globalDim) {
  if (globalDim < 0)
    globalDim = axisDim;
  size_t row = inner * elem;
  for (int64_t j = 0; j < numIdx; ++j) {
    int64_t k = static_cast<int64_t>(idx[j]);
    if (k < -globalDim || k >= globalDim) {
      kernelError("gather index " + std::to_string(idx[j]) +
                  " out of range for an axis of size " +
                  std::to_string(globalDim));
      return false;
    }
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < numIdx; ++j) {
      int64_t k = static_cast<int64_t>(idx[j]);
      k = (k < 0 ? k + globalDim : k) - offset;
      char *dst = out + (o * numIdx + j) * row;
      if (k >= 0 && k < axisDim)
        std::memcpy(dst, in + (o * axisDim + k) * row, row);
      else
        std::memset(dst, 0, row);
    }
  return true;
}

template <typename T>
bool scatterND(const T *data, const int64_t *idx, const T *updates, T *out,
               int64_t batches, int64_t blockElems, int64_t n, int k,
               const int64_t *dims, int64_t slice, ScatterReduction reduction) {
  // Offsets of every tuple first: a bad one changes nothing.
  std::vector<int64_t> at(batches * n);
  for (int64_t j = 0; j < batches * n; ++j) {
    int64_t offset = 0;
    for (int a = 0; a < k; ++a) {
      int64_t i = idx[j * k + a];
      if (i < -dims[a] || i >= dims[a]) {
        kernelError("scatter_nd index " + std::to_string(i) +
                    " out of range for an axis of size " +
                    std::to_string(dims[a]));
        return false;
      }
      offset = offset * dims[a] + (i < 0 ? i + dims[a] : i);
    }
    at[j] = (j / (n ? n : 1)) * blockElems + offset * slice;
  }
  if (out != data)
    std::copy(data, data + batches * blockElems, out);
  for (int64_t j = 0; j < batches * n; ++j) {
    T *to = out + at[j];
    const T *from = updates + j * slice;
    for (int64_t e = 0; e < slice; ++e)
      to[e] = reduction == ScatterReduction::Add   ? T(to[e] + from[e])
              : reduction == ScatterReduction::Mul ? T(to[e] * from[e])
                                                   : from[e];
  }
  return true;
}

void copyParts(bool join, size_t elem, char *whole, int numParts,
                      char *const *parts, const int64_t *sizes,
                      int64_t outer, int64_t inner) {
  int64_t total = 0;
  for (int p = 0; p < numParts; ++p)
    total += sizes[p];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t at = 0;
    for (int p = 0; p < numParts; ++p) {
      size_t bytes = sizes[p] * inner * elem;
      char *w = whole + (o * total + at) * inner * elem;
      char *part = parts[p] + o * bytes;
      join ? std::memcpy(w, part, bytes) : std::memcpy(part, w, bytes);
      at += sizes[p];
    }
  }
}

void concat(size_t elem, int numParts, const char *const *parts,
                   const int64_t *sizes, char *out, int64_t outer,
                   int64_t inner) {
  copyParts(true, elem, out, numParts, const_cast<char *const *>(parts), sizes,
            outer, inner);
}

void split(size_t elem, const char *in, int numParts, char *const *parts,
                  const int64_t *sizes, int64_t outer, int64_t inner) {
  copyParts(false, elem, const_cast<char *>(in), numParts, parts, sizes, outer,
            inner);
}


namespace {
/// Copies `n` elements of type T spaced `stride` apart into `out`.
template <typename T>
void gatherRow(const char *in, char *out, int64_t n, int64_t stride) {
  const T *src = reinterpret_cast<const T *>(in);
  T *dst = reinterpret_cast<T *>(out);
  for (int64_t i = 0; i < n; ++i)
    dst[i] = src[i * stride];
}
} // namespace

void stridedCopy(size_t elem, const char *in, char *out, int rank,
                 const int64_t *shape, int64_t base, const int64_t *inStride) {
  int64_t total = 1;
  for (int d = 0; d < rank; ++d)
    total *= shape[d];
  if (total == 0)
    return;
  std::vector<int64_t> coord(rank, 0);
  int64_t inner = rank ? shape[rank - 1] : 1;
  int64_t innerStride = rank ? inStride[rank - 1] : 0;
  for (int64_t done = 0; done < total; done += inner) {
    int64_t off = base;
    for (int d = 0; d + 1 < rank; ++d)
      off += coord[d] * inStride[d];
    const char *src = in + off * elem;
    if (innerStride == 1)
      std::memcpy(out, src, inner * elem);
    else if (elem == 4)
      gatherRow<uint32_t>(src, out, inner, innerStride);
    else if (elem == 8)
      gatherRow<uint64_t>(src, out, inner, innerStride);
    else if (elem == 2)
      gatherRow<uint16_t>(src, out, inner, innerStride);
    else if (elem == 1)
      gatherRow<uint8_t>(src, out, inner, innerStride);
    else
      for (int64_t i = 0; i < inner; ++i)
        std::memcpy(out + i * elem, src + i * innerStride * elem, elem);
    out += inner * elem;
    for (int d = rank - 2; d >= 0; --d) {
      if (++coord[d] < shape[d])
        break;
      coord[d] = 0;
    }
  }
}

template <typename T>
void trilu(const T *x, T *y, int64_t batch, int64_t rows, int64_t cols,
           bool upper, int64_t k) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        int64_t i = (b * rows + r) * cols + c;
        bool keep = upper ? c - r >= k : c - r <= k;
        y[i] = keep ? x[i] : T(0);
      }
}

#define INSTANTIATE_GATHER(Index)                                              \
  template bool gather<Index>(size_t, const char *, const Index *, char *,     \
                              int64_t, int64_t, int64_t, int64_t, int64_t,     \
                              int64_t);
PCCRT_FOR_EACH_INDEX_TYPE(INSTANTIATE_GATHER)
#undef INSTANTIATE_GATHER
#define INSTANTIATE_TRILU(T)                                                   \
  template void trilu<T>(const T *, T *, int64_t, int64_t, int64_t, bool,      \
                         int64_t);
PCCRT_FOR_EACH_ELEMENT_TYPE(INSTANTIATE_TRILU)
#undef INSTANTIATE_TRILU
#define INSTANTIATE_SCATTER(T)                                                 \
  template bool scatterND<T>(const T *, const int64_t *, const T *, T *,       \
                             int64_t, int64_t, int64_t, int, const int64_t *,  \
                             int64_t, ScatterReduction);
PCCRT_FOR_EACH_ELEMENT_TYPE(INSTANTIATE_SCATTER)
#undef INSTANTIATE_SCATTER

} // namespace pccrt
