//===- Mesh.h - the device grid and its collectives --------------*- C++ -*-===//
//
// One process per device; MPI_COMM_WORLD rank k sits at the row-major
// coordinates of k in the mesh. Each group the model communicates over (a
// list of mesh axes, major first) gets one Communicator (Communicator.h) of
// the devices that differ only along those axes, ranked by their in-group
// index. Generated code calls the collectives in Kernels.h; MPI stays out
// of the headers.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_MESH_H
#define PCCRT_MESH_H

#include "pccrt/Kernels.h"
#include "pccrt/Model.h"
#include "pccrt/PipelineSchedule.h"
#include "pccrt/ShardLayout.h"

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
  /// The microbatch (the coordinate on the model's microbatch axis) the
  /// next run computes; see ModelInfo::microbatchAxis.
  void setMicrobatch(int64_t k);
  /// The microbatch the run computes, and how many a step has.
  int64_t microbatch() const {
    return microbatchAxis_ < 0 ? 0 : coords_[microbatchAxis_];
  }
  int64_t microbatches() const {
    return microbatchAxis_ < 0 ? 1 : shape_[microbatchAxis_];
  }
  /// What a call of the model's run computes: the whole microbatch (its
  /// forward, backward and, after the last, the update), a prologue run
  /// (ModelInfo::prologue), or one phase of a pipeline schedule
  /// (ModelInfo::phased; a zero-bubble program's backward as Backward, its
  /// input's gradient, then BackwardWeight, the weights').
  enum class Phase { Whole, Prologue, Forward, Backward, BackwardWeight, Update };
  void setPhase(Phase p) { phase_ = p; }
  Phase phase() const { return phase_; }
  /// This device's calls of a pipelined step, in order (PipelineSchedule.h:
  /// 1F1B, interleaved when the model has virtual stages, GPipe, or ZB-H1;
  /// with `weightPasses` each backward's W part a call of its own); sets
  /// each chunk's stash slots and which W parts run apart from their B.
  std::vector<PipelineCall> pipelineOrder(PipelineKind kind,
                                          bool weightPasses);
  /// The chunk of layers (interleaved 1F1B) the next run computes, and the
  /// pipeline stage that is (chunk * pp devices + pp coordinate).
  void setChunk(int64_t c) { chunk_ = c; }
  int64_t chunk() const { return chunk_; }
  int64_t chunks() const { return chunks_; }
  int64_t stage() const {
    return stageAxis_ < 0 ? 0
                          : chunk_ * shape_[stageAxis_] + coords_[stageAxis_];
  }
  /// Microbatches this chunk holds between their forward and backward, and
  /// between their B and W parts.
  int64_t stashSlots() const;
  int64_t weightStashSlots() const;
  /// Whether the running microbatch's W part runs apart from its B (other
  /// calls between them): what W reads is then kept (weightStashSlot).
  bool weightsApart() const;
  /// Waits until every send of the run has been received.
  void finishSends();
  /// Devices of the model's mesh (its microbatch axis has none).
  static int64_t devicesOf(const ModelInfo &model);
  /// Mesh coordinates of world rank `rank` (microbatch coordinate 0).
  static void coordsOfRank(const ModelInfo &model, int rank, int64_t *coords);
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
  int microbatchAxis_ = -1, stageAxis_ = -1;
  Phase phase_ = Phase::Whole;
  int64_t chunk_ = 0, chunks_ = 1;
  std::vector<int64_t> slots_, weightSlots_;
  /// Per chunk * microbatches + microbatch: its W runs apart from its B.
  std::vector<char> weightsApart_;
  std::unique_ptr<Impl> impl_;
};

} // namespace pccrt

#endif // PCCRT_MESH_H
