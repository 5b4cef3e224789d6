//===- ElementwiseConverters.cpp - ONNX elementwise ops to pcc ------------===//

#include "ImportContext.h"

using namespace mlir;

namespace pcc::import {
namespace {

template <typename OpTy>
Converter unary() {
  return [](NodeContext &c) -> Results {
    if (failed(c.requireInputs(1)))
      return failure();
    return one(c.build1<OpTy>(c.input(0)));
  };
}

/// Binary ops; ONNX's Max, Min, Sum and Mean are variadic and fold left.
template <typename OpTy>
Converter binary(bool variadic = false) {
  return [variadic](NodeContext &c) -> Results {
    size_t n = c.numInputs();
    if (failed(c.requireInputs(variadic ? 1 : 2)))
      return failure();
    Value acc = c.input(0);
    for (size_t i = 1; i < n; ++i) {
      Value rhs = c.input(i);
      // Opset < 7 broadcast=1 with `axis`: the second operand's dimensions
      // line up with the first's from `axis` on (ones elsewhere).
      if (c.opset < 7 && c.intAttr("broadcast", 0) && c.attr("axis")) {
        auto a = c.inputType(0), b = c.inputType(i);
        int64_t axis = c.intAttr("axis", 0);
        axis = axis < 0 ? axis + a.getRank() : axis;
        if (axis < 0 || axis + b.getRank() > a.getRank())
          return c.error() << "legacy broadcast axis " << axis
                           << " does not fit " << b << " into " << a;
        SmallVector<int64_t> shape(a.getRank() - axis, 1);
        for (int64_t d = 0; d < b.getRank(); ++d)
          shape[d] = b.getDimSize(d);
        auto r = c.build1<ReshapeOp>(rhs, {c.i64s("shape", shape)});
        if (failed(r))
          return failure();
        rhs = *r;
      }
      auto next = c.build1<OpTy>(ValueRange{acc, rhs});
      if (failed(next))
        return failure();
      acc = *next;
    }
    return SmallVector<Value>{acc};
  };
}

Results convertMean(NodeContext &c) {
  auto sum = binary<AddOp>(true)(c);
  if (failed(sum) || c.numInputs() == 1)
    return sum;
  auto type = cast<RankedTensorType>((*sum)[0].getType());
  auto n = c.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, type.getElementType()),
      FloatAttr::get(type.getElementType(), double(c.numInputs()))));
  return one(c.build1<DivOp>(ValueRange{(*sum)[0], n}));
}

Results convertCast(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  int64_t to = c.intAttr("to", 0);
  Type elem = elementTypeFor(to, c.ctx());
  if (!elem)
    return c.error() << "Cast to unsupported ONNX data type " << to;
  return one(c.build1<CastOp>(c.input(0), {c.named("to", TypeAttr::get(elem))}));
}

Results convertCastLike(NodeContext &c) {
  if (failed(c.requireInputs(2)))
    return failure();
  Type elem = c.inputType(1).getElementType();
  return one(c.build1<CastOp>(c.input(0), {c.named("to", TypeAttr::get(elem))}));
}

Results convertLeakyRelu(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  return one(c.build1<LeakyReluOp>(c.input(0),
                                   {c.f32("alpha", c.floatAttr("alpha", 0.01f))}));
}

Results convertClip(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  double lo = -std::numeric_limits<float>::infinity();
  double hi = std::numeric_limits<float>::infinity();
  if (c.opset < 11) {
    lo = c.floatAttr("min", lo);
    hi = c.floatAttr("max", hi);
  } else {
    if (c.input(1)) {
      auto v = c.constScalar(1, "Clip min");
      if (failed(v))
        return failure();
      lo = *v;
    }
    if (c.input(2)) {
      auto v = c.constScalar(2, "Clip max");
      if (failed(v))
        return failure();
      hi = *v;
    }
  }
  // Integers (opset 12; T5's relative positions clamp int64 distances):
  // a maximum and a minimum with the bounds, as pcc.clip is float only.
  if (auto it = dyn_cast<IntegerType>(c.inputType(0).getElementType())) {
    Value x = c.input(0);
    auto bound = [&](double v) {
      auto type = RankedTensorType::get({}, it);
      return c.constant(DenseElementsAttr::get(
          type, APInt(it.getWidth(), int64_t(v), /*isSigned=*/true)));
    };
    for (auto [given, v, isMin] : {std::tuple{bool(c.input(1)), lo, true},
                                   {bool(c.input(2)), hi, false}}) {
      if (!given)
        continue;
      auto next = isMin ? c.build1<MaxOp>({x, bound(v)})
                        : c.build1<MinOp>({x, bound(v)});
      if (failed(next))
        return failure();
      x = *next;
    }
    return SmallVector<Value>{x};
  }
  return one(c.build1<ClipOp>(c.input(0), {c.f32("min", lo), c.f32("max", hi)}));
}

