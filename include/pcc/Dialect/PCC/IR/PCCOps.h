//===- PCCOps.h - pcc dialect operations ------------------------*- C++ -*-===//

#ifndef PCC_DIALECT_PCC_IR_PCCOPS_H
#define PCC_DIALECT_PCC_IR_PCCOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "pcc/Dialect/PCC/IR/PCCAttrs.h"
#include "pcc/Dialect/PCC/IR/PCCDialect.h"
#include "pcc/Dialect/PCC/IR/PCCInterfaces.h"
#include "pcc/Dialect/PCC/IR/PCCTraits.h"

#define GET_OP_CLASSES
#include "pcc/Dialect/PCC/IR/PCCOps.h.inc"

#endif // PCC_DIALECT_PCC_IR_PCCOPS_H
