//===- Fusion.h - which ops run inside their user's loop --------*- C++ -*-===//
//
// The code generator's fusion rule: a pointwise op with a single user fuses
// into that user's loop when the user is pointwise too, in the same block,
// with the same result shape. The planner prices the same rule
// (buildPlanGraph).
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_IR_FUSION_H
#define PCC_DIALECT_PCC_IR_FUSION_H

#include "pcc/Dialect/PCC/IR/PCCAttrs.h"
#include "pcc/Dialect/PCC/IR/PCCTraits.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace pcc {

inline bool isPointwise(mlir::Operation *op) {
  return op->hasTrait<OpTrait::Pointwise>();
}

/// The user `op` runs inside, or null when it runs its own loop or kernel.
inline mlir::Operation *fusedUser(mlir::Operation *op) {
  if (!isPointwise(op) || op->getNumResults() != 1 || !op->hasOneUse())
    return nullptr;
  mlir::Operation *user = *op->getUsers().begin();
  auto shapeOf = [](mlir::Operation *o) {
    return llvm::cast<mlir::ShapedType>(o->getResult(0).getType()).getShape();
  };
  // A microbatch's forward and backward (and a zero-bubble step's B and W)
  // may run apart.
  if (!isPointwise(user) || user->getBlock() != op->getBlock() ||
      user->getNumResults() != 1 || shapeOf(user) != shapeOf(op) ||
      user->hasAttr(kBackwardAttr) != op->hasAttr(kBackwardAttr) ||
      user->hasAttr(kBackwardWeightAttr) != op->hasAttr(kBackwardWeightAttr))
    return nullptr;
  return user;
}

} // namespace pcc

#endif // PCC_DIALECT_PCC_IR_FUSION_H
