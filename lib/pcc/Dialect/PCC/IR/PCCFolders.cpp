//===- PCCFolders.cpp - constant folding of pcc ops -----------------------===//
//
// Folders exist mainly to evaluate the shape arithmetic that torch.onnx.export
// leaves in graphs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, masks
// built with Trilu and Where). They evaluate only constants of at most
// kFoldLimit elements, so folding never allocates in proportion to a model.
// Arithmetic runs in int64 or double and rounds once to the result type,
// which is exact for f32 add, sub, mul, div and sqrt.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace pcc;

namespace {

constexpr int64_t kFoldLimit = 1 << 16;

/// A small constant tensor unpacked into host scalars.
struct Literal {
  RankedTensorType type;
  bool isFloat = false;
  SmallVector<double> f;
  SmallVector<int64_t> i;

  int64_t size() const { return type.getNumElements(); }
  double asDouble(int64_t k) const { return isFloat ? f[k] : double(i[k]); }
  int64_t asInt(int64_t k) const { return isFloat ? int64_t(f[k]) : i[k]; }
};

bool isUnsignedOrBool(Type t) {
  auto it = dyn_cast<IntegerType>(t);
  return it && (it.isUnsigned() || it.getWidth() == 1);
}

std::optional<Literal> readLiteral(Attribute attr) {
  auto dense = dyn_cast_if_present<DenseElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  auto type = cast<RankedTensorType>(dense.getType());
  if (type.getNumElements() > kFoldLimit)
    return std::nullopt;
  Literal lit;
  lit.type = type;
  Type elem = type.getElementType();
  if (isa<FloatType>(elem)) {
    lit.isFloat = true;
    for (const APFloat &v : dense.getValues<APFloat>())
      lit.f.push_back(v.convertToDouble());
    return lit;
  }
  if (!isa<IntegerType>(elem))
    return std::nullopt;
  bool zext = isUnsignedOrBool(elem);
  for (const APInt &v : dense.getValues<APInt>())
    lit.i.push_back(zext ? int64_t(v.getZExtValue()) : v.getSExtValue());
  return lit;
}

/// Packs host scalars into a DenseElementsAttr of `type`, rounding once.
Attribute writeLiteral(RankedTensorType type, ArrayRef<double> f,
                       ArrayRef<int64_t> i) {
  Type elem = type.getElementType();
  if (auto ft = dyn_cast<FloatType>(elem)) {
    SmallVector<APFloat> vals;
    for (size_t k = 0, e = f.empty() ? i.size() : f.size(); k < e; ++k) {
      APFloat v(f.empty() ? double(i[k]) : f[k]);
      bool lost;
      v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      vals.push_back(v);
    }
    return DenseElementsAttr::get(type, vals);
  }
  auto it = dyn_cast<IntegerType>(elem);
  if (!it)
    return {};
  SmallVector<APInt> vals;
  for (size_t k = 0, e = i.empty() ? f.size() : i.size(); k < e; ++k) {
    int64_t v = i.empty() ? int64_t(f[k]) : i[k];
    if (it.getWidth() == 1)
      v = v != 0;
    vals.push_back(APInt(it.getWidth(), uint64_t(v), /*isSigned=*/!it.isUnsigned(),
                         /*implicitTrunc=*/true));
  }
  return DenseElementsAttr::get(type, vals);
}

Attribute writeLiteral(RankedTensorType type, const Literal &values) {
  return writeLiteral(type, values.f, values.i);
}

/// Maps each linear index of `resultShape` to the linear index of an operand
/// of `operandShape` broadcast to it.
SmallVector<int64_t> broadcastIndexMap(ArrayRef<int64_t> operandShape,
                                       ArrayRef<int64_t> resultShape) {
  int64_t total = 1;
  for (int64_t d : resultShape)
    total *= d;
  SmallVector<int64_t> map(total);
  size_t offset = resultShape.size() - operandShape.size();
  for (int64_t lin = 0; lin < total; ++lin) {
    int64_t rem = lin, src = 0, stride = 1;
    for (int64_t d = resultShape.size() - 1; d >= 0; --d) {
      int64_t coord = rem % resultShape[d];
      rem /= resultShape[d];
      if (d >= static_cast<int64_t>(offset)) {
        int64_t od = operandShape[d - offset];
        src += (od == 1 ? 0 : coord) * stride;
        stride *= od;
      }
    }
    map[lin] = src;
  }
  return map;
}

/// Folds an elementwise op over constant operands of any broadcastable
/// shapes. `fn` gets the operand values as doubles (float operands) or
/// int64 (integer operands) and returns std::nullopt to refuse (e.g. x/0).
template <typename FloatFn, typename IntFn>
Attribute foldElementwise(ArrayRef<Attribute> operands, Type resultType,
                          FloatFn floatFn, IntFn intFn) {
  SmallVector<Literal> lits;
  for (Attribute a : operands) {
    auto lit = readLiteral(a);
    if (!lit)
      return {};
    lits.push_back(std::move(*lit));
  }
  auto rt = cast<RankedTensorType>(resultType);
  if (rt.getNumElements() > kFoldLimit)
    return {};
  SmallVector<SmallVector<int64_t>> maps;
  for (const Literal &l : lits)
    maps.push_back(broadcastIndexMap(l.type.getShape(), rt.getShape()));
  // The computation type is that of the last operand (Where's condition is
  // bool, its branches carry the type).
  bool isFloat = lits.back().isFloat;
  SmallVector<double> f;
  SmallVector<int64_t> i;
  SmallVector<double> fargs(lits.size());
  SmallVector<int64_t> iargs(lits.size());
  for (int64_t k = 0, e = rt.getNumElements(); k < e; ++k) {
    for (size_t a = 0; a < lits.size(); ++a) {
      fargs[a] = lits[a].asDouble(maps[a][k]);
      iargs[a] = lits[a].asInt(maps[a][k]);
    }
    if (isFloat) {
      std::optional<double> v = floatFn(ArrayRef<double>(fargs));
      if (!v)
        return {};
      f.push_back(*v);
    } else {
      std::optional<int64_t> v = intFn(ArrayRef<int64_t>(iargs));
      if (!v)
        return {};
      i.push_back(*v);
    }
  }
  return writeLiteral(rt, f, i);
}

// Integer arithmetic wraps in two's complement, as ONNX runtimes and the
// generated code do; computing it in unsigned keeps the folder free of
// undefined behaviour on hostile constants.
double wrapAdd(double a, double b) { return a + b; }
double wrapSub(double a, double b) { return a - b; }
double wrapMul(double a, double b) { return a * b; }
double wrapNeg(double a) { return -a; }
int64_t wrapAdd(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrapSub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t wrapMul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
int64_t wrapNeg(int64_t a) { return int64_t(0 - uint64_t(a)); }

template <typename Fn>
Attribute foldSame(ArrayRef<Attribute> operands, Type resultType, Fn fn) {
  return foldElementwise(
      operands, resultType,
      [&](ArrayRef<double> a) -> std::optional<double> { return fn(a); },
      [&](ArrayRef<int64_t> a) -> std::optional<int64_t> { return fn(a); });
}

/// Comparison: both float and int inputs produce bool.
template <typename Fn>
Attribute foldCompare(ArrayRef<Attribute> operands, Type resultType, Fn fn) {
  auto lhs = readLiteral(operands[0]), rhs = readLiteral(operands[1]);
  if (!lhs || !rhs)
    return {};
  auto rt = cast<RankedTensorType>(resultType);
  auto lm = broadcastIndexMap(lhs->type.getShape(), rt.getShape());
  auto rm = broadcastIndexMap(rhs->type.getShape(), rt.getShape());
  SmallVector<int64_t> out;
  for (int64_t k = 0, e = rt.getNumElements(); k < e; ++k)
    out.push_back(fn(lhs->asDouble(lm[k]), rhs->asDouble(rm[k])));
  return writeLiteral(rt, {}, out);
}

/// Strides of a row-major shape.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Builds a literal of `type` whose element k is source element src(k).
template <typename SrcFn>
Attribute gatherLiteral(const Literal &source, RankedTensorType type,
                        SrcFn src) {
  if (type.getNumElements() > kFoldLimit)
    return {};
  Literal out;
  out.type = type;
  out.isFloat = source.isFloat;
  for (int64_t k = 0, e = type.getNumElements(); k < e; ++k) {
    int64_t s = src(k);
    if (s < 0 || s >= source.size())
      return {};
    if (source.isFloat)
      out.f.push_back(source.f[s]);
    else
      out.i.push_back(source.i[s]);
  }
  return writeLiteral(type, out);
}

/// Decomposes linear index k of `shape` into coordinates.
SmallVector<int64_t> coordsOf(int64_t k, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> c(shape.size());
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    c[d] = k % shape[d];
    k /= shape[d];
  }
  return c;
}

/// Element k of the result is source[base + sum_d coord_d(k) * strides[d]]:
/// transpose (permuted strides) and slice (strides scaled by steps).
Attribute stridedLiteral(const Literal &source, RankedTensorType type,
                         int64_t base, ArrayRef<int64_t> strides) {
  return gatherLiteral(source, type, [&](int64_t k) {
    auto c = coordsOf(k, type.getShape());
    int64_t src = base;
    for (size_t d = 0; d < c.size(); ++d)
      src += c[d] * strides[d];
    return src;
  });
}

} // namespace

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  return foldSame(adaptor.getOperands(), getType(),
                  [](auto a) { return wrapNeg(a[0]); });
}

