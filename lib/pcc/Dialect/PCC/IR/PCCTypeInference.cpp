//===- PCCTypeInference.cpp - result types of pcc ops ---------------------===//
//
// Each op's inferReturnTypes computes its static result type from operand
// types and attributes, and reports malformed input (incompatible shapes,
// axes out of range, overflowing sizes) as an error at the op's location.
// The importer builds ops through these functions, so this file is also
// where ONNX shape errors in user models are caught.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "mlir/Dialect/Traits.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace pcc;

namespace {

using Types = SmallVectorImpl<Type>;

RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Builds a tensor type after checking that every dimension is non-negative
/// and the element count fits in int64.
FailureOr<Type> makeTensor(std::optional<Location> loc, ArrayRef<int64_t> shape,
                           Type elementType) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return emitOptionalError(loc, "negative dimension ", d,
                               " in result shape");
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d)
      return emitOptionalError(loc, "result element count overflows int64");
    count *= d;
  }
  return Type(RankedTensorType::get(shape, elementType));
}

LogicalResult push(Types &types, FailureOr<Type> type) {
  if (failed(type))
    return failure();
  types.push_back(*type);
  return success();
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(shape, os, ",");
  os << "]";
  return s;
}

FailureOr<SmallVector<int64_t>> broadcast(std::optional<Location> loc,
                                          ArrayRef<int64_t> a,
                                          ArrayRef<int64_t> b) {
  SmallVector<int64_t> out;
  if (!mlir::OpTrait::util::getBroadcastedShape(a, b, out))
    return emitOptionalError(loc, "incompatible shapes ", shapeStr(a), " and ",
                             shapeStr(b), " for broadcasting");
  return out;
}

/// Normalizes an axis in [-rank, rank) to [0, rank).
FailureOr<int64_t> normAxis(std::optional<Location> loc, int64_t axis,
                            int64_t rank) {
  if (axis < -rank || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " out of range for rank ",
                             rank);
  return pcc::normalizeAxis(axis, rank);
}

LogicalResult sameAsInput(Value input, Types &types) {
  types.push_back(input.getType());
  return success();
}

LogicalResult inferBinary(std::optional<Location> loc, Value lhs, Value rhs,
                          bool isComparison, Types &types) {
  auto l = tensorOf(lhs), r = tensorOf(rhs);
  if (l.getElementType() != r.getElementType())
    return emitOptionalError(loc, "operand element types differ: ",
                             l.getElementType(), " vs ", r.getElementType());
  auto shape = broadcast(loc, l.getShape(), r.getShape());
  if (failed(shape))
    return failure();
  Type elem = isComparison ? IntegerType::get(lhs.getContext(), 1)
                           : l.getElementType();
  return push(types, makeTensor(loc, *shape, elem));
}

