//===- PCCDialect.cpp - pcc dialect registration --------------------------===//

#include "pcc/Dialect/PCC/IR/PCCDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "pcc/Dialect/PCC/IR/PCCAttrs.h"
#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pcc;

#include "pcc/Dialect/PCC/IR/PCCDialect.cpp.inc"

void PCCDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "pcc/Dialect/PCC/IR/PCCOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *PCCDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
