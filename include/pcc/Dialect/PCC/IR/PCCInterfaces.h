//===- PCCInterfaces.h - op interfaces of the pcc dialect -------*- C++ -*-===//

#ifndef PCC_DIALECT_PCC_IR_PCCINTERFACES_H
#define PCC_DIALECT_PCC_IR_PCCINTERFACES_H

#include "pcc/Dialect/PCC/IR/FactorRule.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

namespace pcc {

class GradientBuilder;

/// `batch` products of an M x K by a K x N matrix. With batch 1 the rows
/// of the left operand (all its leading dimensions) are one M x K matrix;
/// with more, the batches follow the operands' broadcast batch dimensions.
struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;

  double flops() const { return 2.0 * batch * m * n * k; }
};

} // namespace pcc

#include "pcc/Dialect/PCC/IR/PCCInterfaces.h.inc"

#endif // PCC_DIALECT_PCC_IR_PCCINTERFACES_H
