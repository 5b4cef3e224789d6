//===- HangWatch.h - waits that end a hung job -------------------*- C++ -*-===//
//
// Private to the runtime. Every wait on MPI goes through waitFor(): it polls
// the request, and while polling answers liveness probes from other ranks on
// a communicator of its own. A rank that waits longer than the timeout
// probes every other rank; ranks that do not answer within a grace period
// are stopped, deadlocked, or stuck outside communication, and the job ends
// with one line naming them. A wait that completes during the grace period
// was only slow, and the run goes on.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_LIB_HANGWATCH_H
#define PCCRT_LIB_HANGWATCH_H

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

namespace pccrt {

/// What a rank waits in; names the wait in hang reports.
enum class WaitKind : int {
  None = 0,
  Agreement,
  AllReduce,
  AllGather,
  ReduceScatter,
  GatherOutputs,
  Barrier,
  Send,
  Receive,
  AllToAll,
  Broadcast,
  RingShift,
};

/// Seconds one wait may last before the job is ended; 0 waits forever.
void setWaitTimeout(double seconds);

/// Starts and stops the liveness channel; both are collective over
/// MPI_COMM_WORLD (start after MPI_Init, stop before MPI_Finalize).
void startHangWatch();
void stopHangWatch();

/// Waits for `request` to complete, or ends the job as described above.
void waitFor(MPI_Request &request, WaitKind kind);

} // namespace pccrt

#endif // PCCRT_LIB_HANGWATCH_H