OpFoldResult SqrtOp::fold(FoldAdaptor adaptor) {
  return foldElementwise(
      adaptor.getOperands(), getType(),
      [](ArrayRef<double> a) -> std::optional<double> {
        return std::sqrt(a[0]);
      },
      [](ArrayRef<int64_t>) -> std::optional<int64_t> { return std::nullopt; });
}

OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  return foldSame(adaptor.getOperands(), getType(),
                  [](auto a) { return a[0] == 0; });
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto lit = readLiteral(adaptor.getInput());
  if (!lit)
    return {};
  auto rt = cast<RankedTensorType>(getType());
  Type to = rt.getElementType();
  if (to.isInteger(1)) {
    SmallVector<int64_t> out;
    for (int64_t k = 0; k < lit->size(); ++k)
      out.push_back(lit->asDouble(k) != 0);
    return writeLiteral(rt, {}, out);
  }
  if (isa<IntegerType>(to) && lit->isFloat) {
    SmallVector<int64_t> out;
    for (double v : lit->f) {
      if (!std::isfinite(v))
        return {};
      out.push_back(int64_t(std::trunc(v)));
    }
    return writeLiteral(rt, {}, out);
  }
  return writeLiteral(rt, *lit);
}

#define PCC_FOLD_SAME(OP, EXPR)                                                \
  OpFoldResult OP::fold(FoldAdaptor adaptor) {                                 \
    return foldSame(adaptor.getOperands(), getType(),                          \
                    [](auto a) { return EXPR; });                              \
  }
