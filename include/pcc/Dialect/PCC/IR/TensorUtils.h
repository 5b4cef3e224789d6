//===- TensorUtils.h - small facts about ranked tensor values ---*- C++ -*-===//
//
// The one definition of the shape and size helpers every layer uses. pcc
// values are ranked tensors with static shapes (the importer guarantees it),
// so these cast without checking.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_IR_TENSORUTILS_H
#define PCC_DIALECT_PCC_IR_TENSORUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

namespace pcc {

inline mlir::RankedTensorType typeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return typeOf(v).getShape();
}

inline mlir::Type elementTypeOf(mlir::Value v) {
  return typeOf(v).getElementType();
}

/// Elements of a tensor of `shape` (1 for a scalar).
inline int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Bytes of one element as stored: booleans take a byte.
inline int64_t elementBytes(mlir::Type t) {
  if (t.isIndex())
    return 8;
  return t.isInteger(1) ? 1 : (t.getIntOrFloatBitWidth() + 7) / 8;
}

inline int64_t shapeBytes(llvm::ArrayRef<int64_t> shape, mlir::Type element) {
  return numElements(shape) * elementBytes(element);
}

inline int64_t tensorBytes(mlir::Value v) {
  return shapeBytes(shapeOf(v), elementTypeOf(v));
}

/// `axis` in [-rank, rank) as a non-negative axis; the caller has checked
/// the range (the verifiers do for every op attribute).
inline int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

} // namespace pcc

#endif // PCC_DIALECT_PCC_IR_TENSORUTILS_H
