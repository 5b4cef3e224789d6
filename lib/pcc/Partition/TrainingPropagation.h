//===- TrainingPropagation.h - a training step's layouts --------*- C++ -*-===//
//
// Private to pcc-partition's sharding propagation (Propagation.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef PCC_LIB_PARTITION_TRAININGPROPAGATION_H
#define PCC_LIB_PARTITION_TRAININGPROPAGATION_H

#include "pcc/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>

namespace pcc {

/// What sharding propagation does for a training step's own tensors: the
/// optimizer states stored like their parameters and, under ZeRO, split
/// over dp (from stage 3 the parameters too, and the weight views the
/// backward reads made again there); gradients summed where the update
/// reads them; a tp-partial value read by several ops summed once, as its
/// first reader takes it; an output gradient that arrives whole read as
/// its forward result was split; a weight's gradient product gathering the
/// cheaper of its two factors.
class TrainingPropagation {
public:
  TrainingPropagation(mlir::func::FuncOp fn, const Mesh &mesh);
  ~TrainingPropagation();

  /// Places the stored tensors `op` reads, before its layouts are chosen.
  void placeStored(mlir::Operation &op);
  /// The layouts `op` reads its operands in (`in`), after a strategy's
  /// choice (`strategyPinned`: the strategy pinned them).
  void adjustOperands(mlir::Operation &op,
                      llvm::SmallVectorImpl<TensorSharding> &in,
                      bool strategyPinned);

private:
  /// The placements of gradient tables, attention backwards and backward
  /// products (each its own class in the .cpp).
  void placeGradients(mlir::Operation &op,
                      llvm::SmallVectorImpl<TensorSharding> &in,
                      bool strategyPinned);

  struct State;
  std::unique_ptr<State> state;
};

} // namespace pcc

#endif // PCC_LIB_PARTITION_TRAININGPROPAGATION_H
