//===- PCCAttrs.h - pcc dialect attributes ----------------------*- C++ -*-===//

#ifndef PCC_DIALECT_PCC_IR_PCCATTRS_H
#define PCC_DIALECT_PCC_IR_PCCATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#define GET_ATTRDEF_CLASSES
#include "pcc/Dialect/PCC/IR/PCCAttrs.h.inc"

#endif // PCC_DIALECT_PCC_IR_PCCATTRS_H
