//===- ShardingRules.h - how each op computes on sharded tensors -*- C++ -*-===//
//
// For an op and the current layouts of its operands, inferOpSharding decides
// the layouts the op computes on: what each operand must be resharded to and
// what each result comes out as. It is the one place that knows op semantics;
// propagation and partitioning both call it, so they always agree.
//
// Ops state their computation as factors (pcc/Dialect/PCC/IR/FactorRule.h)
// through ShardingRuleOpInterface; this applies any op's rule the same way.
// Reshape, transpose and slice map layouts directly; any other op computes
// on whole tensors.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_SHARDING_SHARDINGRULES_H
#define PCC_SHARDING_SHARDINGRULES_H

#include "pcc/Sharding/Sharding.h"

#include "mlir/IR/Operation.h"

namespace pcc {

struct OpSharding {
  /// Layout each operand must have when the op runs.
  llvm::SmallVector<TensorSharding> operands;
  /// Layout of each result as the op computes it.
  llvm::SmallVector<TensorSharding> results;
  /// pcc.gemm with a C operand whose K is split: the per-device product is
  /// summed over these axes before C is added (so C is added once): an
  /// all-reduce, or a reduce-scatter where `results[0]` splits its rows over
  /// them too (a 3D layer's, kScatterBeforeBiasAttr; productBeforeBias).
  llvm::SmallVector<int64_t, 2> reduceBeforeBias;
  /// Per operand (or empty): the layout a weight or model input operand is
  /// stored in when it differs from `operands` (3D tensor parallelism
  /// stores weights split over one more axis and all-gathers them at use;
  /// an input split over the sequence is gathered for a reader that cannot
  /// keep that split). Filled for the planner from the annotated program;
  /// inferOpSharding leaves it empty.
  llvm::SmallVector<TensorSharding> storedOperands;

  bool operator==(const OpSharding &o) const {
    return operands == o.operands && results == o.results &&
           reduceBeforeBias == o.reduceBeforeBias &&
           storedOperands == o.storedOperands;
  }
};

/// The dimension of a softmax's (or log-softmax's) axis in its operand's
/// layout `in` when that axis is split, else null: such a softmax runs on
/// the blocks, its lines' statistics gathered over the split (stat_axes).
const DimSharding *splitSoftmaxAxis(mlir::Operation *op,
                                    const TensorSharding &in);

/// A product laid out as SUMMA runs (`s`: x's contraction split over one
/// grid axis, the weight's over another): {the weight's contraction axis
/// (the grid's rows), x's (its columns)}, else none.
std::optional<std::pair<int64_t, int64_t>> summaAxes(mlir::Operation *op,
                                                     const OpSharding &s);

/// A product laid out as Colossal-AI's 3D linear layers run (`s`: x's
/// contraction and the weight's split over the same one axis, the product
/// a partial sum over it; a Gemm without transA, its C added after the
/// product is reduce-scattered): that contraction's split, else null.
const DimSharding *cubeContraction(mlir::Operation *op, const OpSharding &s);

/// The layout of an op's first product as its kernel makes it: results[0],
/// except for a gemm that sums its product before adding C
/// (`reduceBeforeBias`), whose product is a partial sum over those axes,
/// its rows not yet split over them.
TensorSharding productBeforeBias(const OpSharding &s);

/// Whether a gemm's C `c` is one row broadcast over the product's rows (a
/// bias), so that it can be added to any block of them.
bool broadcastsRows(mlir::Value c);

/// Number of equal pieces the last axis of `v` is later cut into (a fused
/// Q|K|V projection is split in 3, by a split or by slices), looking through
/// a bias add and views that keep the last axis (Hugging Face's Conv1D
/// computes on [B*S, d] and views the result as [B, S, 3d]); 1 if none.
int64_t fusedGroups(mlir::Value v);

/// Never fails: an op without a rule computes on whole (replicated) tensors.
OpSharding inferOpSharding(mlir::Operation *op,
                           llvm::ArrayRef<TensorSharding> operands,
                           const Mesh &mesh);

/// The operand layouts a weight's gradient product (X^T dY, two
/// activations) runs on: `in` as they are, or one operand gathered over one
/// feature-splitting axis where that moves fewer bytes, its partial result
/// brought to `dest` (the layout the weight is read in) where known. The
/// partitioner lays the product out so (gatherCheaperFactor), and the
/// planner spells its collectives out the same way (BackwardCollectives),
/// with `operandShare` the part of each activation a device holds beyond
/// what `in` splits (its layouts leave out the batch's split over dp and
/// microbatches, which the partitioner's mesh has).
llvm::SmallVector<TensorSharding>
cheaperGatheredOperands(mlir::Operation *op, llvm::ArrayRef<TensorSharding> in,
                        const Mesh &mesh, const TensorSharding *dest,
                        double operandShare = 1.0);

/// How an annotated op runs: its rule applied to its pinned operand layouts
/// (kOperandShardingAttr) if a strategy pinned them, else to its operands'
/// annotations.
OpSharding annotatedOpSharding(mlir::Operation *op, const Mesh &mesh);

} // namespace pcc

#endif // PCC_SHARDING_SHARDINGRULES_H
