//===- Trace.h - a timeline of one run, per rank ----------------*- C++ -*-===//
//
// `model --trace FILE` records, on every rank, when it communicates (each
// collective, send and receive, with its bytes) and the compute between
// (each span tagged with its microbatch), and rank 0 writes them all as one
// Chrome trace / Perfetto JSON file: one row per rank, so bubbles and
// communication show at a glance. Off, a span costs one branch.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_TRACE_H
#define PCCRT_TRACE_H

#include <cstdint>
#include <string>

namespace pccrt {

enum class TraceKind : int32_t {
  Compute,
  AllReduce,
  AllGather,
  ReduceScatter,
  Send,
  Receive,
  AllToAll,
  RingShift,
  Broadcast,
};

/// Starts recording (`on`) or stops.
void traceEnable(bool on);
/// A run of microbatch `k` starts / ends: compute spans are the time between
/// communication inside it.
void traceRunBegin(int64_t k);
void traceRunEnd();

/// Records one communication step from construction to destruction.
class TraceSpan {
public:
  TraceSpan(TraceKind kind, int64_t bytes, int64_t peer = -1);
  ~TraceSpan();

private:
  TraceKind kind;
  int64_t bytes, peer;
  double start = 0;
  bool on;
};

/// Collective over all ranks: rank 0 writes every rank's events to `path`
/// (rows named "rank R", with the stage when `stageOfRank` says one).
/// Returns an error message, or "".
std::string writeTrace(const std::string &path, const int64_t *stageOfRank);

} // namespace pccrt

#endif // PCCRT_TRACE_H
