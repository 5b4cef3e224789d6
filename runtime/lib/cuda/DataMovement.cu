//===- DataMovement.cu - gather, strided copies, concat, split, trilu -----===//
//
// As the CPU's (DataMovement.cpp), by element size. A gather index outside
// its axis cannot stop the launch that meets it: the kernel writes zeros,
// records the first bad index, and the run ends with the CPU's error
// (synchronizeDevice). ScatterND is ScatterND.cu.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "../cpu/ElementTypes.h"
#include "pccrt/Device.h"
#include "pccrt/Kernels.h"

namespace pccrt {
namespace {

using namespace cuda;

template <typename Index>
__global__ void gatherRows(const char *in, const Index *idx, char *out,
                           int64_t outer, int64_t axisDim, int64_t numIdx,
                           int64_t rowBytes, int64_t offset, int64_t globalDim,
                           DeviceErrors *errors) {
  int64_t total = outer * numIdx * rowBytes;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t byte = t % rowBytes, row = t / rowBytes;
    int64_t j = row % numIdx, o = row / numIdx;
    int64_t k = static_cast<int64_t>(idx[j]);
    if (k < -globalDim || k >= globalDim) {
      if (atomicCAS(&errors->bad, 0, DeviceErrors::kGather) == 0) {
        errors->index = k;
        errors->axis = globalDim;
      }
      out[t] = 0;
      continue;
    }
    k = (k < 0 ? k + globalDim : k) - offset;
    out[t] = k >= 0 && k < axisDim ? in[(o * axisDim + k) * rowBytes + byte] : 0;
  }
}

constexpr int kMaxRank = 8;

struct CopyShape {
  int64_t shape[kMaxRank], stride[kMaxRank];
};

template <typename T>
__global__ void stridedElements(const T *in, T *out, int rank, CopyShape s,
                                int64_t base, int64_t total) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = t, off = base;
    for (int d = rank - 1; d >= 0; --d) {
      off += (rem % s.shape[d]) * s.stride[d];
      rem /= s.shape[d];
    }
    out[t] = in[off];
  }
}

/// n / d for n, d < 2^31 by a multiply and a shift (Granlund and
/// Montgomery's round-up method, as PyTorch's IntDivider), instead of
/// 64-bit division.
struct FastDivider {
  uint32_t divisor = 1, multiplier = 1, shift = 0;
  FastDivider() = default;
  explicit FastDivider(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint64_t(1) << shift) < d)
      ++shift;
    multiplier = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) /
                              d + 1);
  }
  __device__ uint32_t div(uint32_t n) const {
    return (__umulhi(n, multiplier) + n) >> shift;
  }
};

/// The same copy where every index and offset fits 31 bits.
struct NarrowCopyShape {
  FastDivider shape[kMaxRank];
  int32_t stride[kMaxRank];
};

/// The rank is a template argument so that the shape stays in registers:
/// indexing the parameter struct by a loop variable made every thread copy
/// it to local memory, which held transposes and broadcasts to a tenth of
/// memory bandwidth.
template <typename T, int Rank>
__global__ void stridedElementsNarrow(const T *in, T *out, NarrowCopyShape s,
                                      int32_t base, uint32_t total) {
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < total;
       t += gridDim.x * blockDim.x) {
    uint32_t rem = t;
    int32_t off = base;
#pragma unroll
    for (int d = Rank - 1; d >= 0; --d) {
      uint32_t q = s.shape[d].div(rem);
      off += int32_t(rem - q * s.shape[d].divisor) * s.stride[d];
      rem = q;
    }
    out[t] = in[off];
  }
}

/// Drops unit dimensions and merges neighbours the input also holds
/// contiguously (a transpose of [B, S, H, d] keeps d whole); the new rank.
int simplifyCopy(int rank, const int64_t *shape, const int64_t *stride,
                 int64_t *outShape, int64_t *outStride) {
  int n = 0;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    if (n > 0 && outStride[n - 1] == stride[d] * shape[d]) {
      outShape[n - 1] *= shape[d];
      outStride[n - 1] = stride[d];
      continue;
    }
    outShape[n] = shape[d];
    outStride[n] = stride[d];
    ++n;
  }
  return n;
}

template <typename T>
void launchNarrow(const char *in, char *out, int rank, const int64_t *shape,
                  const int64_t *stride, int64_t base, int64_t total) {
  NarrowCopyShape s{};
  for (int d = 0; d < rank; ++d)
    s.shape[d] = FastDivider(uint32_t(shape[d])), s.stride[d] = int32_t(stride[d]);
  auto *x = reinterpret_cast<const T *>(in);
  auto *y = reinterpret_cast<T *>(out);
  unsigned grid = gridFor(total);
  switch (rank) {
#define PCC_RANK_CASE(R)                                                       \
  case R:                                                                      \
    stridedElementsNarrow<T, R><<<grid, 256, 0, stream()>>>(                   \
        x, y, s, int32_t(base), uint32_t(total));                              \
    break;
    PCC_RANK_CASE(0) PCC_RANK_CASE(1) PCC_RANK_CASE(2) PCC_RANK_CASE(3)
    PCC_RANK_CASE(4) PCC_RANK_CASE(5) PCC_RANK_CASE(6) PCC_RANK_CASE(7)
    PCC_RANK_CASE(8)
#undef PCC_RANK_CASE
  }
}

template <typename T>
__global__ void triluElements(const T *x, T *y, int64_t total, int64_t rows,
                              int64_t cols, bool upper, int64_t k) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = i % cols, r = (i / cols) % rows;
    bool keep = upper ? c - r >= k : c - r <= k;
    y[i] = keep ? x[i] : T(0);
  }
}

} // namespace