/// Output size of a pooled or convolved spatial axis.
FailureOr<int64_t> windowedSize(std::optional<Location> loc, int64_t in,
                                int64_t kernel, int64_t stride,
                                int64_t padBegin, int64_t padEnd,
                                int64_t dilation, bool ceilMode) {
  if (kernel <= 0 || stride <= 0 || dilation <= 0 || padBegin < 0 ||
      padEnd < 0)
    return emitOptionalError(loc, "kernel, stride and dilation must be "
                                  "positive and pads non-negative");
  int64_t effective = (kernel - 1) * dilation + 1;
  int64_t span = in + padBegin + padEnd - effective;
  if (span < 0)
    return emitOptionalError(loc, "window of ", effective,
                             " exceeds padded input size ",
                             in + padBegin + padEnd);
  int64_t out = (ceilMode ? llvm::divideCeil(span, stride) : span / stride) + 1;
  // ONNX drops a last window that would start entirely in the end padding.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

LogicalResult checkSpatialAttrs(std::optional<Location> loc, size_t spatial,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> pads,
                                ArrayRef<int64_t> dilations) {
  if (strides.size() != spatial || dilations.size() != spatial ||
      pads.size() != 2 * spatial)
    return emitOptionalError(loc, "expected ", spatial,
                             " strides and dilations and ", 2 * spatial,
                             " pads");
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location>,
                                           Adaptor adaptor, Types &types) {
  types.push_back(adaptor.getValue().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define PCC_SAME_AS_INPUT(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location>,  \
                                     Adaptor adaptor, Types &types) {          \
    return sameAsInput(adaptor.getInput(), types);                             \
  }
PCC_SAME_AS_INPUT(NegOp)
PCC_SAME_AS_INPUT(AbsOp)
PCC_SAME_AS_INPUT(ExpOp)
PCC_SAME_AS_INPUT(LogOp)
PCC_SAME_AS_INPUT(SqrtOp)
PCC_SAME_AS_INPUT(ReciprocalOp)
PCC_SAME_AS_INPUT(FloorOp)
PCC_SAME_AS_INPUT(CeilOp)
PCC_SAME_AS_INPUT(TanhOp)
PCC_SAME_AS_INPUT(ErfOp)
PCC_SAME_AS_INPUT(SigmoidOp)
PCC_SAME_AS_INPUT(ReluOp)
PCC_SAME_AS_INPUT(SinOp)
PCC_SAME_AS_INPUT(CosOp)
PCC_SAME_AS_INPUT(NotOp)
PCC_SAME_AS_INPUT(GeluOp)
PCC_SAME_AS_INPUT(LeakyReluOp)
PCC_SAME_AS_INPUT(ClipOp)
PCC_SAME_AS_INPUT(SoftmaxOp)
PCC_SAME_AS_INPUT(LogSoftmaxOp)
PCC_SAME_AS_INPUT(LayerNormOp)
PCC_SAME_AS_INPUT(BatchNormOp)
PCC_SAME_AS_INPUT(DropoutOp)
PCC_SAME_AS_INPUT(TriluOp)
#undef PCC_SAME_AS_INPUT

LogicalResult CastOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor, Types &types) {
  types.push_back(tensorOf(adaptor.getInput()).clone(adaptor.getTo()));
  return success();
}

#define PCC_BINARY(OP, COMPARISON)                                             \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor, Types &types) {          \
    return inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), COMPARISON,    \
                       types);                                                 \
  }
PCC_BINARY(AddOp, false)
PCC_BINARY(SubOp, false)
PCC_BINARY(MulOp, false)
PCC_BINARY(DivOp, false)
PCC_BINARY(MaxOp, false)
PCC_BINARY(MinOp, false)
PCC_BINARY(AndOp, false)
PCC_BINARY(OrOp, false)
PCC_BINARY(XorOp, false)
PCC_BINARY(EqualOp, true)
PCC_BINARY(LessOp, true)
PCC_BINARY(LessEqualOp, true)
PCC_BINARY(GreaterOp, true)
PCC_BINARY(GreaterEqualOp, true)
#undef PCC_BINARY

// Pow allows a different exponent type (ONNX: Pow(float, int64)).
LogicalResult PowOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor, Types &types) {
  auto l = tensorOf(adaptor.getLhs()), r = tensorOf(adaptor.getRhs());
  auto shape = broadcast(loc, l.getShape(), r.getShape());
  if (failed(shape))
    return failure();
  return push(types, makeTensor(loc, *shape, l.getElementType()));
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor, Types &types) {
  auto c = tensorOf(adaptor.getCondition()), l = tensorOf(adaptor.getLhs()),
       r = tensorOf(adaptor.getRhs());
  if (l.getElementType() != r.getElementType())
    return emitOptionalError(loc, "branch element types differ: ",
                             l.getElementType(), " vs ", r.getElementType());
  auto lr = broadcast(loc, l.getShape(), r.getShape());
  if (failed(lr))
    return failure();
  auto all = broadcast(loc, c.getShape(), *lr);
  if (failed(all))
    return failure();
  return push(types, makeTensor(loc, *all, l.getElementType()));
}

//===----------------------------------------------------------------------===//
// Contractions and convolutions
//===----------------------------------------------------------------------===//

/// A product of 16-bit operands may also be f32: its accumulator
/// unrounded, where a GPU rank's program widens it at once
/// (WidenKernels.cpp).
static bool productTypesCompatible(TypeRange l, TypeRange r) {
  if (l.size() != r.size())
    return false;
  for (auto [a, b] : llvm::zip(l, r)) {
    if (a == b)
      continue;
    auto x = dyn_cast<RankedTensorType>(a), y = dyn_cast<RankedTensorType>(b);
    if (!x || !y || x.getShape() != y.getShape())
      return false;
    Type ex = x.getElementType(), ey = y.getElementType();
    auto narrowAndF32 = [](Type n, Type w) {
      return (n.isF16() || n.isBF16()) && w.isF32();
    };
    if (!narrowAndF32(ex, ey) && !narrowAndF32(ey, ex))
      return false;
  }
  return true;
}

