//===- PipelineScheduleTest.cpp - pipeline orders finish and hold little --===//
//
// Simulates every device of a pipelined step running its calls in
// pccrt::pipelineOrder's order, where a forward waits for the previous
// stage's forward of its microbatch and a backward for the next stage's
// backward (and its own forward), as receives do, and a W part for its B
// part; sends never wait. Every order must run to the end, run each
// (microbatch, chunk) forward and backward (and W) once, and hold no more
// microbatches than the schedule promises.
//
//===----------------------------------------------------------------------===//

#include "pccrt/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

using pccrt::chunkInFlight;
using pccrt::chunkWeightsInFlight;
using pccrt::PipelineCall;
using pccrt::PipelineKind;
using pccrt::pipelineOrder;

namespace {

/// Whether every device finishes its `kind` order (with W parts:
/// `weightPasses`), each unit once.
bool runsToEnd(int64_t devices, int64_t chunks, int64_t microbatches,
               PipelineKind kind, bool weightPasses = false) {
  int64_t stages = devices * chunks;
  std::vector<std::vector<PipelineCall>> orders;
  for (int64_t d = 0; d < devices; ++d)
    orders.push_back(
        pipelineOrder(devices, chunks, d, microbatches, kind, weightPasses));
  // (pass: 0 forward, 1 B, 2 W; microbatch; stage)
  std::set<std::tuple<int, int64_t, int64_t>> done;
  std::vector<size_t> at(devices, 0);
  auto pass = [](const PipelineCall &c) {
    return c.weight ? 2 : c.backward ? 1 : 0;
  };
  auto ready = [&](int64_t d, const PipelineCall &c) {
    int64_t s = c.chunk * devices + d;
    if (c.weight)
      return done.count({1, c.microbatch, s}) > 0;
    if (!c.backward)
      return s == 0 || done.count({0, c.microbatch, s - 1});
    bool next = s == stages - 1 || done.count({1, c.microbatch, s + 1});
    return next && done.count({0, c.microbatch, s});
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (int64_t d = 0; d < devices; ++d)
      while (at[d] < orders[d].size() && ready(d, orders[d][at[d]])) {
        const PipelineCall &c = orders[d][at[d]++];
        if (!done.insert({pass(c), c.microbatch, c.chunk * devices + d}).second)
          return false;
        moved = true;
      }
  }
  for (int64_t d = 0; d < devices; ++d)
    if (at[d] != orders[d].size())
      return false;
  return int64_t(done.size()) ==
         (weightPasses ? 3 : 2) * stages * microbatches;
}

TEST(PipelineSchedule, OrdersFinishWithoutDeadlock) {
  for (int64_t devices = 1; devices <= 6; ++devices)
    for (int64_t chunks = 1; chunks <= 4; ++chunks)
      for (int64_t groups = 1; groups <= 4; ++groups)
        for (bool gpipe : {false, true})
          for (bool weightPasses : {false, true}) {
            // Interleaving runs microbatches in groups of `devices`.
            int64_t m = chunks > 1 ? groups * devices : groups;
            EXPECT_TRUE(runsToEnd(devices, chunks, m,
                                  gpipe ? PipelineKind::GPipe
                                        : PipelineKind::OneFOneB,
                                  weightPasses))
                << devices << " devices, " << chunks << " chunks, " << m
                << " microbatches" << (gpipe ? ", gpipe" : "")
                << (weightPasses ? ", W apart" : "");
          }
}

TEST(PipelineSchedule, ZeroBubbleFinishesAndHoldsWhatItPromises) {
  for (int64_t devices = 1; devices <= 6; ++devices)
    for (int64_t m = 1; m <= 12; ++m) {
      EXPECT_TRUE(runsToEnd(devices, 1, m, PipelineKind::ZeroBubbleH1, true))
          << devices << " devices, " << m << " microbatches";
      for (int64_t d = 0; d < devices; ++d) {
        std::vector<PipelineCall> zb = pipelineOrder(
            devices, 1, d, m, PipelineKind::ZeroBubbleH1, true);
        // Its forwards and B passes are 1F1B's, in 1F1B's order.
        std::vector<PipelineCall> fb;
        for (const PipelineCall &c : zb)
          if (!c.weight)
            fb.push_back(c);
        EXPECT_EQ(fb, pipelineOrder(devices, 1, d, m, false));
        // Device d holds back d W passes (as many as forwards are left
        // after its warm-up): one more between B and W.
        int64_t warm = std::min(devices - d - 1, m);
        EXPECT_EQ(chunkWeightsInFlight(zb, 1)[0],
                  std::min(std::min(d, m - warm) + 1, m));
        // What the planner counts: as much, where W runs apart from B.
        EXPECT_EQ(pccrt::zeroBubbleWeightsHeld(devices, d, m),
                  d ? chunkWeightsInFlight(zb, 1)[0] : 0);
        EXPECT_EQ(chunkInFlight(zb, 1)[0],
                  std::min<int64_t>(devices - d, m));
      }
    }
  // The last of 4 devices defers 3 W passes into its cooldown, the first
  // none.
  std::vector<PipelineCall> last =
      pipelineOrder(4, 1, 3, 8, PipelineKind::ZeroBubbleH1, true);
  ASSERT_EQ(last.size(), 24u);
  EXPECT_EQ(last[2], (PipelineCall{false, 1, 0}));
  EXPECT_TRUE(last.back().weight);
  EXPECT_EQ(last.back().microbatch, 7);
  std::vector<PipelineCall> first =
      pipelineOrder(4, 1, 0, 8, PipelineKind::ZeroBubbleH1, true);
  for (size_t i = 1; i < first.size(); ++i)
    if (first[i].weight)
      EXPECT_EQ(first[i - 1], (PipelineCall{true, first[i].microbatch, 0}));
}

TEST(PipelineSchedule, EachUnitOnce) {
  for (int64_t d = 0; d < 4; ++d) {
    std::vector<PipelineCall> calls = pipelineOrder(4, 3, d, 8, false);
    std::set<std::tuple<bool, int64_t, int64_t>> seen;
    for (const PipelineCall &c : calls)
      EXPECT_TRUE(seen.insert({c.backward, c.microbatch, c.chunk}).second);
    EXPECT_EQ(seen.size(), 2u * 3 * 8);
  }
}

TEST(PipelineSchedule, PlainOneFOneBHoldsStagesMinusStage) {
  // PipeDream-Flush: stage d holds devices - d microbatches at most.
  for (int64_t d = 0; d < 4; ++d)
    EXPECT_EQ(chunkInFlight(pipelineOrder(4, 1, d, 8, false), 1)[0], 4 - d);
  EXPECT_EQ(chunkInFlight(pipelineOrder(4, 1, 0, 2, false), 1)[0], 2);
  EXPECT_EQ(chunkInFlight(pipelineOrder(4, 1, 3, 8, true), 1)[0], 8);
}

TEST(PipelineSchedule, InFlightWithoutTheOrder) {
  for (int64_t devices = 1; devices <= 8; ++devices)
    for (int64_t chunks = 1; chunks <= 4; ++chunks)
      for (int64_t m = 1; m <= 24; ++m) {
        if (chunks > 1 && m % devices)
          continue;
        for (int64_t d = 0; d < devices; ++d)
          EXPECT_EQ(chunkInFlight(pipelineOrder(devices, chunks, d, m, false),
                                  chunks),
                    pccrt::chunkInFlightOf(devices, chunks, d, m))
              << devices << " devices, " << chunks << " chunks, " << m
              << " microbatches, device " << d;
      }
}

TEST(PipelineSchedule, InterleavedMatchesMegatron) {
  // 2 devices, 2 chunks, 4 microbatches: device 0 warms up with
  // (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4 forwards: microbatches 0, 1 through
  // chunk 0, then 0, 1 through chunk 1; its first backward is of
  // microbatch 0 through chunk 1 (the last stage's chunk).
  std::vector<PipelineCall> calls = pipelineOrder(2, 2, 0, 4, false);
  std::vector<PipelineCall> head(calls.begin(), calls.begin() + 6);
  std::vector<PipelineCall> want = {{false, 0, 0}, {false, 1, 0}, {false, 0, 1},
                                    {false, 1, 1}, {false, 2, 0}, {true, 0, 1}};
  EXPECT_EQ(head, want);
  // The last device starts backward after (2 - 1) * 2 = 2 forwards.
  calls = pipelineOrder(2, 2, 1, 4, false);
  EXPECT_TRUE(calls[3].backward);
  EXPECT_EQ(calls[3].chunk, 1);
}

} // namespace
