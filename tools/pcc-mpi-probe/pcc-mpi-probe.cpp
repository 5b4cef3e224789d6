//===- pcc-mpi-probe.cpp - measure MPI all-reduce latency and bandwidth ---===//
//
//   mpirun -np N pcc-mpi-probe
//
// Run by `pcc calibrate`. Times MPI_Allreduce on a tiny and a large buffer
// and prints, on rank 0, one JSON line with the alpha-beta link parameters
// that reproduce them under the ring model of pcc's cost model.
//
//===----------------------------------------------------------------------===//

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

/// Median seconds of one MPI_Allreduce of `count` floats.
double timeAllReduce(int count, int reps) {
  std::vector<float> in(count, 1.0f), out(count);
  std::vector<double> times;
  for (int r = 0; r < reps + 2; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    // Every rank agrees on the slowest rank's time.
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (r >= 2)
      times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int small = 2, large = 4 << 20; // floats: 8 B and 16 MiB
  double tSmall = timeAllReduce(small, 200);
  double tLarge = timeAllReduce(large, 10);
  if (rank == 0) {
    double steps = 2.0 * (size - 1);
    double latency = size > 1 ? tSmall / steps : 0;
    double bytes = 4.0 * large;
    double ring = size > 1 ? 2.0 * (size - 1) / size : 0;
    double transfer = std::max(tLarge - steps * latency, 1e-9);
    std::printf("{\"ranks\": %d, \"latency_s\": %.9g, \"bandwidth_bytes_s\": "
                "%.9g, \"allreduce_small_s\": %.9g, \"allreduce_16mib_s\": "
                "%.9g}\n",
                size, latency, ring * bytes / transfer, tSmall, tLarge);
  }
  MPI_Finalize();
  return 0;
}
