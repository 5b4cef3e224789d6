//===- MemoryPlan.cpp - static buffer placement ---------------------------===//
//
// First fit, tried in two orders: by start (then size) and by size (then
// start, TFLite's "greedy by size"); the smaller arena wins. Neither order
// is best on every schedule: attention's workspace and SUMMA's panels
// fragment the by-start placement of small per-device blocks.
//
//===----------------------------------------------------------------------===//

#include "pcc/Codegen/MemoryPlan.h"

#include <algorithm>
#include <numeric>

namespace pcc {

static int64_t align64(int64_t v) { return (v + 63) / 64 * 64; }

/// First fit of `buffers` in `order`: their offsets, and the arena size.
static int64_t firstFit(const std::vector<BufferRequest> &buffers,
                        const std::vector<size_t> &order,
                        std::vector<int64_t> &offsets) {
  offsets.assign(buffers.size(), -1);
  std::vector<size_t> placed;
  int64_t arena = 0;
  for (size_t i : order) {
    const BufferRequest &buf = buffers[i];
    // Occupied ranges among placed buffers that are live at the same time.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed) {
      const BufferRequest &other = buffers[j];
      if (other.start <= buf.end && buf.start <= other.end)
        busy.push_back({offsets[j], offsets[j] + align64(other.bytes)});
    }
    std::sort(busy.begin(), busy.end());
    int64_t size = align64(std::max<int64_t>(buf.bytes, 1));
    int64_t candidate = 0;
    for (auto [lo, hi] : busy) {
      if (candidate + size <= lo)
        break;
      candidate = std::max(candidate, hi);
    }
    offsets[i] = candidate;
    arena = std::max(arena, candidate + size);
    placed.push_back(i);
  }
  return arena;
}

int64_t planBuffers(std::vector<BufferRequest> &buffers) {
  std::vector<size_t> byStart(buffers.size());
  std::iota(byStart.begin(), byStart.end(), 0);
  std::vector<size_t> bySize = byStart;
  std::stable_sort(byStart.begin(), byStart.end(), [&](size_t a, size_t b) {
    if (buffers[a].start != buffers[b].start)
      return buffers[a].start < buffers[b].start;
    return buffers[a].bytes > buffers[b].bytes;
  });
  std::stable_sort(bySize.begin(), bySize.end(), [&](size_t a, size_t b) {
    if (align64(buffers[a].bytes) != align64(buffers[b].bytes))
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].start < buffers[b].start;
  });
  std::vector<int64_t> first, second;
  int64_t a = firstFit(buffers, byStart, first);
  int64_t b = firstFit(buffers, bySize, second);
  const std::vector<int64_t> &best = b < a ? second : first;
  for (size_t i = 0; i < buffers.size(); ++i)
    buffers[i].offset = best[i];
  return std::min(a, b);
}

} // namespace pcc
