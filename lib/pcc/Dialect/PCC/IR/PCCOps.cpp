//===- PCCOps.cpp - pcc op definitions and verifiers ----------------------===//
//
// Result-type inference lives in PCCTypeInference.cpp and folders in
// PCCFolders.cpp; this file holds the generated definitions and the
// verifiers for invariants that inference does not already imply.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"

#include "llvm/Support/MathExtras.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace pcc;

#define GET_OP_CLASSES
#include "pcc/Dialect/PCC/IR/PCCOps.cpp.inc"

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError() << "requires a non-empty initializer name";
  auto type = cast<RankedTensorType>(getType());
  Type source = type.getElementType();
  if (auto from = getSourceTypeAttr()) {
    source = from.getValue();
    auto isConvertible = [](Type t) {
      return t.isF32() || t.isF16() || t.isBF16();
    };
    if (!isConvertible(source) || !isConvertible(type.getElementType()))
      return emitOpError() << "converts only between f32, f16 and bf16, not "
                           << source << " to " << type.getElementType();
  }
  // (A device's block of a padded weight can be smaller than the
  // initializer: only the rank is checked.)
  if (auto unpadded = getUnpaddedAttr())
    if (unpadded.size() != type.getRank() ||
        llvm::any_of(unpadded.asArrayRef(), [](int64_t d) { return d < 1; }))
      return emitOpError() << "unpadded shape must have the rank of " << type
                           << " and positive dimensions";
  if (auto parts = getPartsAttr()) {
    auto axis = getPartsAxisAttr();
    auto sizes = getPartSizesAttr();
    if (parts.size() < 2 || !axis || axis.getInt() < 0 ||
        axis.getInt() >= type.getRank() || !sizes ||
        sizes.size() != int64_t(parts.size()))
      return emitOpError() << "concat needs two or more initializers, an "
                              "axis of "
                           << type << " and a size for each";
    // (A device's block of a split weight holds part of the sum.)
    int64_t sum = 0;
    bool positive = true;
    for (int64_t n : sizes.asArrayRef()) {
      positive &= n > 0;
      sum += n;
    }
    int64_t dim = type.getDimSize(axis.getInt());
    if (!positive || dim < 1 || sum % dim)
      return emitOpError() << "concat sizes must be positive and add up to "
                              "a multiple of axis "
                           << axis.getInt() << " of " << type;
    if (getUnpaddedAttr() || getExternalAttr())
      return emitOpError() << "with concat joins whole initializers: no "
                              "unpadded shape or external data";
  } else if (getPartsAxisAttr() || getPartSizesAttr()) {
    return emitOpError() << "has an axis or sizes but no initializers to "
                            "concat";
  }
  if (getZeros() && (getExternalAttr() || getSourceTypeAttr()))
    return emitOpError() << "with zeros is not in the model, so it has no "
                            "external data or source type";
  if (auto ext = getExternalAttr()) {
    if (ext.getOffset() < 0 || ext.getLength() < 0)
      return emitOpError() << "external data offset and length must be "
                              "non-negative";
    int64_t bits = source.getIntOrFloatBitWidth();
    int64_t elements = type.getNumElements();
    if (auto unpadded = getUnpaddedAttr())
      elements = llvm::product_of(unpadded.asArrayRef());
    int64_t expected = (elements * bits + 7) / 8;
    if (ext.getLength() != expected)
      return emitOpError() << "external data length " << ext.getLength()
                           << " does not match the " << expected
                           << " bytes of " << source << " elements of "
                           << type;
  }
  return success();
}

LogicalResult AssignOp::verify() {
  if (!getTarget().getDefiningOp<WeightOp>())
    return emitOpError() << "stores only into a pcc.weight";
  return success();
}

LogicalResult GeluOp::verify() {
  StringRef mode = getApproximate();
  if (mode != "none" && mode != "tanh")
    return emitOpError() << "approximate must be 'none' or 'tanh', got '"
                         << mode << "'";
  return success();
}

LogicalResult ClipOp::verify() {
  float lo = getMin().convertToFloat(), hi = getMax().convertToFloat();
  if (lo > hi)
    return emitOpError() << "min " << lo << " exceeds max " << hi;
  return success();
}

