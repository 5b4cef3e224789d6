//===- Sharding.h - tensor shardings over a device grid ---------*- C++ -*-===//
//
// The C++ form of #pcc.sharding used by propagation and partitioning, and the
// device grid (`shard.grid`) they refer to. A dimension split over axes
// (a0, a1) with G groups is viewed as [G, D/G]; the D/G part is cut into
// size(a0) * size(a1) blocks, device (c0, c1) holding block c0 * size(a1) + c1.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_SHARDING_SHARDING_H
#define PCC_SHARDING_SHARDING_H

#include "pcc/Dialect/PCC/IR/PCCAttrs.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace pcc {

/// How one tensor dimension is split.
struct DimSharding {
  llvm::SmallVector<int64_t, 2> axes;
  int64_t groups = 1;

  bool isSplit() const { return !axes.empty(); }
  bool operator==(const DimSharding &o) const {
    return axes == o.axes && (axes.empty() || groups == o.groups);
  }
  bool operator!=(const DimSharding &o) const { return !(*this == o); }
};

/// How a tensor is laid out: per-dimension splits and partial-sum axes.
struct TensorSharding {
  llvm::SmallVector<DimSharding, 4> dims;
  llvm::SmallVector<int64_t, 2> partial;

  static TensorSharding replicated(int64_t rank) {
    TensorSharding s;
    s.dims.resize(rank);
    return s;
  }
  bool isReplicated() const;
  bool usesAxis(int64_t axis) const;
  /// Drops the axes `drop` picks from every split dimension (a dimension
  /// left whole loses its groups): the layout gathered on them. Whether
  /// any was dropped.
  bool gatherAxes(llvm::function_ref<bool(int64_t)> drop);
  bool operator==(const TensorSharding &o) const {
    return dims == o.dims && partial == o.partial;
  }
  bool operator!=(const TensorSharding &o) const { return !(*this == o); }
};

/// A logical device grid: `shard.grid @name(shape = ...)` plus axis roles.
struct Mesh {
  std::string name = "mesh";
  llvm::SmallVector<int64_t, 4> shape;
  llvm::SmallVector<std::string, 4> axisNames;

  int64_t numDevices() const;
  /// Product of the sizes of `axes`.
  int64_t size(llvm::ArrayRef<int64_t> axes) const;
  /// The axis named `role` ("dp", "tp", ...), or -1.
  int64_t axisNamed(llvm::StringRef role) const;
};

/// The mesh of per-role degrees (role names from kAxisRoles): one axis per
/// degree above 1, in rank order; a single "dp" axis of 1 when every degree
/// is 1.
Mesh meshForDegrees(
    llvm::ArrayRef<std::pair<llvm::StringRef, int64_t>> degrees);

/// Attribute name of result shardings on ops (an ArrayAttr, one per result)
/// and of argument/result shardings on functions.
inline constexpr llvm::StringLiteral kShardingAttr = "pcc.sharding";
/// Attribute of shard.grid naming each axis's role.
inline constexpr llvm::StringLiteral kAxisNamesAttr = "pcc.axis_names";
/// On an op: the layouts its operands are resharded to when it runs (one
/// #pcc.sharding per operand), pinned by a strategy. Without it an op runs
/// on the layouts its rule derives from its operands' annotations.
inline constexpr llvm::StringLiteral kOperandShardingAttr =
    "pcc.operand_sharding";
/// On an op: the tensor-axis part of the operand layouts the planner chose,
/// on the planner's one-axis grid (axis 0 is the tp axis). pcc-apply-plan
/// with planned tensor layouts maps it onto the tp axis and merges it with the
/// data-parallel splits.
inline constexpr llvm::StringLiteral kPlannedShardingAttr =
    "pcc.planned_sharding";
