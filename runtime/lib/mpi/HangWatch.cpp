//===- HangWatch.cpp - waits that end a hung job --------------------------===//
//
// Liveness messages are three ints {kind, sender, what the sender waits in}
// on a duplicate of MPI_COMM_WORLD, so they never match the model's own
// traffic. Every rank keeps one receive posted there; only ranks inside
// waitFor() look at it, which is exactly the point: a rank that never gets
// there does not answer.
//
//===----------------------------------------------------------------------===//

#include "HangWatch.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <deque>
#include <sched.h>
#include <string>
#include <time.h>
#include <vector>

namespace pccrt {
namespace {

using Clock = std::chrono::steady_clock;

enum MessageKind : int { Probe = 1, Answer = 2 };

double timeoutSeconds = 600;
MPI_Comm watch = MPI_COMM_NULL;
MPI_Request inbox = MPI_REQUEST_NULL;
int inboxMessage[3];
int worldRank = 0, worldSize = 1;
WaitKind current = WaitKind::None;

/// Outgoing messages live until the process ends: sends are fire-and-forget
/// and their buffers must outlive them. Only hang reports send anything.
std::deque<std::array<int, 3>> outgoing;

/// Per report: who answered, what they wait in, and the lowest rank that is
/// reporting too (it prints; the others stay quiet).
std::vector<int> answeredWhat;
int lowestReporter = 0;

const char *describe(int what) {
  switch (static_cast<WaitKind>(what)) {
  case WaitKind::Agreement: return "the setup agreement";
  case WaitKind::AllReduce: return "an all-reduce";
  case WaitKind::AllGather: return "an all-gather";
  case WaitKind::ReduceScatter: return "a reduce-scatter";
  case WaitKind::GatherOutputs: return "gathering outputs";
  case WaitKind::Barrier: return "a barrier";
  case WaitKind::Send: return "sending to the next pipeline stage";
  case WaitKind::Receive: return "receiving from an earlier pipeline stage";
  case WaitKind::AllToAll: return "an all-to-all";
  case WaitKind::Broadcast: return "a broadcast";
  case WaitKind::RingShift: return "passing key/value blocks around a ring";
  default: return "a communication";
  }
}

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void post() {
  MPI_Irecv(inboxMessage, 3, MPI_INT, MPI_ANY_SOURCE, 0, watch, &inbox);
}

void send(int dest, MessageKind kind) {
  outgoing.push_back({kind, worldRank, static_cast<int>(current)});
  MPI_Request r;
  MPI_Isend(outgoing.back().data(), 3, MPI_INT, dest, 0, watch, &r);
  MPI_Request_free(&r);
}

/// Answers probes and records answers that have arrived.
void serviceInbox() {
  for (;;) {
    int arrived = 0;
    MPI_Test(&inbox, &arrived, MPI_STATUS_IGNORE);
    if (!arrived)
      return;
    int kind = inboxMessage[0], from = inboxMessage[1];
    if (from >= 0 && from < worldSize) {
      if (kind == Probe) {
        send(from, Answer);
        lowestReporter = std::min(lowestReporter, from);
      } else if (kind == Answer && !answeredWhat.empty()) {
        answeredWhat[from] = inboxMessage[2];
      }
    }
    post();
  }
}

/// Yields the core once a wait is long: with more ranks than cores the rank
/// being waited for may need it.
void pause(long iteration) {
  if (iteration < 2000)
    return;
  if (iteration < 20000) {
    sched_yield();
    return;
  }
  timespec t = {0, 20000};
  nanosleep(&t, nullptr);
}

std::string rankList(const std::vector<int> &ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

/// Called once `request` has waited past the timeout. Returns if it
/// completes during the grace period; otherwise ends the job.
void reportHang(MPI_Request &request, WaitKind kind, double waited) {
  answeredWhat.assign(worldSize, -1);
  answeredWhat[worldRank] = static_cast<int>(kind);
  lowestReporter = worldRank;
  for (int r = 0; r < worldSize; ++r)
    if (r != worldRank)
      send(r, Probe);
  double grace = std::min(10.0, std::max(1.0, timeoutSeconds / 2));
  auto start = Clock::now();
  for (long i = 0; secondsSince(start) < grace; ++i) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) {
      answeredWhat.clear();
      return;
    }
    serviceInbox();
    pause(i + 2000);
  }
  // A lower rank reports the same hang; leave the line to it.
  if (lowestReporter < worldRank) {
    auto quiet = Clock::now();
    for (long i = 0; secondsSince(quiet) < 2 * grace; ++i) {
      serviceInbox();
      pause(i + 2000);
    }
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::vector<int> silent;
  for (int r = 0; r < worldSize; ++r)
    if (answeredWhat[r] < 0)
      silent.push_back(r);
  char head[160];
  std::snprintf(head, sizeof(head), "error: rank %d: waited %.0f s in %s; ",
                worldRank, waited, describe(static_cast<int>(kind)));
  std::string line = head;
  if (!silent.empty()) {
    line += std::string(silent.size() == 1 ? "rank " : "ranks ") +
            rankList(silent) + (silent.size() == 1 ? " does" : " do") +
            " not answer (stopped, deadlocked, or stuck outside "
            "communication); ending the job (--timeout sets the limit)";
  } else {
    line += "every rank answers but they wait in different places (";
    for (int r = 0; r < worldSize; ++r)
      line += (r ? ", rank " : "rank ") + std::to_string(r) + ": " +
              describe(answeredWhat[r]);
    line += "); ending the job";
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

} // namespace

void setWaitTimeout(double seconds) { timeoutSeconds = seconds; }

void startHangWatch() {
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  MPI_Comm_dup(MPI_COMM_WORLD, &watch);
  post();
}

void stopHangWatch() {
  if (watch == MPI_COMM_NULL)
    return;
  MPI_Cancel(&inbox);
  MPI_Wait(&inbox, MPI_STATUS_IGNORE);
  MPI_Comm_free(&watch);
  watch = MPI_COMM_NULL;
}

void waitFor(MPI_Request &request, WaitKind kind) {
  if (watch == MPI_COMM_NULL) {
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    return;
  }
  WaitKind outer = current;
  current = kind;
  auto start = Clock::now();
  for (long i = 0;; ++i) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done)
      break;
    serviceInbox();
    if (timeoutSeconds > 0 && (i & 63) == 0) {
      double waited = secondsSince(start);
      if (waited > timeoutSeconds) {
        reportHang(request, kind, waited);
        break;
      }
    }
    pause(i);
  }
  current = outer;
}

} // namespace pccrt
