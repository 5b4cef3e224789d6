//===- Mesh.h - the device grid and its collectives --------------*- C++ -*-===//
//
// One process per device; MPI_COMM_WORLD rank k sits at the row-major
// coordinates of k in the mesh. Each group the model communicates over (a
// list of mesh axes, major first) gets one MPI sub-communicator of the
// devices that differ only along those axes, ranked by their in-group index.
// Generated code calls the collectives below; MPI stays out of its headers.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_MESH_H
#define PCCRT_MESH_H

#include "pccrt/Model.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pccrt {

class Mesh {
public:
  Mesh();
  ~Mesh();
  /// Initializes MPI when launched by mpirun (or always if `force`); without
  /// it the process is a one-device world.
  static void initProcess(int *argc, char ***argv);
  /// Meets every rank, then ends MPI.
  static void finalizeProcess();
  /// Seconds any one wait for other ranks may last before the job ends with
  /// a message naming the ranks that do not answer; 0 waits forever.
  static void setTimeout(double seconds);
  /// Waits until every process gets here.
  static void barrier();
  static int worldRank();
  static int worldSize();
  static bool usingMPI();
  /// Sum / minimum of `v` over all processes (just `v` without MPI).
  static int sumOverWorld(int v);
  static int minOverWorld(int v);
  /// Rank 0 receives every process's `bytes` bytes of `local`, in rank
  /// order, into `all` (ignored elsewhere).
  static void gatherToRoot(const void *local, size_t bytes, void *all);
  /// Ends every process now, after `message` was printed (MPI_Abort).
  [[noreturn]] static void abortWorld(int code);

  /// Sets up the model's mesh and communicators. Collective over the world.
  void create(const ModelInfo &model);

  int rank() const { return rank_; }
  int64_t coord(int axis) const { return coords_[axis]; }
  const int64_t *coords() const { return coords_.data(); }
  const int64_t *shape() const { return shape_.data(); }
  /// In-group index of this device in communication group `g`.
  int64_t groupIndex(int g) const;
  int64_t groupSize(int g) const;

  struct Impl;
  Impl &impl() { return *impl_; }

private:
  int rank_ = 0;
  std::vector<int64_t> shape_, coords_;
  std::vector<GroupDesc> groups_;
  std::unique_ptr<Impl> impl_;
};

/// Index of this device's block among all blocks of a tensor split as
/// `splits` (row-major over the dims' block counts): where its shard of a
/// weight lies in the weights file.
inline int64_t blockIndex(const Mesh &mesh, int rank, const DimSplit *splits) {
  int64_t index = 0;
  for (int d = 0; d < rank; ++d)
    index = index * splitCount(splits[d], mesh.shape()) +
            splitIndex(splits[d], mesh.shape(), mesh.coords());
  return index;
}

/// out = sum over group `g` of in (in may equal out), count elements.
void allReduceSum(Mesh &mesh, int g, DType t, const void *in, void *out,
                  int64_t count);
/// in is [outer, block]; out is [outer, n * block] with device r's block at
/// position r (block in bytes).
void allGather(Mesh &mesh, int g, const void *in, void *out, int64_t outer,
               int64_t blockBytes);
/// in is [outer, n * block]; out is this device's block [outer, block] of
/// the sum over group `g` (block in elements).
void reduceScatterSum(Mesh &mesh, int g, DType t, const void *in, void *out,
                      int64_t outer, int64_t blockCount);
/// in is [outer, n * block]; out is this device's block (no communication).
void allSlice(Mesh &mesh, int g, const void *in, void *out, int64_t outer,
              int64_t blockBytes);

} // namespace pccrt

#endif // PCCRT_MESH_H
