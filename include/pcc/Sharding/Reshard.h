//===- Reshard.h - the collectives that turn one layout into another -*- C++ -*-===//
//
// The one description of resharding: the partitioner emits exactly these
// steps as `shard` ops and the planner prices exactly these steps, so the
// collectives a plan predicts are the ones the compiled program runs.
//
// A reshard runs in up to three phases:
//   1. partial sums the target does not keep are summed: a reduce-scatter
//      straight into the target's split when the target splits a dimension
//      (whole in the source, or split there as its major axes) over summed
//      axes, then an all-reduce of the other summed axes on the scattered
//      block (a 2D weight's gradient scattered over the grid's rows, then
//      summed over dp: 1/q of the bytes of summing first), else an
//      all-reduce; a sum over an axis the caller names as accumulated (the
//      microbatch axis: each device adds its runs' blocks) goes first, so
//      the scatter runs once, on the accumulated value;
//   2. splits the target does not share are undone: all-gathers of the
//      trailing axes that differ (the leading common axes stay split, since
//      within a group the blocks of the remaining axes are contiguous) —
//      or, when the target splits another dimension by exactly those axes
//      (a split moving from one dimension to another, as around Ulysses
//      attention), one all-to-all that moves it;
//   3. the target's new splits are made: all-slices (local, no traffic).
//
// A reduce-scatter or an all-gather over several axes runs one axis at a
// time (hierarchically): the scatter's major axis first, the gather's minor
// axis first, so that the axis added or removed last (ZeRO's dp, across
// nodes) moves the smallest block. Each ring moves the same bytes in all as
// one ring over every axis, with fewer latency hops.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_SHARDING_RESHARD_H
#define PCC_SHARDING_RESHARD_H

#include "pcc/Sharding/Sharding.h"

#include <vector>

namespace pcc {

enum class ReshardKind {
  AllReduce,
  ReduceScatter,
  AllGather,
  AllSlice,
  AllToAll
};

llvm::StringRef reshardKindName(ReshardKind kind);

/// One collective of a reshard.
struct ReshardStep {
  ReshardKind kind;
  /// Mesh axes the collective runs over.
  llvm::SmallVector<int64_t, 2> axes;
  /// Tensor dimension it acts on, viewed as [groups, rest] (the collective
  /// acts on the rest); -1 for an all-reduce, which acts on the whole value.
  int64_t dim = -1;
  int64_t groups = 1;
  /// The layout before and after the step.
  TensorSharding before, after;
  /// An all-to-all: the dimension it splits (`dim` is the one whose split
  /// it undoes, concatenating the pieces).
  int64_t toDim = -1;
};

/// The steps that turn a value laid out as `from` into `to`, in order; empty
/// when they are equal.
/// `accumulated`: axes whose sums come before every scatter (above).
std::vector<ReshardStep>
planReshard(const TensorSharding &from, const TensorSharding &to,
            llvm::ArrayRef<int64_t> accumulated = {});

/// How many blocks a layout cuts a tensor into: the product of the sizes of
/// the axes its dimensions are split over (partial axes do not cut).
int64_t splitFactor(const TensorSharding &s, const Mesh &mesh);

/// The bytes one device's collective buffer holds for `step` of a tensor
/// whose whole size is `wholeBytes`: the all-reduced value, the
/// reduce-scattered input, the gathered output, the exchanged block (an
/// all-to-all's input); 0 for an all-slice.
double stepBufferBytes(const ReshardStep &step, double wholeBytes,
                       const Mesh &mesh);

/// The bytes one device sends and receives for `steps` of such a tensor
/// (ring collectives: an all-reduce moves twice its buffer). The
/// partitioner's and the planner's choice between a gather and a partial
/// sum compare these.
double stepsMovedBytes(llvm::ArrayRef<ReshardStep> steps, double wholeBytes,
                       const Mesh &mesh);

} // namespace pcc

#endif // PCC_SHARDING_RESHARD_H
