//===- ParallelPlan.h - the one plan object ---------------------*- C++ -*-===//
//
// How a model is spread over devices: the mesh (axes by role, in rank order),
// the tensor scheme, where per-op tensor layouts come from, microbatches and
// recompute. The planner produces it (or pcc builds it from forced flags);
// it travels on the module as #pcc.plan (module attribute `pcc.plan`); the
// pcc-apply-plan pass applies it; plan.json is written from it. A back end
// states once which plans it runs (see Codegen/Target.h).
//
//===----------------------------------------------------------------------===//

#ifndef PCC_SHARDING_PARALLELPLAN_H
#define PCC_SHARDING_PARALLELPLAN_H

#include "pcc/Sharding/Sharding.h"

#include <optional>

namespace pcc {

enum class TensorMode { OneD, TwoD, TwoPointFiveD, ThreeD };
llvm::StringRef tensorModeName(TensorMode mode);
std::optional<TensorMode> parseTensorMode(llvm::StringRef name);

/// Where the per-op layouts on a 1D tensor axis come from.
enum class TensorLayouts {
  /// Megatron-LM's: column- then row-parallel linear layers,
  /// vocabulary-parallel embeddings.
  Megatron,
  /// The planner's exact search, recorded on each op (kPlannedShardingAttr).
  Planned,
  /// Megatron-LM's with sequence parallelism (Korthikanti et al. 2022):
  /// between tensor-parallel layers activations hold the sequence split over
  /// the tensor axis; a row-parallel layer's all-reduce becomes a
  /// reduce-scatter, a column-parallel layer's input an all-gather.
  MegatronSequence,
};

/// How a sequence-parallel axis (sp) runs attention; everything else holds
/// the sequence split either way.
enum class SequenceMode {
  /// DeepSpeed-Ulysses: an all-to-all turns the sequence split into a head
  /// split for attention, and another turns it back.
  Ulysses,
  /// Ring attention: each device keeps its query block while the key/value
  /// blocks pass around the sp group.
  Ring,
};
/// "ulysses", "ring".
llvm::StringRef sequenceModeName(SequenceMode mode);
std::optional<SequenceMode> parseSequenceMode(llvm::StringRef name);

/// Activation recompute in a training step's repeated layers.
enum class Recompute {
  None,
  /// Megatron-LM's full granularity: keep each layer's input, recompute
  /// the rest in the backward pass.
  Full,
  /// Keep each layer's input and its matrix products' (and attention's)
  /// results; recompute the ops between them (norms, activations,
  /// elementwise chains): little arithmetic for their bytes.
  Selective,
};
/// "none", "full", "selective".
llvm::StringRef recomputeName(Recompute r);
std::optional<Recompute> parseRecompute(llvm::StringRef name);

/// "megatron", "planned", "megatron-sp".
llvm::StringRef tensorLayoutsName(TensorLayouts layouts);
std::optional<TensorLayouts> parseTensorLayouts(llvm::StringRef name);

struct ParallelPlan {
  /// Axes with their roles (kAxisRoles), in rank order; roles absent have
  /// degree 1.
  Mesh mesh;
  TensorMode tensorMode = TensorMode::OneD;
  /// 2.5D: the depth d of the q x q x d grid (1 otherwise).
  int64_t tensorDepth = 1;
  TensorLayouts tensorLayouts = TensorLayouts::Megatron;
  SequenceMode sequenceMode = SequenceMode::Ulysses;
  int64_t microbatches = 1;
  /// A training step (forward, backward, optimizer) rather than inference.
  bool train = false;
  Recompute recompute = Recompute::None;
  /// ZeRO stage of a training step over the dp axis (DeepSpeed's): 1 and
  /// 2 store optimizer states split over dp (the update runs on each
  /// device's part: gradients reduce-scattered, parameters all-gathered),
  /// 3 the parameters too (all-gathered before each use); 0: none.
  int64_t zero = 0;
  /// Interleaved 1F1B (Megatron-LM's virtual pipeline): each of the pp
  /// devices runs this many chunks of layers, chunk c of device d being
  /// stage c * pp + d of pp * virtualStages; 1: one stage per device.
  int64_t virtualStages = 1;
  /// Zero-bubble ZB-H1 (Qi et al. 2024): each microbatch's backward through
  /// a pipeline stage runs as two calls, the input's gradient (B, sent on
  /// at once) and the weights' (W, which a stage defers into what would be
  /// its bubble); one chunk per device.
  bool zeroBubble = false;

  /// A plan of the given per-role degrees (see meshForDegrees).
  static ParallelPlan withDegrees(int64_t pp, int64_t dp, int64_t sp,
                                  int64_t tp);
  /// The degree of `role` ("pp", "dp", "sp", "tp"): 1 when absent.
  int64_t degree(llvm::StringRef role) const;
  int64_t devices() const { return mesh.numDevices(); }
  /// Whether the program is partitioned at all: several devices, or one
  /// running its batch in microbatches (gradient accumulation).
  bool partitions() const { return devices() > 1 || microbatches > 1; }
  /// "dp 2 x tp 4" (roles above 1; "1 device" when none).
  std::string describe() const;
};

/// The grid's time axis: one coordinate per microbatch of a pipeline. It
/// splits the batch like a device axis, but its coordinates run one after
/// another on the same devices, so nothing communicates over it.
inline constexpr llvm::StringLiteral kMicrobatchAxis = "mb";

/// The grid a program is partitioned on: the plan's device axes, plus the
/// microbatch axis right after pp when a pipeline streams several
/// microbatches; a 2D / 2.5D / 3D tensor axis is its grid: `tp_row` x
/// `tp_col` (q x q), `tp_dep` x `tp_row` x `tp_col` (d x q x q), or
/// `tp_x` x `tp_y` x `tp_z` (q x q x q), in rank order.
Mesh programMesh(const ParallelPlan &plan);

/// The tensor grid's axes of a program mesh (kGridAxisNames), as present.
inline constexpr llvm::StringLiteral kGridAxisNames[] = {
    "tp_dep", "tp_row", "tp_col", "tp_x", "tp_y", "tp_z"};

/// A program mesh axis of tensor parallelism: 1D's `tp` or a grid's.
inline bool isTensorAxis(llvm::StringRef name) {
  return name == "tp" || llvm::is_contained(kGridAxisNames, name);
}

/// A tensor axis that splits features and weights; 2.5D's depth splits the
/// batch, as dp does.
inline bool splitsFeatures(llvm::StringRef name) {
  return isTensorAxis(name) && name != "tp_dep";
}

/// Module attribute holding the plan (a #pcc.plan).
inline constexpr llvm::StringLiteral kPlanAttr = "pcc.plan";

PlanAttr toAttr(mlir::MLIRContext *ctx, const ParallelPlan &plan);
ParallelPlan fromAttr(PlanAttr attr);

/// The module's plan, if it carries one.
std::optional<ParallelPlan> readPlan(mlir::ModuleOp module);
void writePlan(mlir::ModuleOp module, const ParallelPlan &plan);

} // namespace pcc

#endif // PCC_SHARDING_PARALLELPLAN_H
