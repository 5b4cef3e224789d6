//===- GradientBuilder.cpp - building gradient formulas -------------------===//

#include "pcc/Dialect/PCC/IR/GradientBuilder.h"

#include "pcc/Dialect/PCC/IR/TensorUtils.h"

using namespace mlir;

namespace pcc {

Value GradientBuilder::scalar(Type elem, double value) {
  auto type = RankedTensorType::get({}, elem);
  Attribute v = isa<FloatType>(elem)
                    ? Attribute(b.getFloatAttr(elem, value))
                    : Attribute(b.getIntegerAttr(elem, int64_t(value)));
  return op<ConstantOp>({}, {named("value", DenseElementsAttr::get(type, v))});
}

Value GradientBuilder::scalarLike(Value like, double value) {
  return scalar(typeOf(like).getElementType(), value);
}

Value GradientBuilder::fill(Value like, double value) {
  return expand(scalarLike(like, value), shapeOf(like));
}

Value GradientBuilder::gemm(Value a, Value b, bool transA, bool transB,
                            double alpha) {
  return op<GemmOp>({a, b}, {named("alpha", this->b.getF32FloatAttr(alpha)),
                             named("beta", this->b.getF32FloatAttr(1.0f)),
                             named("transA", this->b.getBoolAttr(transA)),
                             named("transB", this->b.getBoolAttr(transB))});
}

Value GradientBuilder::reshape(Value v, ArrayRef<int64_t> shape) {
  if (shapeOf(v) == shape)
    return v;
  return op<ReshapeOp>({v}, {i64s("shape", shape)});
}

Value GradientBuilder::expand(Value v, ArrayRef<int64_t> shape) {
  if (shapeOf(v) == shape)
    return v;
  Value e = op<ExpandOp>({v}, {i64s("shape", shape)});
  if (e)
    expansions.insert(e.getDefiningOp());
  return e;
}

SmallVector<Value, 2> GradientBuilder::broadcastOperands(Value a, Value b) {
  if (!a || !b)
    return {a, b};
  auto unexpanded = [&](Value v, Value other) {
    auto e = v.getDefiningOp<ExpandOp>();
    return e && expansions.contains(e) && shapeOf(other) == shapeOf(v)
               ? e.getInput()
               : v;
  };
  a = unexpanded(a, b);
  b = unexpanded(b, a);
  return {a, b};
}

Value GradientBuilder::transpose(Value v, ArrayRef<int64_t> perm) {
  return op<TransposeOp>({v}, {i64s("perm", perm)});
}

Value GradientBuilder::transposeLast2(Value v) {
  int64_t rank = typeOf(v).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return transpose(v, perm);
}

Value GradientBuilder::reduceSum(Value v, ArrayRef<int64_t> axes,
                                 bool keepdims) {
  if (axes.empty())
    return v;
  return op<ReduceSumOp>({v}, {i64s("axes", axes),
                               named("keepdims", b.getBoolAttr(keepdims))});
}

Value GradientBuilder::oneHot(Value indices, int64_t classes, int64_t rank,
                              int64_t axis, Type elem) {
  Type it = typeOf(indices).getElementType();
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = classes;
  SmallVector<APInt> iota;
  for (int64_t k = 0; k < classes; ++k)
    iota.push_back(APInt(it.getIntOrFloatBitWidth(), k));
  Value positions = op<ConstantOp>(
      {}, {named("value", DenseElementsAttr::get(
                              RankedTensorType::get(shape, it), iota))});
  return op<CastOp>({op<EqualOp>({positions, indices})},
                    {named("to", TypeAttr::get(elem))});
}

Value GradientBuilder::sumTo(Value grad, Value target) {
  if (!grad)
    return grad;
  ArrayRef<int64_t> g = shapeOf(grad), t = shapeOf(target);
  if (g == t)
    return grad;
  int64_t extra = int64_t(g.size()) - int64_t(t.size());
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < int64_t(g.size()); ++i)
    if (i < extra || (t[i - extra] == 1 && g[i] != 1))
      axes.push_back(i);
  return reshape(reduceSum(grad, axes, /*keepdims=*/true), t);
}

Value GradientBuilder::spread(Value grad, Value input, ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(shapeOf(input));
  for (int64_t a : axes)
    kept[a] = 1;
  return expand(reshape(grad, kept), shapeOf(input));
}

} // namespace pcc