PCC_FOLD_SAME(AddOp, wrapAdd(a[0], a[1]))
PCC_FOLD_SAME(SubOp, wrapSub(a[0], a[1]))
PCC_FOLD_SAME(MulOp, wrapMul(a[0], a[1]))
PCC_FOLD_SAME(MaxOp, std::max(a[0], a[1]))
PCC_FOLD_SAME(MinOp, std::min(a[0], a[1]))
PCC_FOLD_SAME(AndOp, (a[0] != 0) && (a[1] != 0))
PCC_FOLD_SAME(OrOp, (a[0] != 0) || (a[1] != 0))
PCC_FOLD_SAME(XorOp, (a[0] != 0) != (a[1] != 0))
#undef PCC_FOLD_SAME

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldElementwise(
      adaptor.getOperands(), getType(),
      [](ArrayRef<double> a) -> std::optional<double> { return a[0] / a[1]; },
      [](ArrayRef<int64_t> a) -> std::optional<int64_t> {
        if (a[1] == 0 || (a[0] == INT64_MIN && a[1] == -1))
          return std::nullopt;
        return a[0] / a[1];
      });
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  // The exponent may have another element type; compute in double.
  auto base = readLiteral(adaptor.getLhs()), exp = readLiteral(adaptor.getRhs());
  if (!base || !exp)
    return {};
  auto rt = cast<RankedTensorType>(getType());
  if (rt.getNumElements() > kFoldLimit)
    return {};
  auto bm = broadcastIndexMap(base->type.getShape(), rt.getShape());
  auto em = broadcastIndexMap(exp->type.getShape(), rt.getShape());
  SmallVector<double> out;
  for (int64_t k = 0, e = rt.getNumElements(); k < e; ++k)
    out.push_back(std::pow(base->asDouble(bm[k]), exp->asDouble(em[k])));
  if (!base->isFloat)
    for (double v : out)
      if (!std::isfinite(v))
        return {};
  return writeLiteral(rt, out, {});
}

