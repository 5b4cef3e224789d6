//===- WeightViews.h - a weight as its readers see it ------------*- C++
//-*-===//
//
// A mixed-precision training step reads each 16-bit weight through a cast
// of its f32 master (TrainStep.cpp keepMaster): the layouts that a strategy
// gives weights (Megatron's column and row splits, vocabulary-parallel
// tables, split biases) apply to that cast as they would to the weight.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_IR_WEIGHTVIEWS_H
#define PCC_DIALECT_PCC_IR_WEIGHTVIEWS_H

#include "pcc/Dialect/PCC/IR/PCCOps.h"

namespace pcc {

/// The weight `v` is, directly or through a float conversion of it; null
/// for any other value.
inline WeightOp weightBehind(mlir::Value v) {
  if (auto w = v.getDefiningOp<WeightOp>())
    return w;
  auto c = v.getDefiningOp<CastOp>();
  if (!c || !mlir::isa<mlir::FloatType>(c.getTo()))
    return nullptr;
  return c.getInput().getDefiningOp<WeightOp>();
}

} // namespace pcc

#endif // PCC_DIALECT_PCC_IR_WEIGHTVIEWS_H
