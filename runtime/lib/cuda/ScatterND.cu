//===- ScatterND.cu - ScatterND by sorted slots ---------------------------===//
//
// The CPU applies a ScatterND's tuples in order, so repeated tuples add (or
// overwrite) in that order. Here every tuple's slot (block and offset) is a
// key, a stable radix sort (cub) brings each slot's tuples together in
// their order, and a thread per (slot, slice element) folds them in: the
// CPU's order and result, with no atomics, and as many threads as slots
// times slice elements (an embedding gradient's rows, each token's row of
// the output gradient added to its index's). A bad tuple is recorded and
// skipped.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "../cpu/ElementTypes.h"
#include "pccrt/Device.h"
#include "pccrt/Kernels.h"

#include <cub/device/device_radix_sort.cuh>

namespace pccrt {
namespace {

using namespace cuda;

constexpr int kMaxRank = 8;

/// The first k dimensions of a ScatterND's data, by value.
struct ScatterDims {
  int64_t d[kMaxRank];
};

/// Tuple t's slot (its block's slots first), or `bad` for a tuple with an
/// entry outside its axis.
__global__ void slotKeys(const int64_t *idx, int64_t tuples, int64_t n, int k,
                         ScatterDims dims, int64_t slots, uint64_t bad,
                         uint64_t *keys, int32_t *order, DeviceErrors *errors) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < tuples;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t offset = 0;
    uint64_t key = 0;
    for (int a = 0; a < k; ++a) {
      int64_t i = idx[t * k + a], size = dims.d[a];
      if (i < -size || i >= size) {
        if (atomicCAS(&errors->bad, 0, DeviceErrors::kScatterND) == 0) {
          errors->index = i;
          errors->axis = size;
        }
        key = bad;
        break;
      }
      offset = offset * size + (i < 0 ? i + size : i);
    }
    keys[t] = key == bad ? bad : uint64_t((t / n) * slots + offset);
    order[t] = int32_t(t);
  }
}

/// A thread per (sorted position, slice element); the first position of
/// each slot folds its tuples' updates in order.
template <typename T>
__global__ void foldSlots(const uint64_t *keys, const int32_t *order,
                          const T *updates, T *out, int64_t tuples,
                          int64_t slots, int64_t blockElems, int64_t slice,
                          uint64_t bad, ScatterReduction reduction) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       t < tuples * slice; t += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = t / slice, e = t % slice;
    uint64_t key = keys[i];
    if (key == bad || (i > 0 && keys[i - 1] == key))
      continue;
    int64_t b = int64_t(key) / slots, offset = int64_t(key) % slots;
    T &to = out[b * blockElems + offset * slice + e];
    T acc = to;
    for (int64_t j = i; j < tuples && keys[j] == key; ++j) {
      T from = updates[int64_t(order[j]) * slice + e];
      acc = reduction == ScatterReduction::Add   ? T(acc + from)
            : reduction == ScatterReduction::Mul ? T(acc * from)
                                                 : from;
    }
    to = acc;
  }
}

/// Device memory kept for the sort: grown in a program's first (eager)
/// run, so that runs recorded as a CUDA graph allocate nothing.
char *sortScratch(size_t bytes) {
  static char *data = nullptr;
  static size_t size = 0;
  if (bytes > size) {
    synchronizeDevice();
    freeDeviceBytes(data);
    data = static_cast<char *>(allocateDeviceBytes(bytes));
    if (!data)
      fail("cudaMalloc", ("out of device memory sorting a scatter's " +
                          std::to_string(bytes) + " bytes of slots")
                             .c_str());
    size = bytes;
  }
  return data;
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

} // namespace

template <typename T>
bool scatterND(const T *data, const int64_t *idx, const T *updates, T *out,
               int64_t batches, int64_t blockElems, int64_t n, int k,
               const int64_t *dims, int64_t slice, ScatterReduction reduction) {
  if (k > kMaxRank)
    fail("scatterND", "index tuples of more than 8 entries");
  ScatterDims d{};
  int64_t slots = 1;
  for (int a = 0; a < k; ++a)
    slots *= d.d[a] = dims[a];
  int64_t dataElems = batches * blockElems, tuples = batches * n;
  if (out != data && dataElems)
    PCC_CUDA(cudaMemcpyAsync(out, data, dataElems * sizeof(T),
                             cudaMemcpyDeviceToDevice, stream()));
  if (tuples * slice == 0)
    return true;
  if (tuples > INT32_MAX)
    fail("scatterND", "more than 2^31 index tuples");
  // Keys run up to `bad` (every slot of every block, then one more): sort
  // only the bits that takes.
  uint64_t bad = uint64_t(batches * slots);
  int bits = 1;
  while (bits < 64 && (bad >> bits) != 0)
    ++bits;
  size_t sortBytes = 0;
  PCC_CUDA(cub::DeviceRadixSort::SortPairs(
      nullptr, sortBytes, static_cast<const uint64_t *>(nullptr),
      static_cast<uint64_t *>(nullptr), static_cast<const int32_t *>(nullptr),
      static_cast<int32_t *>(nullptr), int(tuples), 0, bits, stream()));
  size_t keyBytes = aligned(tuples * sizeof(uint64_t)),
         orderBytes = aligned(tuples * sizeof(int32_t));
  char *s = sortScratch(2 * keyBytes + 2 * orderBytes + aligned(sortBytes));
  auto *keys = reinterpret_cast<uint64_t *>(s);
  auto *sortedKeys = reinterpret_cast<uint64_t *>(s + keyBytes);
  auto *order = reinterpret_cast<int32_t *>(s + 2 * keyBytes);
  auto *sortedOrder = reinterpret_cast<int32_t *>(s + 2 * keyBytes + orderBytes);
  char *temp = s + 2 * keyBytes + 2 * orderBytes;
  slotKeys<<<gridFor(tuples), 256, 0, stream()>>>(idx, tuples, n, k, d, slots,
                                                 bad, keys, order,
                                                 deviceErrors());
  PCC_LAUNCHED();
  PCC_CUDA(cub::DeviceRadixSort::SortPairs(temp, sortBytes, keys, sortedKeys,
                                           order, sortedOrder, int(tuples), 0,
                                           bits, stream()));
  foldSlots<<<gridFor(tuples * slice), 256, 0, stream()>>>(
      sortedKeys, sortedOrder, updates, out, tuples, slots, blockElems, slice,
      bad, reduction);
  PCC_LAUNCHED();
  return true;
}

#define INSTANTIATE_SCATTER(T)                                                 \
  template bool scatterND<T>(const T *, const int64_t *, const T *, T *,       \
                             int64_t, int64_t, int64_t, int, const int64_t *,  \
                             int64_t, ScatterReduction);
PCCRT_FOR_EACH_ELEMENT_TYPE(INSTANTIATE_SCATTER)
#undef INSTANTIATE_SCATTER

} // namespace pccrt
