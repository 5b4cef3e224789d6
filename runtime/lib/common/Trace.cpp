//===- Trace.cpp - a timeline of one run, per rank ------------------------===//

#include "pccrt/Trace.h"

#include "pccrt/Mesh.h"

#include <chrono>
#include <cstdio>
#include <vector>

namespace pccrt {
namespace {

/// Fixed-size records, so that ranks can gather them as bytes.
struct Event {
  double start, end; // microseconds since the trace began
  int64_t microbatch, bytes, peer;
  TraceKind kind;
  int32_t pad = 0;
};

struct Recorder {
  bool on = false;
  std::chrono::steady_clock::time_point origin;
  double lastEnd = 0;
  int64_t microbatch = -1;
  std::vector<Event> events;

  double now() const {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now() - origin)
        .count();
  }
  /// The compute since the last event of this run, if any.
  void closeCompute(double until) {
    if (microbatch >= 0 && until > lastEnd)
      events.push_back({lastEnd, until, microbatch, 0, -1, TraceKind::Compute});
  }
};

Recorder &recorder() {
  static Recorder r;
  return r;
}

const char *kindName(TraceKind k) {
  switch (k) {
  case TraceKind::Compute: return "compute";
  case TraceKind::AllReduce: return "all_reduce";
  case TraceKind::AllGather: return "all_gather";
  case TraceKind::ReduceScatter: return "reduce_scatter";
  case TraceKind::Send: return "send";
  case TraceKind::Receive: return "recv";
  case TraceKind::AllToAll: return "all_to_all";
  case TraceKind::RingShift: return "ring_shift";
  case TraceKind::Broadcast: return "broadcast";
  }
  return "?";
}

} // namespace

void traceEnable(bool on) {
  Recorder &r = recorder();
  if (on && !r.on) {
    // Ranks start their clocks together, so rows line up.
    Mesh::barrier();
    r.origin = std::chrono::steady_clock::now();
  }
  r.on = on;
}

void traceRunBegin(int64_t k) {
  Recorder &r = recorder();
  if (!r.on)
    return;
  r.microbatch = k;
  r.lastEnd = r.now();
}

void traceRunEnd() {
  Recorder &r = recorder();
  if (!r.on)
    return;
  r.closeCompute(r.now());
  r.microbatch = -1;
}

TraceSpan::TraceSpan(TraceKind kind, int64_t bytes, int64_t peer)
    : kind(kind), bytes(bytes), peer(peer), on(recorder().on) {
  if (!on)
    return;
  Recorder &r = recorder();
  start = r.now();
  r.closeCompute(start);
}

TraceSpan::~TraceSpan() {
  if (!on)
    return;
  Recorder &r = recorder();
  double end = r.now();
  r.events.push_back({start, end, r.microbatch, bytes, peer, kind});
  r.lastEnd = end;
}

std::string writeTrace(const std::string &path, const int64_t *stageOfRank) {
  Recorder &r = recorder();
  int n = Mesh::worldSize();
  // Pad every rank's events to the longest list, then gather them as bytes.
  int64_t count = r.events.size(), most = 0;
  std::vector<int64_t> counts(Mesh::worldRank() == 0 ? n : 0);
  Mesh::gatherToRoot(&count, sizeof(count), counts.data());
  for (int64_t c : counts)
    most = std::max(most, c);
  most = Mesh::sumOverWorld(Mesh::worldRank() == 0 ? int(most) : 0);
  std::vector<Event> mine(r.events);
  mine.resize(most);
  std::vector<Event> all(Mesh::worldRank() == 0 ? most * n : 0);
  Mesh::gatherToRoot(mine.data(), most * sizeof(Event), all.data());
  if (Mesh::worldRank() != 0)
    return "";
  std::string tmp = path + ".pcc-tmp";
  FILE *f = std::fopen(tmp.c_str(), "w");
  if (!f)
    return "cannot write trace '" + path + "'";
  std::fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  bool first = true;
  for (int rank = 0; rank < n; ++rank) {
    std::string row = "rank " + std::to_string(rank);
    if (stageOfRank)
      row += " (stage " + std::to_string(stageOfRank[rank]) + ")";
    std::fprintf(f,
                 "%s{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, "
                 "\"tid\": %d, \"args\": {\"name\": \"%s\"}}",
                 first ? "" : ",\n", rank, row.c_str());
    first = false;
    for (int64_t i = 0; i < counts[rank]; ++i) {
      const Event &e = all[rank * most + i];
      std::fprintf(f,
                   ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", "
                   "\"pid\": 0, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
                   "\"args\": {\"microbatch\": %lld, \"bytes\": %lld",
                   kindName(e.kind),
                   e.kind == TraceKind::Compute ? "compute" : "communication",
                   rank, e.start, e.end - e.start,
                   static_cast<long long>(e.microbatch),
                   static_cast<long long>(e.bytes));
      if (e.peer >= 0)
        std::fprintf(f, ", \"peer_stage\": %lld", static_cast<long long>(e.peer));
      std::fprintf(f, "}}");
    }
  }
  std::fprintf(f, "\n]}\n");
  bool ok = std::fflush(f) == 0;
  ok &= std::fclose(f) == 0;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return "cannot write trace '" + path + "'";
  }
  return "";
}

} // namespace pccrt