bool MatMulOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return productTypesCompatible(l, r);
}

bool GemmOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return productTypesCompatible(l, r);
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor, Types &types) {
  auto l = tensorOf(adaptor.getLhs()), r = tensorOf(adaptor.getRhs());
  if (l.getElementType() != r.getElementType())
    return emitOptionalError(loc, "matmul element types differ");
  if (l.getRank() == 0 || r.getRank() == 0)
    return emitOptionalError(loc, "matmul operands must have rank >= 1");
  SmallVector<int64_t> ls(l.getShape()), rs(r.getShape());
  bool lVec = ls.size() == 1, rVec = rs.size() == 1;
  if (lVec)
    ls.insert(ls.begin(), 1);
  if (rVec)
    rs.push_back(1);
  int64_t m = ls[ls.size() - 2], k = ls.back();
  int64_t k2 = rs[rs.size() - 2], n = rs.back();
  if (k != k2)
    return emitOptionalError(loc, "matmul contraction sizes differ: ",
                             shapeStr(l.getShape()), " x ",
                             shapeStr(r.getShape()));
  auto batch = broadcast(loc, ArrayRef(ls).drop_back(2),
                         ArrayRef(rs).drop_back(2));
  if (failed(batch))
    return failure();
  SmallVector<int64_t> shape = *batch;
  if (!lVec)
    shape.push_back(m);
  if (!rVec)
    shape.push_back(n);
  return push(types, makeTensor(loc, shape, l.getElementType()));
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor, Types &types) {
  auto q = tensorOf(adaptor.getQuery()), v = tensorOf(adaptor.getValue());
  if (q.getRank() < 2 || v.getRank() != q.getRank())
    return emitOptionalError(loc, "attention query and value must have the "
                                  "same rank, at least 2");
  SmallVector<int64_t> shape(q.getShape());
  shape.back() = v.getShape().back();
  return push(types, makeTensor(loc, shape, q.getElementType()));
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor, Types &types) {
  auto a = tensorOf(adaptor.getA()), b = tensorOf(adaptor.getB());
  bool ta = adaptor.getTransA(), tb = adaptor.getTransB();
  if (a.getRank() < 2 || b.getRank() < 2)
    return emitOptionalError(loc, "gemm operands must have rank >= 2");
  // Leading dimensions (rank > 2) are rows: kept in the result, or, with
  // transA, contracted with B's.
  ArrayRef<int64_t> as = a.getShape(), bs = b.getShape();
  ArrayRef<int64_t> rows = as.drop_back();
  bool batchedB = b.getRank() > 2;
  if ((a.getRank() > 2 || batchedB) &&
      (batchedB ? !ta || tb || bs.drop_back() != rows : ta))
    return emitOptionalError(
        loc, "gemm with rank > 2 operands takes either A's leading "
             "dimensions as rows (transA false, B of rank 2) or contracts "
             "them with B's (transA, B's leading dimensions the same): ",
        shapeStr(as), " x ", shapeStr(bs));
  int64_t rowCount = numElements(rows);
  int64_t m = ta ? as.back() : rowCount;
  int64_t k = ta ? rowCount : as.back();
  int64_t k2 = batchedB ? numElements(bs.drop_back()) : bs[tb ? 1 : 0];
  int64_t n = tb ? bs[0] : bs.back();
  if (k != k2)
    return emitOptionalError(loc, "gemm contraction sizes differ: ", k,
                             " vs ", k2);
  SmallVector<int64_t> shape;
  if (ta)
    shape = {m, n};
  else
    llvm::append_range(shape, rows);
  if (!ta)
    shape.push_back(n);
  if (Value c = adaptor.getC()) {
    // C broadcasts to [m, n]; with rows of rank > 1, only along n.
    ArrayRef<int64_t> cs = tensorOf(c).getShape();
    SmallVector<int64_t> out;
    bool alongN = numElements(cs) == (cs.empty() ? 1 : cs.back()) &&
                  cs.size() <= shape.size();
    if (!mlir::OpTrait::util::getBroadcastedShape(cs, {m, n}, out) ||
        out != ArrayRef<int64_t>{m, n} || (shape.size() > 2 && !alongN))
      return emitOptionalError(loc, "gemm bias shape ", shapeStr(cs),
                               " does not broadcast to ", shapeStr(shape));
  }
  return push(types, makeTensor(loc, shape, a.getElementType()));
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor, Types &types) {
  auto x = tensorOf(adaptor.getInput()), w = tensorOf(adaptor.getFilter());
  if (x.getRank() < 3 || w.getRank() != x.getRank())
    return emitOptionalError(loc, "conv needs input and filter of equal "
                                  "rank >= 3");
  size_t spatial = x.getRank() - 2;
  if (failed(checkSpatialAttrs(loc, spatial, adaptor.getStrides(),
                               adaptor.getPads(), adaptor.getDilations())))
    return failure();
  int64_t group = adaptor.getGroup();
  int64_t cin = x.getDimSize(1), cout = w.getDimSize(0);
  if (group <= 0 || cin % group != 0 || cout % group != 0 ||
      w.getDimSize(1) * group != cin)
    return emitOptionalError(loc, "conv channels do not match: input ", cin,
                             ", filter ", shapeStr(w.getShape()), ", group ",
                             group);
  if (Value b = adaptor.getBias()) {
    auto bt = tensorOf(b);
    if (bt.getRank() != 1 || bt.getDimSize(0) != cout)
      return emitOptionalError(loc, "conv bias must be tensor<", cout, "x..>");
  }
  SmallVector<int64_t> shape{x.getDimSize(0), cout};
  for (size_t i = 0; i < spatial; ++i) {
    auto size = windowedSize(loc, x.getDimSize(i + 2), w.getDimSize(i + 2),
                             adaptor.getStrides()[i], adaptor.getPads()[i],
                             adaptor.getPads()[i + spatial],
                             adaptor.getDilations()[i], false);
    if (failed(size))
      return failure();
    shape.push_back(*size);
  }
  return push(types, makeTensor(loc, shape, x.getElementType()));
}