template <typename Index>
bool gather(size_t elem, const char *in, const Index *idx, char *out,
            int64_t outer, int64_t axisDim, int64_t numIdx, int64_t inner,
            int64_t offset, int64_t globalDim) {
  if (globalDim < 0)
    globalDim = axisDim;
  int64_t rowBytes = inner * elem;
  gatherRows<<<gridFor(outer * numIdx * rowBytes), 256, 0, stream()>>>(
      in, idx, out, outer, axisDim, numIdx, rowBytes, offset, globalDim,
      deviceErrors());
  PCC_LAUNCHED();
  return true;
}

void stridedCopy(size_t elem, const char *in, char *out, int rank,
                 const int64_t *shape, int64_t base, const int64_t *inStride) {
  int64_t total = 1;
  for (int d = 0; d < rank; ++d)
    total *= shape[d];
  if (total == 0)
    return;
  if (rank > kMaxRank)
    fail("stridedCopy", "more than 8 dimensions");
  int64_t nshape[kMaxRank], nstride[kMaxRank];
  int n = simplifyCopy(rank, shape, inStride, nshape, nstride);
  // Where the innermost run is contiguous in both, copy it 16, 8 or 4 bytes
  // at a time (a head split or merge moves rows of d elements whole).
  size_t unit = elem;
  int64_t ubase = base, utotal = total;
  for (size_t bytes : {16, 8, 4}) {
    int64_t w = int64_t(bytes / elem);
    bool fits = n > 0 && bytes > elem && bytes % elem == 0 &&
                nstride[n - 1] == 1 && nshape[n - 1] % w == 0 &&
                base % w == 0 && reinterpret_cast<uintptr_t>(in) % bytes == 0 &&
                reinterpret_cast<uintptr_t>(out) % bytes == 0;
    for (int d = 0; fits && d + 1 < n; ++d)
      fits = nstride[d] % w == 0;
    if (!fits)
      continue;
    nshape[n - 1] /= w;
    for (int d = 0; d + 1 < n; ++d)
      nstride[d] /= w;
    ubase = base / w;
    utotal = total / w;
    unit = bytes;
    break;
  }
  // Narrow when every input offset the copy reads fits 31 bits.
  int64_t lo = ubase, hi = ubase;
  for (int d = 0; d < n; ++d)
    (nstride[d] < 0 ? lo : hi) += (nshape[d] - 1) * nstride[d];
  const int64_t limit = int64_t(1) << 31;
  if (utotal < limit && lo > -limit && hi < limit) {
    switch (unit) {
    case 1: launchNarrow<uint8_t>(in, out, n, nshape, nstride, ubase, utotal); break;
    case 2: launchNarrow<uint16_t>(in, out, n, nshape, nstride, ubase, utotal); break;
    case 4: launchNarrow<uint32_t>(in, out, n, nshape, nstride, ubase, utotal); break;
    case 8: launchNarrow<uint64_t>(in, out, n, nshape, nstride, ubase, utotal); break;
    default: launchNarrow<uint4>(in, out, n, nshape, nstride, ubase, utotal); break;
    }
    PCC_LAUNCHED();
    return;
  }
  CopyShape s{};
  for (int d = 0; d < rank; ++d)
    s.shape[d] = shape[d], s.stride[d] = inStride[d];
  unsigned grid = gridFor(total);
  switch (elem) {
  case 1: stridedElements<<<grid, 256, 0, stream()>>>(reinterpret_cast<const uint8_t *>(in), reinterpret_cast<uint8_t *>(out), rank, s, base, total); break;
  case 2: stridedElements<<<grid, 256, 0, stream()>>>(reinterpret_cast<const uint16_t *>(in), reinterpret_cast<uint16_t *>(out), rank, s, base, total); break;
  case 4: stridedElements<<<grid, 256, 0, stream()>>>(reinterpret_cast<const uint32_t *>(in), reinterpret_cast<uint32_t *>(out), rank, s, base, total); break;
  default: stridedElements<<<grid, 256, 0, stream()>>>(reinterpret_cast<const uint64_t *>(in), reinterpret_cast<uint64_t *>(out), rank, s, base, total); break;
  }
  PCC_LAUNCHED();
}

void concat(size_t elem, int numParts, const char *const *parts,
            const int64_t *sizes, char *out, int64_t outer, int64_t inner) {
  int64_t total = 0;
  for (int p = 0; p < numParts; ++p)
    total += sizes[p];
  int64_t at = 0, rowBytes = total * inner * elem;
  for (int p = 0; p < numParts; ++p) {
    int64_t bytes = sizes[p] * inner * elem;
    copyRows(out + at, rowBytes, parts[p], bytes, bytes, outer);
    at += bytes;
  }
}

void split(size_t elem, const char *in, int numParts, char *const *parts,
           const int64_t *sizes, int64_t outer, int64_t inner) {
  int64_t total = 0;
  for (int p = 0; p < numParts; ++p)
    total += sizes[p];
  int64_t at = 0, rowBytes = total * inner * elem;
  for (int p = 0; p < numParts; ++p) {
    int64_t bytes = sizes[p] * inner * elem;
    copyRows(parts[p], bytes, in + at, rowBytes, bytes, outer);
    at += bytes;
  }
}

template <typename T>
void trilu(const T *x, T *y, int64_t batch, int64_t rows, int64_t cols,
           bool upper, int64_t k) {
  int64_t total = batch * rows * cols;
  if (total == 0)
    return;
  triluElements<<<gridFor(total), 256, 0, stream()>>>(x, y, total, rows, cols,
                                                      upper, k);
  PCC_LAUNCHED();
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

} // namespace pccrt
