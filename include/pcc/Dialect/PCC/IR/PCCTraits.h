//===- PCCTraits.h - op semantics declared in ODS ---------------*- C++ -*-===//
//
// Marker traits the planner, the partitioner and the code generator ask an
// op for, instead of keeping their own lists of op kinds. Each is declared
// per op in PCCOps.td, where its meaning is documented.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_IR_PCCTRAITS_H
#define PCC_DIALECT_PCC_IR_PCCTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace pcc::OpTrait {

#define PCC_MARKER_TRAIT(NAME)                                                 \
  template <typename ConcreteType>                                             \
  class NAME : public mlir::OpTrait::TraitBase<ConcreteType, NAME> {};

PCC_MARKER_TRAIT(Pointwise)
PCC_MARKER_TRAIT(LinearUnary)
PCC_MARKER_TRAIT(LinearAllSame)
PCC_MARKER_TRAIT(LinearInOne)
PCC_MARKER_TRAIT(LinearInNumerator)

#undef PCC_MARKER_TRAIT

} // namespace pcc::OpTrait

#endif // PCC_DIALECT_PCC_IR_PCCTRAITS_H
