//===- NodeContext.cpp - helpers for ONNX op converters -------------------===//

#include "ImportContext.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace pcc::import {

LogicalResult NodeContext::requireInputs(size_t n) const {
  for (size_t i = 0; i < n; ++i)
    if (!input(i))
      return error() << "'" << node.op_type() << "' needs input " << i;
  return success();
}

const onnx::AttributeProto *NodeContext::attr(llvm::StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::intAttr(llvm::StringRef name, int64_t dflt) const {
  const auto *a = attr(name);
  return a ? a->i() : dflt;
}

float NodeContext::floatAttr(llvm::StringRef name, float dflt) const {
  const auto *a = attr(name);
  return a ? a->f() : dflt;
}

std::string NodeContext::stringAttr(llvm::StringRef name,
                                    llvm::StringRef dflt) const {
  const auto *a = attr(name);
  return a ? a->s() : dflt.str();
}

std::optional<SmallVector<int64_t>>
NodeContext::intsAttr(llvm::StringRef name) const {
  const auto *a = attr(name);
  if (!a)
    return std::nullopt;
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

FailureOr<SmallVector<int64_t>> NodeContext::constInts(size_t i,
                                                       StringRef what) const {
  DenseIntElementsAttr dense;
  if (!input(i) || !matchPattern(input(i), m_Constant(&dense)))
    return error() << what << " (input " << i << " of '" << node.op_type()
                   << "') must be a compile-time constant";
  SmallVector<int64_t> out;
  for (const APInt &v : dense.getValues<APInt>())
    out.push_back(v.getSExtValue());
  return out;
}

FailureOr<std::optional<SmallVector<int64_t>>>
NodeContext::axesOperand(int inputSinceOpset, StringRef what) const {
  if (opset < inputSinceOpset)
    return intsAttr("axes");
  if (!input(1))
    return std::optional<SmallVector<int64_t>>();
  auto axes = constInts(1, what);
  if (failed(axes))
    return failure();
  return std::optional<SmallVector<int64_t>>(*axes);
}

FailureOr<double> NodeContext::constScalar(size_t i, StringRef what) const {
  ElementsAttr value;
  if (!input(i) || !matchPattern(input(i), m_Constant(&value)) ||
      value.getNumElements() != 1)
    return error() << what << " (input " << i << " of '" << node.op_type()
                   << "') must be a constant scalar";
  if (auto dense = dyn_cast<DenseFPElementsAttr>(value))
    return (*dense.value_begin<APFloat>()).convertToDouble();
  if (auto dense = dyn_cast<DenseIntElementsAttr>(value))
    return double((*dense.value_begin<APInt>()).getSExtValue());
  return error() << what << " has an unsupported element type";
}

FailureOr<SmallVector<double>> NodeContext::constFloats(size_t i,
                                                       StringRef what) const {
  ElementsAttr value;
  if (!input(i) || !matchPattern(input(i), m_Constant(&value)))
    return error() << what << " (input " << i << " of '" << node.op_type()
                   << "') must be a compile-time constant";
  SmallVector<double> out;
  if (auto dense = dyn_cast<DenseFPElementsAttr>(value)) {
    for (const APFloat &v : dense.getValues<APFloat>())
      out.push_back(v.convertToDouble());
    return out;
  }
  if (auto dense = dyn_cast<DenseIntElementsAttr>(value)) {
    for (const APInt &v : dense.getValues<APInt>())
      out.push_back(double(v.getSExtValue()));
    return out;
  }
  return error() << what << " has an unsupported element type";
}

Value NodeContext::constant(ElementsAttr value) const {
  return ConstantOp::create(builder, loc, value);
}

Value NodeContext::scalar(Type elem, double value) const {
  auto type = RankedTensorType::get({}, elem);
  Attribute a = isa<FloatType>(elem)
                    ? Attribute(FloatAttr::get(elem, value))
                    : Attribute(IntegerAttr::get(elem, int64_t(value)));
  return constant(DenseElementsAttr::get(type, a));
}

FailureOr<SmallVector<Value>>
NodeContext::finish(OperationState &state, SmallVectorImpl<Type> &types) const {
  state.addTypes(types);
  Operation *op = builder.create(state);
  SmallVector<Value> results(op->getResults());
  SmallVector<OpFoldResult> folded;
  if (failed(op->fold(folded)) || folded.empty())
    return results;
  // An in-place fold returns the op's own results; keep them.
  for (auto [i, f] : llvm::enumerate(folded)) {
    if (auto v = dyn_cast<Value>(f)) {
      results[i] = v;
      continue;
    }
    Operation *c = op->getDialect()->materializeConstant(
        builder, cast<Attribute>(f), op->getResult(i).getType(), loc);
    if (!c)
      return results;
    results[i] = c->getResult(0);
  }
  if (llvm::none_of(results, [&](Value v) { return v.getDefiningOp() == op; }))
    op->erase();
  return results;
}

Type elementTypeFor(int32_t onnxType, MLIRContext *ctx) {
  Builder b(ctx);
  using TP = onnx::TensorProto;
  switch (onnxType) {
  case TP::FLOAT: return b.getF32Type();
  case TP::DOUBLE: return b.getF64Type();
  case TP::FLOAT16: return b.getF16Type();
  case TP::BFLOAT16: return b.getBF16Type();
  case TP::BOOL: return b.getI1Type();
  case TP::INT8: return b.getIntegerType(8);
  case TP::INT16: return b.getIntegerType(16);
  case TP::INT32: return b.getI32Type();
  case TP::INT64: return b.getI64Type();
  case TP::UINT8: return b.getIntegerType(8, /*isSigned=*/false);
  case TP::UINT16: return b.getIntegerType(16, false);
  case TP::UINT32: return b.getIntegerType(32, false);
  case TP::UINT64: return b.getIntegerType(64, false);
  default: return {};
  }
}

FailureOr<int64_t> normalizeAxis(const NodeContext &c, int64_t axis,
                                 int64_t rank) {
  if (axis < -rank || axis >= rank)
    return c.error() << "axis " << axis << " out of range for rank " << rank;
  return pcc::normalizeAxis(axis, rank);
}

} // namespace pcc::import
