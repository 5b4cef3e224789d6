//===- MemoryPlan.cpp - static buffer placement ---------------------------===//

#include "pcc/Codegen/MemoryPlan.h"

#include <algorithm>
#include <numeric>

namespace pcc {

static int64_t align64(int64_t v) { return (v + 63) / 64 * 64; }

int64_t planBuffers(std::vector<BufferRequest> &buffers) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].start != buffers[b].start)
      return buffers[a].start < buffers[b].start;
    return buffers[a].bytes > buffers[b].bytes;
  });
  std::vector<size_t> placed;
  int64_t arena = 0;
  for (size_t i : order) {
    BufferRequest &buf = buffers[i];
    // Occupied ranges among placed buffers that are live at the same time.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed) {
      const BufferRequest &other = buffers[j];
      if (other.start <= buf.end && buf.start <= other.end)
        busy.push_back({other.offset, other.offset + align64(other.bytes)});
    }
    std::sort(busy.begin(), busy.end());
    int64_t size = align64(std::max<int64_t>(buf.bytes, 1));
    int64_t candidate = 0;
    for (auto [lo, hi] : busy) {
      if (candidate + size <= lo)
        break;
      candidate = std::max(candidate, hi);
    }
    buf.offset = candidate;
    arena = std::max(arena, candidate + size);
    placed.push_back(i);
  }
  return arena;
}

} // namespace pcc
