//===- PipelineSchedule.h - a pipeline device's order of work ---*- C++ -*-===//
//
// A pipelined training step runs, on each of `devices` pipeline devices, the
// forward and backward of every microbatch through each of its `chunks`
// chunks of layers (chunk c of device d is stage c * devices + d; one chunk
// per device without interleaving). This header says in which order, for
// the runtime (which runs it) and the planner (which prices its memory):
// - 1F1B (PipeDream-Flush): as many forwards as the device holds in flight
//   (devices - d), then one backward per forward, then the rest;
// - interleaved 1F1B (Megatron-LM's virtual pipeline, Narayanan et al.
//   2021): forwards go through the chunks in groups of `devices`
//   microbatches, backwards through them in reverse; the warm-up is
//   (devices - d - 1) * 2 + (chunks - 1) * devices forwards. Needs the
//   microbatches to be a multiple of the devices;
// - GPipe: every forward, then every backward.
// Sends never wait for their receiver (the runtime buffers them), so a
// device waits only for what a receive needs: these orders finish
// (PipelineScheduleTest simulates them).
//
// Plain C++ shared by pcc and the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_PIPELINESCHEDULE_H
#define PCCRT_PIPELINESCHEDULE_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace pccrt {

struct PipelineCall {
  bool backward = false;
  int64_t microbatch = 0, chunk = 0;
  bool operator==(const PipelineCall &o) const {
    return backward == o.backward && microbatch == o.microbatch &&
           chunk == o.chunk;
  }
};

/// Device `device`'s forwards and backwards, in the order it runs them.
inline std::vector<PipelineCall> pipelineOrder(int64_t devices, int64_t chunks,
                                               int64_t device,
                                               int64_t microbatches,
                                               bool gpipe) {
  std::vector<PipelineCall> calls;
  int64_t total = microbatches * chunks;
  // The k-th forward (backward) unit: its microbatch and chunk.
  auto unit = [&](int64_t k, bool backward) {
    int64_t group = devices * chunks;
    int64_t chunk = chunks == 1 ? 0 : (k % group) / devices;
    if (backward)
      chunk = chunks - 1 - chunk;
    int64_t mb = chunks == 1 ? k : (k / group) * devices + k % devices;
    return PipelineCall{backward, mb, chunk};
  };
  int64_t warm = chunks == 1
                     ? devices - device - 1
                     : (devices - device - 1) * 2 + (chunks - 1) * devices;
  if (gpipe)
    warm = total;
  warm = std::min(std::max<int64_t>(warm, 0), total);
  for (int64_t k = 0; k < warm; ++k)
    calls.push_back(unit(k, false));
  for (int64_t k = 0; k < total - warm; ++k) {
    calls.push_back(unit(warm + k, false));
    calls.push_back(unit(k, true));
  }
  for (int64_t k = total - warm; k < total; ++k)
    calls.push_back(unit(k, true));
  return calls;
}

/// The most microbatches each chunk holds between their forward and
/// backward in `calls` (its stash slots).
inline std::vector<int64_t>
chunkInFlight(const std::vector<PipelineCall> &calls, int64_t chunks) {
  std::vector<int64_t> now(chunks, 0), most(chunks, 0);
  for (const PipelineCall &c : calls) {
    now[c.chunk] += c.backward ? -1 : 1;
    most[c.chunk] = std::max(most[c.chunk], now[c.chunk]);
  }
  return most;
}

/// chunkInFlight(pipelineOrder(devices, chunks, device, microbatches,
/// false), chunks) without building the order: O(devices x chunks^2) (the
/// planner prices many schedules).
inline std::vector<int64_t> chunkInFlightOf(int64_t devices, int64_t chunks,
                                            int64_t device,
                                            int64_t microbatches) {
  if (chunks == 1)
    return {std::max<int64_t>(std::min(devices - device, microbatches), 0)};
  int64_t total = microbatches * chunks, group = devices * chunks;
  int64_t warm = std::min<int64_t>(
      std::max<int64_t>((devices - device - 1) * 2 + (chunks - 1) * devices, 0),
      total);
  // Units of chunk c among the first n forward units (backward: chunk
  // chunks - 1 - c's place in the group).
  auto among = [&](int64_t n, int64_t c) {
    return (n / group) * devices +
           std::min(std::max<int64_t>(n % group - c * devices, 0), devices);
  };
  std::vector<int64_t> most(chunks, 0);
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t best = among(warm, c);
    // In the steady part, after forward unit warm + j and j backwards;
    // the difference repeats every group of units.
    for (int64_t j = 0; j < std::min(group, total - warm); ++j)
      best = std::max(best, among(warm + j + 1, c) - among(j, chunks - 1 - c));
    most[c] = best;
  }
  return most;
}

} // namespace pccrt

#endif // PCCRT_PIPELINESCHEDULE_H