template <typename PoolAdaptor>
static LogicalResult inferPool(std::optional<Location> loc,
                               PoolAdaptor adaptor, Types &types) {
  auto x = tensorOf(adaptor.getInput());
  if (x.getRank() < 3)
    return emitOptionalError(loc, "pooling needs rank >= 3 (N, C, spatial)");
  size_t spatial = x.getRank() - 2;
  if (adaptor.getKernelShape().size() != spatial)
    return emitOptionalError(loc, "expected ", spatial, " kernel sizes");
  if (failed(checkSpatialAttrs(loc, spatial, adaptor.getStrides(),
                               adaptor.getPads(), adaptor.getDilations())))
    return failure();
  SmallVector<int64_t> shape{x.getDimSize(0), x.getDimSize(1)};
  for (size_t i = 0; i < spatial; ++i) {
    auto size = windowedSize(
        loc, x.getDimSize(i + 2), adaptor.getKernelShape()[i],
        adaptor.getStrides()[i], adaptor.getPads()[i],
        adaptor.getPads()[i + spatial], adaptor.getDilations()[i],
        adaptor.getCeilMode());
    if (failed(size))
      return failure();
    shape.push_back(*size);
  }
  return push(types, makeTensor(loc, shape, x.getElementType()));
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor, Types &types) {
  return inferPool(loc, adaptor, types);
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor, Types &types) {
  return inferPool(loc, adaptor, types);
}

LogicalResult GlobalAveragePoolOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    Types &types) {
  auto x = tensorOf(adaptor.getInput());
  if (x.getRank() < 3)
    return emitOptionalError(loc, "pooling needs rank >= 3 (N, C, spatial)");
  SmallVector<int64_t> shape(x.getShape());
  std::fill(shape.begin() + 2, shape.end(), 1);
  return push(types, makeTensor(loc, shape, x.getElementType()));
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

template <typename ReduceAdaptor>
static LogicalResult inferReduce(std::optional<Location> loc,
                                 ReduceAdaptor adaptor, Types &types) {
  auto x = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> axes = adaptor.getAxes();
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= x.getRank())
      return emitOptionalError(loc, "reduction axis ", axes[i],
                               " out of range for rank ", x.getRank());
    if (i > 0 && axes[i] <= axes[i - 1])
      return emitOptionalError(loc, "reduction axes must be sorted and "
                                    "unique");
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < x.getRank(); ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(x.getDimSize(d));
    else if (adaptor.getKeepdims())
      shape.push_back(1);
  }
  return push(types, makeTensor(loc, shape, x.getElementType()));
}