#define PCC_FOLD_COMPARE(OP, EXPR)                                             \
  OpFoldResult OP::fold(FoldAdaptor adaptor) {                                 \
    return foldCompare(adaptor.getOperands(), getType(),                       \
                       [](double x, double y) { return EXPR; });               \
  }
PCC_FOLD_COMPARE(EqualOp, x == y)
PCC_FOLD_COMPARE(LessOp, x < y)
PCC_FOLD_COMPARE(LessEqualOp, x <= y)
PCC_FOLD_COMPARE(GreaterOp, x > y)
PCC_FOLD_COMPARE(GreaterEqualOp, x >= y)
#undef PCC_FOLD_COMPARE

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  auto cond = readLiteral(adaptor.getCondition());
  auto lhs = readLiteral(adaptor.getLhs()), rhs = readLiteral(adaptor.getRhs());
  if (!cond || !lhs || !rhs || lhs->isFloat != rhs->isFloat)
    return {};
  auto rt = cast<RankedTensorType>(getType());
  if (rt.getNumElements() > kFoldLimit)
    return {};
  auto cm = broadcastIndexMap(cond->type.getShape(), rt.getShape());
  auto lm = broadcastIndexMap(lhs->type.getShape(), rt.getShape());
  auto rm = broadcastIndexMap(rhs->type.getShape(), rt.getShape());
  Literal out;
  out.type = rt;
  out.isFloat = lhs->isFloat;
  for (int64_t k = 0, e = rt.getNumElements(); k < e; ++k) {
    bool c = cond->i[cm[k]] != 0;
    if (out.isFloat)
      out.f.push_back(c ? lhs->f[lm[k]] : rhs->f[rm[k]]);
    else
      out.i.push_back(c ? lhs->i[lm[k]] : rhs->i[rm[k]]);
  }
  return writeLiteral(rt, out);
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) is one reshape of x.
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(cast<ShapedType>(getType()));
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(perm))
    identity &= static_cast<int64_t>(i) == p;
  if (identity)
    return getInput();
  auto lit = readLiteral(adaptor.getInput());
  if (!lit)
    return {};
  auto inStrides = stridesOf(lit->type.getShape());
  SmallVector<int64_t> strides;
  for (int64_t p : perm)
    strides.push_back(inStrides[p]);
  return stridedLiteral(*lit, cast<RankedTensorType>(getType()), 0, strides);
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto lit = readLiteral(adaptor.getInput());
  if (!lit)
    return {};
  auto rt = cast<RankedTensorType>(getType());
  if (rt.getNumElements() > kFoldLimit)
    return {};
  auto map = broadcastIndexMap(lit->type.getShape(), rt.getShape());
  return gatherLiteral(*lit, rt, [&](int64_t k) { return map[k]; });
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  SmallVector<Literal> parts;
  for (Attribute a : adaptor.getInputs()) {
    auto lit = readLiteral(a);
    if (!lit)
      return {};
    parts.push_back(std::move(*lit));
  }
  auto rt = cast<RankedTensorType>(getType());
  if (rt.getNumElements() > kFoldLimit)
    return {};
  int64_t axis = getAxis() < 0 ? getAxis() + rt.getRank() : getAxis();
  Literal out;
  out.type = rt;
  out.isFloat = parts.front().isFloat;
  for (int64_t k = 0, e = rt.getNumElements(); k < e; ++k) {
    auto c = coordsOf(k, rt.getShape());
    int64_t pos = c[axis];
    size_t p = 0;
    while (pos >= parts[p].type.getDimSize(axis))
      pos -= parts[p++].type.getDimSize(axis);
    c[axis] = pos;
    auto strides = stridesOf(parts[p].type.getShape());
    int64_t src = 0;
    for (size_t d = 0; d < c.size(); ++d)
      src += c[d] * strides[d];
    if (out.isFloat)
      out.f.push_back(parts[p].f[src]);
    else
      out.i.push_back(parts[p].i[src]);
  }
  return writeLiteral(rt, out);
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() &&
      llvm::all_of(getStarts(), [](int64_t s) { return s == 0; }) &&
      llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }))
    return getInput();
  auto lit = readLiteral(adaptor.getInput());
  if (!lit)
    return {};
  auto inStrides = stridesOf(lit->type.getShape());
  int64_t base = 0;
  SmallVector<int64_t> strides;
  for (size_t d = 0; d < inStrides.size(); ++d) {
    base += getStarts()[d] * inStrides[d];
    strides.push_back(getSteps()[d] * inStrides[d]);
  }
  return stridedLiteral(*lit, cast<RankedTensorType>(getType()), base,
                        strides);
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  auto data = readLiteral(adaptor.getInput());
  auto idx = readLiteral(adaptor.getIndices());
  if (!data || !idx)
    return {};
  auto rt = cast<RankedTensorType>(getType());
  ArrayRef<int64_t> inShape = data->type.getShape();
  int64_t axis = getAxis() < 0 ? getAxis() + inShape.size() : getAxis();
  int64_t idxRank = idx->type.getRank();
  auto inStrides = stridesOf(inShape);
  auto idxStrides = stridesOf(idx->type.getShape());
  return gatherLiteral(*data, rt, [&](int64_t k) -> int64_t {
    auto c = coordsOf(k, rt.getShape());
    int64_t idxLin = 0;
    for (int64_t d = 0; d < idxRank; ++d)
      idxLin += c[axis + d] * idxStrides[d];
    int64_t at = idx->i[idxLin];
    if (at < 0)
      at += inShape[axis];
    if (at < 0 || at >= inShape[axis])
      return -1; // Out of range: refuse to fold; the runtime reports it.
    int64_t src = at * inStrides[axis];
    for (int64_t d = 0; d < axis; ++d)
      src += c[d] * inStrides[d];
    for (int64_t d = axis + 1; d < int64_t(inShape.size()); ++d)
      src += c[d + idxRank - 1] * inStrides[d];
    return src;
  });
}

OpFoldResult TriluOp::fold(FoldAdaptor adaptor) {
  auto lit = readLiteral(adaptor.getInput());
  if (!lit)
    return {};
  auto rt = cast<RankedTensorType>(getType());
  int64_t rank = rt.getRank();
  Literal out = *lit;
  for (int64_t k = 0; k < out.size(); ++k) {
    auto c = coordsOf(k, rt.getShape());
    int64_t row = c[rank - 2], col = c[rank - 1];
    bool keep = getUpper() ? col - row >= getK() : col - row <= getK();
    if (keep)
      continue;
    if (out.isFloat)
      out.f[k] = 0;
    else
      out.i[k] = 0;
  }
  return writeLiteral(rt, out);
}
