//===- PCCDialect.h - pcc dialect -------------------------------*- C++ -*-===//

#ifndef PCC_DIALECT_PCC_IR_PCCDIALECT_H
#define PCC_DIALECT_PCC_IR_PCCDIALECT_H

#include "mlir/IR/Dialect.h"

#include "pcc/Dialect/PCC/IR/PCCDialect.h.inc"

#endif // PCC_DIALECT_PCC_IR_PCCDIALECT_H
