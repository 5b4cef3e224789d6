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
// - GPipe: every forward, then every backward;
// - zero-bubble ZB-H1 (Qi et al. 2024), for programs that run each backward
//   as two calls, B (the input's gradient, which the previous stage waits
//   for) and W (the weights' gradients): 1F1B's forwards and B passes, with
//   device d holding back its first d W passes and running the rest one
//   microbatch behind, so that the held-back ones fill its cooldown, which
//   1F1B leaves idle (the order of the authors' exact-semantics schedule).
//   The F and B passes are 1F1B's, so it finishes as 1F1B does; each device
//   holds at most devices - d microbatches between forward and B, and d + 1
//   between B and W.
// Under 1F1B and GPipe, such a program's W follows its B at once.
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

/// One call of a pipeline device's step: the forward or backward of a
/// microbatch through a chunk; a `weight` call is the backward's W part (a
/// zero-bubble program's weight gradients), the backward call before it
/// then being its B part.
struct PipelineCall {
  bool backward = false;
  int64_t microbatch = 0, chunk = 0;
  bool weight = false;
  bool operator==(const PipelineCall &o) const {
    return backward == o.backward && microbatch == o.microbatch &&
           chunk == o.chunk && weight == o.weight;
  }
};

enum class PipelineKind { OneFOneB, GPipe, ZeroBubbleH1 };

inline std::vector<PipelineCall> pipelineOrder(int64_t devices, int64_t chunks,
                                               int64_t device,
                                               int64_t microbatches,
                                               bool gpipe);

/// Device `device`'s calls in the order it runs them; `weightPasses`: the
/// program runs each backward as B then W (ZB-H1 needs it, and one chunk).
inline std::vector<PipelineCall>
pipelineOrder(int64_t devices, int64_t chunks, int64_t device,
              int64_t microbatches, PipelineKind kind, bool weightPasses) {
  if (kind == PipelineKind::ZeroBubbleH1 && chunks == 1) {
    std::vector<PipelineCall> calls;
    int64_t m = microbatches, f = 0, b = 0, w = 0;
    auto forward = [&] { calls.push_back({false, f++, 0}); };
    auto backward = [&] { calls.push_back({true, b++, 0}); };
    auto weight = [&] { calls.push_back({true, w++, 0, true}); };
    int64_t warm = std::min(std::max<int64_t>(devices - device - 1, 0), m);
    for (int64_t k = 0; k < warm; ++k)
      forward();
    for (int64_t k = 0; k < device && f < m; ++k) {
      forward();
      backward();
    }
    while (f < m) {
      forward();
      backward();
      weight();
    }
    while (b < m) {
      backward();
      weight();
    }
    while (w < m)
      weight();
    return calls;
  }
  std::vector<PipelineCall> calls =
      pipelineOrder(devices, chunks, device, microbatches,
                    kind == PipelineKind::GPipe);
  if (!weightPasses)
    return calls;
  std::vector<PipelineCall> split;
  for (const PipelineCall &c : calls) {
    split.push_back(c);
    if (c.backward)
      split.push_back({true, c.microbatch, c.chunk, true});
  }
  return split;
}

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
    if (c.weight)
      continue;
    now[c.chunk] += c.backward ? -1 : 1;
    most[c.chunk] = std::max(most[c.chunk], now[c.chunk]);
  }
  return most;
}

/// ZB-H1's chunkWeightsInFlight on device `device` where its W parts run
/// apart from their B (every device but the first, whose W follows its B
/// at once and keeps nothing): the planner's count, without the order.
inline int64_t zeroBubbleWeightsHeld(int64_t devices, int64_t device,
                                     int64_t microbatches) {
  if (device == 0)
    return 0;
  int64_t warm = std::min(std::max<int64_t>(devices - device - 1, 0),
                          microbatches);
  return std::min(std::min(device, microbatches - warm) + 1, microbatches);
}

/// The most microbatches each chunk holds between their B and W parts in
/// `calls` (the slots of what W reads, where it runs apart from B).
inline std::vector<int64_t>
chunkWeightsInFlight(const std::vector<PipelineCall> &calls, int64_t chunks) {
  std::vector<int64_t> now(chunks, 0), most(chunks, 0);
  for (const PipelineCall &c : calls) {
    if (!c.backward)
      continue;
    now[c.chunk] += c.weight ? -1 : 1;
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