/// On a trained weight: the tensor-axis layout (on the planner's one-axis
/// grid, as kPlannedShardingAttr) the planner stores it in while its
/// readers read it whole on that axis: it is gathered at use and its
/// gradient reduce-scattered into it (TrainingPropagation, at the update).
inline constexpr llvm::StringLiteral kPlannedStoreAttr = "pcc.planned_store";
/// On a pcc.attention: the strategy runs it around a ring, so keys and
/// values may hold the same sequence split as the queries (each device's
/// block of keys passes around the devices of that split; ring_axes on the
/// per-device op).
inline constexpr llvm::StringLiteral kRingAttentionAttr = "pcc.ring";
/// On a pcc.matmul / pcc.gemm with a 2-D weight: the strategy runs it as
/// SUMMA on a 2D grid, so the left operand's contraction may be split over
/// the grid's column axis while the weight's is split over its row axis
/// (summa_axes on the per-device op).
inline constexpr llvm::StringLiteral kSummaAttr = "pcc.summa";
/// On a pcc.gemm with a C broadcast over its rows whose product is a partial
/// sum over one axis: the product is reduce-scattered onto its rows over
/// that axis before C is added, rather than all-reduced (a 3D linear
/// layer's bias, as its MatMul + Add twin's users take the sum).
inline constexpr llvm::StringLiteral kScatterBeforeBiasAttr =
    "pcc.scatter_before_bias";
/// On a pcc.layer_norm over its last axis: the strategy splits that axis
/// and all-reduces each row's sums over the split (stat_axes on the
/// per-device op).
inline constexpr llvm::StringLiteral kSplitStatsAttr = "pcc.split_stats";

/// Whether a weight stored as `stored` is read in that layout and gathered
/// into `use` (each of `use`'s splits is a leading part of `stored`'s on the
/// same dimension), rather than read in `use` directly.
bool gathersStoredWeight(const TensorSharding &stored,
                         const TensorSharding &use);

ShardingAttr toAttr(mlir::MLIRContext *ctx, const Mesh &mesh,
                    const TensorSharding &s);
TensorSharding fromAttr(ShardingAttr attr);

/// ZeRO's split of a tensor of `shape` held as `s` over `n` more devices:
/// the dimension it goes on, a whole one first (with `further`, one already
/// split, over one block group, first), or -1 where none divides and the
/// tensor stays whole over them (its gradient all-reduced, not
/// reduce-scattered). The partitioner's rule (TrainingLayouts) and the
/// plan report's.
int zeroSplitDim(llvm::ArrayRef<int64_t> shape, const TensorSharding &s,
                 const Mesh &mesh, int64_t n, bool further = false);

/// True if `shape` can be laid out as `s` over `mesh`: every split dimension
/// divides into its groups and each group into its blocks.
bool divides(llvm::ArrayRef<int64_t> shape, const TensorSharding &s,
             const Mesh &mesh);
/// The per-device shape of a tensor of global `shape` laid out as `s`.
llvm::SmallVector<int64_t> localShape(llvm::ArrayRef<int64_t> shape,
                                      const TensorSharding &s,
                                      const Mesh &mesh);
mlir::RankedTensorType localType(mlir::RankedTensorType global,
                                 const TensorSharding &s, const Mesh &mesh);

/// Reads the module's grid (the first shard.grid), if any.
std::optional<Mesh> readMesh(mlir::ModuleOp module);
/// Creates (or replaces) the module's shard.grid for `mesh`.
void writeMesh(mlir::ModuleOp module, const Mesh &mesh);

/// The sharding recorded for `v` (a block argument or op result), or
/// replicated when there is none.
TensorSharding shardingOf(mlir::Value v);
/// Records `s` for `v` in the IR.
void setSharding(mlir::Value v, const Mesh &mesh, const TensorSharding &s);

/// The per-operand layouts in `op`'s attribute `name` (kOperandShardingAttr
/// or kPlannedShardingAttr); none when absent or not one per operand.
std::optional<llvm::SmallVector<TensorSharding>>
operandShardings(mlir::Operation *op, llvm::StringRef name);
void setOperandShardings(mlir::Operation *op, llvm::StringRef name,
                         const Mesh &mesh,
                         llvm::ArrayRef<TensorSharding> layouts);

/// "[[0], [], [1]/3] partial [1]" with axis names, for messages and plans.
std::string describe(const TensorSharding &s, const Mesh &mesh);

} // namespace pcc

#endif // PCC_SHARDING_SHARDING_H