Results convertGelu(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  return one(c.build1<GeluOp>(
      c.input(0), {c.named("approximate", StringAttr::get(
                                              c.ctx(), c.stringAttr("approximate",
                                                                    "none")))}));
}

Results convertIdentity(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  return SmallVector<Value>{c.input(0)};
}

/// FNV-1a of `name`: a dropout's stream, so each draws its own mask and a
/// reference can draw the same one from the node's name.
uint64_t streamOf(StringRef name) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : name)
    h = (h ^ ch) * 1099511628211ull;
  return h;
}

/// Dropout at inference is the identity, as is training mode at ratio 0
/// (what torch exports for dropout=0.0 under TrainingMode.TRAINING).
/// Training mode with a ratio is pcc.dropout; the mask output is not
/// produced (torch's exports never read it).
Results convertDropout(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  double ratio = 0;
  if (c.opset >= 12 && c.input(2)) {
    auto training = c.constScalar(2, "Dropout training_mode");
    if (failed(training))
      return failure();
    ratio = 0.5;
    if (*training != 0 && c.input(1)) {
      auto r = c.constScalar(1, "Dropout ratio");
      if (failed(r))
        return failure();
      ratio = *r;
    }
    if (*training == 0)
      ratio = 0;
  }
  if (ratio == 0)
    return SmallVector<Value>{c.input(0), Value()};
  if (!(ratio > 0 && ratio < 1))
    return c.error() << "Dropout ratio must be in [0, 1), got " << ratio;
  StringRef name = cast<NameLoc>(c.loc).getName();
  SmallVector<NamedAttribute> attrs{
      c.named("ratio", c.builder.getF64FloatAttr(ratio)),
      c.named("seed", c.builder.getI64IntegerAttr(int64_t(c.seed))),
      c.named("stream", c.builder.getI64IntegerAttr(int64_t(streamOf(name))))};
  auto y = c.build1<DropoutOp>(c.input(0), attrs);
  if (failed(y))
    return failure();
  return SmallVector<Value>{*y, Value()};
}

} // namespace

void addElementwiseConverters(llvm::StringMap<Converter> &t) {
  t["Neg"] = unary<NegOp>();
  t["Abs"] = unary<AbsOp>();
  t["Exp"] = unary<ExpOp>();
  t["Log"] = unary<LogOp>();
  t["Sqrt"] = unary<SqrtOp>();
  t["Reciprocal"] = unary<ReciprocalOp>();
  t["Floor"] = unary<FloorOp>();
  t["Ceil"] = unary<CeilOp>();
  t["Tanh"] = unary<TanhOp>();
  t["Erf"] = unary<ErfOp>();
  t["Sigmoid"] = unary<SigmoidOp>();
  t["Relu"] = unary<ReluOp>();
  t["Sin"] = unary<SinOp>();
  t["Cos"] = unary<CosOp>();
  t["Not"] = unary<NotOp>();
  t["Gelu"] = convertGelu;
  t["LeakyRelu"] = convertLeakyRelu;
  t["Clip"] = convertClip;
  t["Cast"] = convertCast;
  t["CastLike"] = convertCastLike;
  t["Identity"] = convertIdentity;
  t["Dropout"] = convertDropout;
  t["Add"] = binary<AddOp>();
  t["Sub"] = binary<SubOp>();
  t["Mul"] = binary<MulOp>();
  t["Div"] = binary<DivOp>();
  t["Pow"] = binary<PowOp>();
  t["Max"] = binary<MaxOp>(true);
  t["Min"] = binary<MinOp>(true);
  t["Sum"] = binary<AddOp>(true);
  t["Mean"] = convertMean;
  t["Equal"] = binary<EqualOp>();
  t["Less"] = binary<LessOp>();
  t["LessOrEqual"] = binary<LessEqualOp>();
  t["Greater"] = binary<GreaterOp>();
  t["GreaterOrEqual"] = binary<GreaterEqualOp>();
  t["And"] = binary<AndOp>();
  t["Or"] = binary<OrOp>();
  t["Xor"] = binary<XorOp>();
  t["Where"] = [](NodeContext &c) -> Results {
    if (failed(c.requireInputs(3)))
      return failure();
    return one(c.build1<WhereOp>(ValueRange{c.input(0), c.input(1), c.input(2)}));
  };
}

} // namespace pcc::import