#define PCC_REDUCE(OP)                                                         \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor, Types &types) {          \
    return inferReduce(loc, adaptor, types);                                   \
  }
PCC_REDUCE(ReduceSumOp)
PCC_REDUCE(ReduceMeanOp)
PCC_REDUCE(ReduceMaxOp)
PCC_REDUCE(ReduceMinOp)
PCC_REDUCE(ReduceProdOp)
#undef PCC_REDUCE

template <typename ArgAdaptor>
static LogicalResult inferArgReduce(MLIRContext *ctx,
                                    std::optional<Location> loc,
                                    ArgAdaptor adaptor, Types &types) {
  auto x = tensorOf(adaptor.getInput());
  auto axis = normAxis(loc, adaptor.getAxis(), x.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(x.getShape());
  if (adaptor.getKeepdims())
    shape[*axis] = 1;
  else
    shape.erase(shape.begin() + *axis);
  return push(types, makeTensor(loc, shape, IntegerType::get(ctx, 64)));
}

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor, Types &types) {
  return inferArgReduce(ctx, loc, adaptor, types);
}

LogicalResult ArgMinOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor, Types &types) {
  return inferArgReduce(ctx, loc, adaptor, types);
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       Adaptor adaptor, Types &types) {
  auto x = tensorOf(adaptor.getInput());
  if (x.getRank() == 0)
    return emitOptionalError(loc, "topk needs an input of rank 1 or more");
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= x.getRank())
    return emitOptionalError(loc, "topk axis ", axis, " is out of range for ",
                             shapeStr(x.getShape()));
  int64_t k = adaptor.getK();
  if (k < 0 || k > x.getDimSize(axis))
    return emitOptionalError(loc, "topk k = ", k, " is not in [0, ",
                             x.getDimSize(axis), "] (the size of axis ", axis,
                             " of ", shapeStr(x.getShape()), ")");
  SmallVector<int64_t> shape(x.getShape());
  shape[axis] = k;
  if (failed(push(types, makeTensor(loc, shape, x.getElementType()))))
    return failure();
  return push(types, makeTensor(loc, shape, IntegerType::get(ctx, 64)));
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor, Types &types) {
  auto x = tensorOf(adaptor.getInput());
  auto result = makeTensor(loc, adaptor.getShape(), x.getElementType());
  if (failed(result))
    return failure();
  if (cast<RankedTensorType>(*result).getNumElements() != x.getNumElements())
    return emitOptionalError(loc, "cannot reshape ", shapeStr(x.getShape()),
                             " to ", shapeStr(adaptor.getShape()),
                             ": element counts differ");
  types.push_back(*result);
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor, Types &types) {
  auto x = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (static_cast<int64_t>(perm.size()) != x.getRank())
    return emitOptionalError(loc, "transpose perm has ", perm.size(),
                             " entries for rank ", x.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.getRank() || seen[p])
      return emitOptionalError(loc, "transpose perm ", shapeStr(perm),
                               " is not a permutation");
    seen[p] = true;
    shape.push_back(x.getDimSize(p));
  }
  return push(types, makeTensor(loc, shape, x.getElementType()));
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor, Types &types) {
  auto x = tensorOf(adaptor.getInput());
  auto shape = broadcast(loc, x.getShape(), adaptor.getShape());
  if (failed(shape))
    return failure();
  return push(types, makeTensor(loc, *shape, x.getElementType()));
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor, Types &types) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "concat needs at least one input");
  auto first = tensorOf(adaptor.getInputs().front());
  auto axis = normAxis(loc, adaptor.getAxis(), first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value v : adaptor.getInputs()) {
    auto t = tensorOf(v);
    if (t.getRank() != first.getRank() ||
        t.getElementType() != first.getElementType())
      return emitOptionalError(loc, "concat inputs differ in rank or type");
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (d == *axis)
        continue;
      if (t.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(loc, "concat inputs differ in dim ", d, ": ",
                                 shapeStr(first.getShape()), " vs ",
                                 shapeStr(t.getShape()));
    }
    if (llvm::AddOverflow(shape[*axis], t.getDimSize(*axis), shape[*axis]))
      return emitOptionalError(loc, "concat size overflows int64");
  }
  return push(types, makeTensor(loc, shape, first.getElementType()));
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor, Types &types) {
  auto x = tensorOf(adaptor.getInput());
  auto axis = normAxis(loc, adaptor.getAxis(), x.getRank());
  if (failed(axis))
    return failure();
  int64_t total = 0;
  for (int64_t s : adaptor.getSizes()) {
    if (s < 0 || llvm::AddOverflow(total, s, total))
      return emitOptionalError(loc, "invalid split size ", s);
  }
  if (total != x.getDimSize(*axis))
    return emitOptionalError(loc, "split sizes sum to ", total, " but dim ",
                             *axis, " has ", x.getDimSize(*axis));
  for (int64_t s : adaptor.getSizes()) {
    SmallVector<int64_t> shape(x.getShape());
    shape[*axis] = s;
    types.push_back(RankedTensorType::get(shape, x.getElementType()));
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor, Types &types) {
  auto x = tensorOf(adaptor.getInput());
  size_t rank = x.getRank();
  if (adaptor.getStarts().size() != rank || adaptor.getSizes().size() != rank ||
      adaptor.getSteps().size() != rank)
    return emitOptionalError(loc, "slice needs one start, size and step per "
                                  "axis");
  return push(types,
              makeTensor(loc, adaptor.getSizes(), x.getElementType()));
}

/// ONNX Gather's result: input[:axis] + indices + input[axis+1:].
static LogicalResult inferGather(std::optional<Location> loc, Value input,
                                 Value indices, int64_t axisAttr,
                                 Types &types) {
  auto x = tensorOf(input), idx = tensorOf(indices);
  if (x.getRank() == 0)
    return emitOptionalError(loc, "gather input must have rank >= 1");
  auto axis = normAxis(loc, axisAttr, x.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(x.getShape().take_front(*axis));
  llvm::append_range(shape, idx.getShape());
  llvm::append_range(shape, x.getShape().drop_front(*axis + 1));
  return push(types, makeTensor(loc, shape, x.getElementType()));
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor, Types &types) {
  auto data = tensorOf(adaptor.getData());
  auto indices = tensorOf(adaptor.getIndices());
  auto updates = tensorOf(adaptor.getUpdates());
  StringRef reduction = adaptor.getReduction();
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    return emitOptionalError(loc,
                             "scatter_nd reduction must be none, add or "
                             "mul, not '",
                             reduction, "'");
  int64_t b = adaptor.getBatchDims();
  if (b < 0 || indices.getRank() < b + 1 || data.getRank() < b ||
      data.getShape().take_front(b) != indices.getShape().take_front(b))
    return emitOptionalError(loc, "scatter_nd batch_dims ", b,
                             " do not lead both data ",
                             shapeStr(data.getShape()), " and indices ",
                             shapeStr(indices.getShape()));
  int64_t k = indices.getShape().back();
  if (k < 1 || k > data.getRank() - b)
    return emitOptionalError(loc, "scatter_nd index tuples of ", k,
                             " entries do not address ",
                             shapeStr(data.getShape()));
  SmallVector<int64_t> expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(b + k));
  if (updates.getShape() != ArrayRef<int64_t>(expected) ||
      updates.getElementType() != data.getElementType())
    return emitOptionalError(
        loc, "scatter_nd updates ", shapeStr(updates.getShape()),
        " do not match indices ", shapeStr(indices.getShape()), " into ",
        shapeStr(data.getShape()), " (expected ", shapeStr(expected),
        " of the data's element type)");
  types.push_back(data);
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor, Types &types) {
  return inferGather(loc, adaptor.getInput(), adaptor.getIndices(),
                     adaptor.getAxis(), types);
}

LogicalResult ShardGatherOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor, Types &types) {
  return inferGather(loc, adaptor.getInput(), adaptor.getIndices(),
                     adaptor.getAxis(), types);
}
