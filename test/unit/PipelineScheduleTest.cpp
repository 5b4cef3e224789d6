//===- PipelineScheduleTest.cpp - pipeline orders finish and hold little --===//
//
// Simulates every device of a pipelined step running its calls in
// pccrt::pipelineOrder's order, where a forward waits for the previous
// stage's forward of its microbatch and a backward for the next stage's
// backward (and its own forward), as receives do; sends never wait. Every
// order must run to the end, run each (microbatch, chunk) forward and
// backward once, and hold no more microbatches than the schedule promises.
//
//===----------------------------------------------------------------------===//

#include "pccrt/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

using pccrt::chunkInFlight;
using pccrt::PipelineCall;
using pccrt::pipelineOrder;

namespace {

/// Whether every device finishes; `done` gets the units run.
bool runsToEnd(int64_t devices, int64_t chunks, int64_t microbatches,
               bool gpipe) {
  int64_t stages = devices * chunks;
  std::vector<std::vector<PipelineCall>> orders;
  for (int64_t d = 0; d < devices; ++d)
    orders.push_back(pipelineOrder(devices, chunks, d, microbatches, gpipe));
  std::set<std::tuple<bool, int64_t, int64_t>> done; // backward, mb, stage
  std::vector<size_t> at(devices, 0);
  auto ready = [&](int64_t d, const PipelineCall &c) {
    int64_t s = c.chunk * devices + d;
    if (!c.backward)
      return s == 0 || done.count({false, c.microbatch, s - 1});
    bool next = s == stages - 1 || done.count({true, c.microbatch, s + 1});
    return next && done.count({false, c.microbatch, s});
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (int64_t d = 0; d < devices; ++d)
      while (at[d] < orders[d].size() && ready(d, orders[d][at[d]])) {
        const PipelineCall &c = orders[d][at[d]++];
        done.insert({c.backward, c.microbatch, c.chunk * devices + d});
        moved = true;
      }
  }
  for (int64_t d = 0; d < devices; ++d)
    if (at[d] != orders[d].size())
      return false;
  return int64_t(done.size()) == 2 * stages * microbatches;
}

TEST(PipelineSchedule, OrdersFinishWithoutDeadlock) {
  for (int64_t devices = 1; devices <= 6; ++devices)
    for (int64_t chunks = 1; chunks <= 4; ++chunks)
      for (int64_t groups = 1; groups <= 4; ++groups)
        for (bool gpipe : {false, true}) {
          // Interleaving runs microbatches in groups of `devices`.
          int64_t m = chunks > 1 ? groups * devices : groups;
          EXPECT_TRUE(runsToEnd(devices, chunks, m, gpipe))
              << devices << " devices, " << chunks << " chunks, " << m
              << " microbatches" << (gpipe ? ", gpipe" : "");
        }
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
