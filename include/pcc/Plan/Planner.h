//===- Planner.h - choose how to spread a model over devices ----*- C++ -*-===//
//
// The search: every factorisation of the devices into data x pipeline x
// tensor x sequence groups, the tensor group 1D (t), 2D (q x q), 2.5D
// (q x q x d) or 3D (q x q x q); every microbatch size; with and without
// activation recompute and ZeRO stages when training. Per-op layouts on a 1D
// tensor axis come from the exact search (ShardingSearch.h): candidates are
// priced on a seed layout (searched once per tensor size, recompute setting and
// batch split, weights priced rather than budgeted), and the fastest few are
// searched again on their own and keep the better of the two; 2D/2.5D/3D
// linear layers follow Colossal-AI's algorithms (SUMMA, Tesseract, 3D
// matmul) and are costed in closed form. Pipeline stages are contiguous runs
// of nodes (whole copies of a repeated block) balanced by time; the schedule
// is 1F1B. A candidate is feasible when its memory per device fits.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_PLAN_PLANNER_H
#define PCC_PLAN_PLANNER_H

#include "pcc/Plan/Cluster.h"
#include "pcc/Plan/PlanGraph.h"
#include "pcc/Plan/ShardingSearch.h"
#include "pcc/Sharding/ParallelPlan.h"

#include <functional>
#include <memory>
#include <optional>

namespace pcc {

/// How far a search has got (PlanOptions::progress).
struct PlanProgress {
  /// Pipeline depths enumerated, of those to try; candidates priced and
  /// exact layout searches run so far; seconds since the search began.
  int64_t depthsDone = 0, depths = 0, candidates = 0, searches = 0;
  double seconds = 0;
  /// Set on the last call, when the search has ended.
  bool done = false;
};

struct PlanOptions {
  int64_t devices = 1;
  bool train = false;
  /// Activation recompute when training: unset = searched.
  std::optional<Recompute> recompute;
  /// ZeRO stage over dp when training (0 none, 1/2 optimizer state split,
  /// 3 parameters too): unset = searched.
  std::optional<int64_t> zero;
  /// Forced degrees (0 = searched) and tensor mode.
  int64_t dp = 0, pp = 0, tp = 0, sp = 0, microbatches = 0;
  /// Training: initializers not trained (--freeze): held, without
  /// gradient or optimizer state.
  std::vector<std::string> frozen;
  /// Chunks of layers per pipeline device (interleaved 1F1B, training):
  /// 0 = searched, 1 = plain 1F1B.
  int64_t ppVirtual = 0;
  /// Training pipelines' schedule: unset = searched; false = the 1F1B
  /// family (plain or interleaved); true = zero-bubble ZB-H1 (planned
  /// only: no back end runs it yet).
  std::optional<bool> zeroBubble;
  /// Samples in one microbatch of one data-parallel replica (Megatron's
  /// --micro-batch-size; 0 = searched).
  int64_t microbatchSize = 0;
  std::optional<TensorMode> tpMode;
  /// 2.5D depth (0 = searched).
  int64_t tpDepth = 0;
  /// How an sp axis runs attention: unset = searched.
  std::optional<SequenceMode> spMode;
  /// What the back end runs (Codegen/Target.h): why a plan cannot run, or
  /// nothing. Unset: no candidate counts as runnable.
  std::function<std::optional<std::string>(const ParallelPlan &)> cannotRun;
  /// Search only plans the back end runs.
  bool runnableOnly = false;
  /// The 1D tensor-parallel layouts of a fixed scheme (Megatron's, with or
  /// without sequence parallelism; one per graph node) for the given
  /// data-parallel and tensor degrees, as the partitioner derives them.
  /// Unset: the search tries its own layouts only.
  std::function<std::vector<OpSharding>(int64_t dp, int64_t tp,
                                        TensorLayouts scheme)>
      schemeLayouts;
  /// 1D layouts: only this scheme's (a forced --tp-layout) when set; else
  /// the search's own and each scheme's, so that no forced scheme beats
  /// the searched plan.
  std::optional<TensorLayouts> layoutScheme;
  /// The layouts on the sp axis (one per graph node, sp as axis 0) of
  /// `dp` x `sp` sequence parallelism in `mode`, as the partitioner derives
  /// them. Unset: no sequence-parallel candidates.
  std::function<std::vector<OpSharding>(int64_t dp, int64_t sp,
                                        SequenceMode mode)>
      sequenceLayouts;
  /// The layouts of a 2D / 2.5D tensor grid (one per graph node, on the
  /// grid's axes numbered from 0: [depth,] rows, columns), as the
  /// partitioner derives them. Unset: closed-form grid costs.
  std::function<std::vector<OpSharding>(int64_t dp, int64_t tp,
                                        TensorMode mode, int64_t depth)>
      gridLayouts;
  /// Called as the search goes (about every 0.1 s) and once when it ends.
  std::function<void(const PlanProgress &)> progress;
};

struct PlanCandidate {
  int64_t dp = 1, pp = 1, tp = 1, sp = 1, microbatches = 1;
  /// Interleaved 1F1B: chunks of layers per pipeline device (1: none).
  int64_t virtualStages = 1;
  /// Zero-bubble ZB-H1 (Qi et al. 2023) instead of 1F1B: each backward's
  /// weight-gradient half (W) deferred into the bubble.
  bool zeroBubble = false;
  /// Training: the slowest pipeline device's weight-gradient products per
  /// microbatch, in seconds (W, the part ZB-H1 defers).
  double weightGradTime = 0;
  TensorMode mode = TensorMode::OneD;
  /// Where 1D layouts come from: the search, or a scheme.
  TensorLayouts layouts = TensorLayouts::Planned;
  SequenceMode spMode = SequenceMode::Ulysses;
  /// 2D/2.5D/3D grid: q x q (x depth).
  int64_t q = 1, depth = 1;
  Recompute recompute = Recompute::None;
  /// ZeRO stage over dp (training with dp > 1 only).
  int64_t zero = 0;
  /// Predicted seconds per step (one batch; forward + backward + optimizer
  /// when training) and its parts.
  /// Of dataParallel: the all-reduces of sums over the batch, the loss's
  /// and batch statistics' (PlanGraph::batchSums).
  double lossSums = 0;
  double stepTime = 0, compute = 0, comm = 0, bubble = 0, dataParallel = 0,
         optimizer = 0;
  /// Searched layouts priced by a seed: the step of the fastest scheme
  /// priced at the same degrees, when faster. Their own search holds the
  /// scheme's layouts too, so it may reach that step where the seed (found
  /// for another batch share) did not: the refinement orders by it.
  double promise = INFINITY;
  /// Bytes per device (the fullest pipeline stage).
  double memory = 0, weightMemory = 0, stateMemory = 0, activationMemory = 0;
  /// FLOPs each device executes per step (recompute included) and the rate.
  double flopsPerDevice = 0, tflopsPerDevice = 0;
  bool fits = true, runnable = false;
  /// First node of each pipeline stage (pp x virtualStages of them; stage
  /// s runs on pipeline device s % pp).
  std::vector<int> stageBegin;
  /// A value one pipeline stage sends another, per microbatch (as the
  /// compiler cuts the program: one send per value and receiving stage).
  struct StageTransfer {
    int producer = -1;
    int64_t from = 0, to = 0;
    /// Bytes per device, and seconds of one send.
    double bytes = 0, seconds = 0;
  };
  std::vector<StageTransfer> transfers;
  /// 1D: the per-op layouts (shared between candidates with equal inputs).
  std::shared_ptr<const SearchResult> layout;
  /// With sp > 1: the layouts on the sp axis, priced (their collectives are
  /// the sequence-parallel ones).
  std::shared_ptr<const SearchResult> sequenceLayout;

