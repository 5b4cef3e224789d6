//===- ProductGradients.h - layouts of a step's backward products -*- C++
//-*-===//
//
// Private to pcc-partition's training propagation (TrainingPropagation.cpp):
// how the gradient products of linear layers (dX = dY W^T, dW = X^T dY)
// are laid out where their rules alone would move more than they need.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_LIB_PARTITION_PRODUCTGRADIENTS_H
#define PCC_LIB_PARTITION_PRODUCTGRADIENTS_H

#include "pcc/Sharding/Sharding.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace pcc {

/// The layouts the forward products read their weights in (a value of
/// weights alone: nn.Linear's transposed weight), by forward id: where the
/// weight's gradient, the backward product X^T dY, must arrive.
class WeightGradientDestinations {
public:
  void note(mlir::Operation &op, llvm::ArrayRef<TensorSharding> in,
            const llvm::DenseSet<mlir::Value> &fromWeights);
  /// Where the result of `op`, a backward product, goes: the layout its
  /// forward product read the weight in, if it makes that weight's
  /// gradient.
  const TensorSharding *of(mlir::Operation &op) const;

private:
  llvm::DenseMap<mlir::Attribute,
                 std::pair<llvm::SmallVector<int64_t>, TensorSharding>>
      read;
};

/// Colossal-AI's 3D linear layers (Strategy.cpp's CubeHook) run their
/// backward as their forward does, transposed: with X' and W' the input
/// and weight as the forward product read them (X gathered over a, W over
/// x) and dY' the output gradient gathered back over b onto the forward
/// product's rows, dX = dY' W'^T is a partial sum over a (reduce-scattered
/// onto the rows, where X was made) and dW = X'^T dY' one over x
/// (reduce-scattered into the weight's stored split). Left to their rules
/// the gradient products gathered weights whole over two axes and moved
/// their results by all-to-alls.
class CubeGradients {
public:
  explicit CubeGradients(const Mesh &mesh);

  /// Notes a forward 3D product's layouts; pins a backward product of one.
  /// Whether it pinned.
  bool place(mlir::Operation &op, llvm::SmallVectorImpl<TensorSharding> &in,
             const Mesh &mesh);

private:
  struct Product {
    mlir::Value x, w;
    TensorSharding xRead, wRead, dyRead;
  };

  /// A 3D product: x's contraction and the weight's split over the same
  /// axis (their product a partial sum over it), the weight gathered from
  /// its stored split.
  void note(mlir::Operation &op, mlir::Attribute id,
            llvm::ArrayRef<TensorSharding> in, const Mesh &mesh);

  bool cube;
  llvm::DenseMap<mlir::Attribute, Product> products;
};

/// A weight's gradient (X^T dY, a backward product of two activations)
/// splits the factor its first split operand offers; when gathering that
/// operand's tensor split instead moves fewer bytes, it is gathered
/// (Megatron-SP's backward gathers the sequence-split input rather than
/// resharding the output gradient and summing a whole weight gradient).
/// Forward ops and products with weights keep their rules' choice: the
/// planner priced those. On a 2D / 2.5D grid each operand is tried gathered
/// over one grid axis at a time, and the weight gradient's way to its
/// weight's layout (`dest`) counts: X gathered over the grid's columns
/// makes [K, N over columns] partial over rows, one reduce-scatter from
/// the weight's [K over rows, N over columns]; dY gathered instead makes K
/// over columns, which an all-reduce and an all-to-all move.
void gatherCheaperFactor(mlir::Operation &op,
                         llvm::SmallVectorImpl<TensorSharding> &in,
                         const Mesh &mesh, const TensorSharding *dest);

} // namespace pcc

#endif // PCC_LIB_PARTITION_PRODUCTGRADIENTS_H