template <typename OpTy>
static LogicalResult verifySoftmaxAxis(OpTy op) {
  int64_t rank = op.getInput().getType().getRank();
  if (op.getAxis() < 0 || op.getAxis() >= rank)
    return op.emitOpError() << "axis " << op.getAxis()
                            << " out of range for rank " << rank;
  return success();
}

LogicalResult SoftmaxOp::verify() { return verifySoftmaxAxis(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifySoftmaxAxis(*this); }

LogicalResult AttentionOp::verify() {
  ArrayRef<int64_t> q = getQuery().getType().getShape(),
                    k = getKey().getType().getShape(),
                    v = getValue().getType().getShape();
  if (k.size() != q.size() || v.size() != q.size())
    return emitOpError("query, key and value must have the same rank");
  if (getSeqFirst()) {
    // [B, S, H, D]: batch and heads equal, K and V of one length; with
    // head_offsets each operand's heads [offset, offset + H) are the ones
    // read, H the result's.
    ArrayRef<int64_t> r = getResult().getType().getShape();
    if (q.size() != 4 || r.size() != 4 || getRingAxes() || q[0] != k[0] ||
        q[0] != v[0] || q[3] != k[3] || k[1] != v[1])
      return emitOpError("seq_first needs [B, S, H, D] query, key and value "
                         "of one batch and head count");
    // Masks broadcast to the scores [B, H, Sq, Sk], as before the heads
    // were read in place (an additive one may be f32: kernels read it so).
    int64_t scores[] = {q[0], r[2], q[1], k[1]};
    for (Value m : {getMask(), getHide()}) {
      if (!m)
        continue;
      ArrayRef<int64_t> s = cast<ShapedType>(m.getType()).getShape();
      if (s.size() > 4)
        return emitOpError("mask rank exceeds the scores' rank");
      for (auto [a, b] : llvm::zip(llvm::reverse(s), llvm::reverse(scores)))
        if (a != b && a != 1)
          return emitOpError("mask does not broadcast to the scores");
    }
    Type maskType = getMask() ? getMask().getType().getElementType() : Type();
    if (maskType && !maskType.isF32() &&
        maskType != getQuery().getType().getElementType())
      return emitOpError("mask element type differs from the query's");
    SmallVector<int64_t, 3> offsets(3, 0);
    if (auto given = getHeadOffsets())
      offsets.assign(given->begin(), given->end());
    if (offsets.size() != 3)
      return emitOpError("head_offsets needs one offset each for the query, "
                         "the key and the value");
    ArrayRef<int64_t> shapes[] = {q, k, v};
    for (auto [x, off] : llvm::zip(shapes, offsets))
      if (off < 0 || off + r[2] > x[2] || (!getHeadOffsets() && x[2] != r[2]))
        return emitOpError("seq_first needs [B, S, H, D] query, key and "
                           "value of one batch and head count");
    return success();
  }
  if (getHeadOffsets())
    return emitOpError("head_offsets needs seq_first");
  if (q.drop_back(2) != k.drop_back(2) || q.drop_back(2) != v.drop_back(2))
    return emitOpError("query, key and value leading dimensions differ");
  if (q.back() != k.back())
    return emitOpError("query and key depths differ");
  if (k[k.size() - 2] != v[v.size() - 2])
    return emitOpError("key and value lengths differ");
  if (getQuery().getType().getElementType() !=
          getKey().getType().getElementType() ||
      getQuery().getType().getElementType() !=
          getValue().getType().getElementType())
    return emitOpError("query, key and value element types differ");
  // Masks broadcast to the scores [..., Sq, Sk]; with ring_axes their key
  // columns are this device's block, like K's.
  SmallVector<int64_t> scores(q.drop_back());
  scores.push_back(k[k.size() - 2]);
  for (Value m : {getMask(), getHide()}) {
    if (!m)
      continue;
    ArrayRef<int64_t> s = cast<ShapedType>(m.getType()).getShape();
    if (s.size() > scores.size())
      return emitOpError("mask rank exceeds the scores' rank");
    for (auto [i, a, b] :
         llvm::enumerate(llvm::reverse(s), llvm::reverse(scores))) {
      // Around a ring the masks hold every key; K holds one block of them.
      bool ringKeys = i == 0 && getRingAxes() && b && a % b == 0;
      if (a != b && a != 1 && !ringKeys)
        return emitOpError("mask does not broadcast to the scores");
    }
  }
  if (getMask() && getMask().getType().getElementType() !=
                       getQuery().getType().getElementType())
    return emitOpError("mask element type differs from the query's");
  if (getHideFrom() && (getHide() || getRingAxes()))
    return emitOpError("hide_from replaces a hide operand and holds no ring "
                       "offsets");
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto type = getInput().getType();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= type.getRank())
    return emitOpError() << "axis " << axis << " out of range for rank "
                         << type.getRank();
  ArrayRef<int64_t> normShape = type.getShape().drop_front(axis);
  auto checkParam = [&](Value v, StringRef what) -> LogicalResult {
    auto paramShape = cast<RankedTensorType>(v.getType()).getShape();
    // ONNX lets scale and bias broadcast against the normalized shape.
    if (paramShape.size() > normShape.size())
      return emitOpError() << what << " rank exceeds the normalized rank";
    for (auto [p, n] : llvm::zip(llvm::reverse(paramShape),
                                 llvm::reverse(normShape)))
      if (p != n && p != 1)
        return emitOpError() << what << " shape does not broadcast to the "
                             << "normalized shape";
    return success();
  };
  if (failed(checkParam(getScale(), "scale")))
    return failure();
  if (getBias() && failed(checkParam(getBias(), "bias")))
    return failure();
  return success();
}