  std::string label() const;
  /// The plan object of this candidate (per-op layouts excluded).
  ParallelPlan toPlan(bool train) const;
};

struct Plan {
  PlanCandidate best;
  /// Feasible candidates, fastest first (the best included), then the
  /// fastest that did not fit.
  std::vector<PlanCandidate> considered;
  int64_t evaluated = 0, ilpSolves = 0, infeasible = 0;
  double seconds = 0;
};

/// A tensor group of `size` devices in `mode`: its grid (q, depth), or
/// nothing when the size does not form that grid. 2.5D takes
/// `forcedDepth`, else the smallest depth >= 2 whose layer is a square.
std::optional<std::pair<int64_t, int64_t>>
tensorGrid(TensorMode mode, int64_t size, int64_t forcedDepth = 0);

llvm::Expected<Plan> makePlan(const PlanGraph &graph,
                              const ClusterSpec &cluster,
                              const PlanOptions &options);

/// Ranks are row-major over the mesh axes in kAxisRoles order (PCCAttrs.h):
/// (pp, dp, sp, tensor axes), the tensor axes fastest. True if a group of
/// `size` ranks `stride` apart spans more than one node.
bool groupCrossesNodes(int64_t stride, int64_t size,
                       const ClusterSpec &cluster);

/// The replicas a gradient is summed over in data parallelism's bucket:
/// data and sequence groups (the 2.5D depth's sum is a grid sum, priced
/// with the grid's layouts); and whether they span nodes.
struct ReplicaGroup {
  int64_t size = 1;
  bool crossesNodes = false;
};
ReplicaGroup gradientReplicas(const PlanCandidate &c,
                              const ClusterSpec &cluster);
/// The replicas a sum over the batch (the loss's, batch statistics') is
/// summed over: the ones the batch is split over (dp, the 2.5D depth). A
/// sum over a split sequence is the sequence layouts' own collective.
ReplicaGroup batchReplicas(const PlanCandidate &c, const ClusterSpec &cluster);

/// The grid a 2D / 2.5D / 3D tensor mode's layouts are priced on: q x q
/// (tp_row, tp_col), depth x q x q (tp_dep first) or q x q x q (tp_x,
/// tp_y, tp_z), as the partitioner's program mesh names them.
Mesh tensorGridMesh(TensorMode mode, int64_t q, int64_t depth);

} // namespace pcc

#endif // PCC_PLAN_PLANNER_H