LogicalResult BatchNormOp::verify() {
  auto type = getInput().getType();
  if (type.getRank() < 2)
    return emitOpError() << "input must have rank >= 2 (N, C, ...)";
  int64_t channels = type.getDimSize(1);
  for (Value v : {getScale(), getBias(), getMean(), getVariance()}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != 1 || t.getDimSize(0) != channels)
      return emitOpError() << "per-channel operands must be tensor<"
                           << channels << "x...>, got " << t;
  }
  return success();
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0 && ratio < 1))
    return emitOpError() << "ratio must be in [0, 1), got " << ratio;
  if (getStep() && getStep().getType().getRank() != 0)
    return emitOpError() << "step must be a scalar, got "
                         << getStep().getType();
  return success();
}

LogicalResult SplitOp::verify() {
  if (getResults().size() != getSizes().size())
    return emitOpError() << "has " << getResults().size()
                         << " results but " << getSizes().size() << " sizes";
  return success();
}

LogicalResult SliceOp::verify() {
  auto type = getInput().getType();
  size_t rank = type.getRank();
  if (getStarts().size() != rank || getSizes().size() != rank ||
      getSteps().size() != rank)
    return emitOpError() << "needs one start, size and step per axis";
  for (auto [d, start, size, step] :
       llvm::enumerate(getStarts(), getSizes(), getSteps())) {
    if (step == 0)
      return emitOpError() << "step of axis " << d << " is zero";
    if (size == 0)
      continue;
    int64_t last, span;
    int64_t dim = type.getDimSize(d);
    if (size < 0 || llvm::MulOverflow(size - 1, step, span) ||
        llvm::AddOverflow(start, span, last) || start < 0 || start >= dim ||
        last < 0 || last >= dim)
      return emitOpError() << "axis " << d << " reads outside [0, " << dim
                           << ")";
  }
  return success();
}

LogicalResult TriluOp::verify() {
  if (getInput().getType().getRank() < 2)
    return emitOpError() << "input must have rank >= 2";
  return success();
}

/// Stages are the coordinates along a grid axis: both ends must name one.
template <typename Op>
static LogicalResult verifyStageTransfer(Op op, int64_t peer) {
  if (op.getGridAxis() < 0)
    return op.emitOpError() << "grid_axis must be non-negative";
  if (peer < 0)
    return op.emitOpError() << "stage must be non-negative";
  if (op.getTag() < 0)
    return op.emitOpError() << "tag must be non-negative";
  return success();
}

LogicalResult SendOp::verify() { return verifyStageTransfer(*this, getToStage()); }
LogicalResult RecvOp::verify() {
  return verifyStageTransfer(*this, getFromStage());
}
