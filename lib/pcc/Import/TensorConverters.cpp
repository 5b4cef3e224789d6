//===- TensorConverters.cpp - ONNX shape and data-movement ops to pcc -----===//
//
// ONNX passes reshape targets, slice bounds, split sizes and axes as tensors;
// after folding they must be constants, and become pcc attributes. Shape,
// Size, ConstantOfShape and Range produce constants directly because every
// shape in the imported module is static.
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;

namespace pcc::import {
namespace {

Value i64Constant(NodeContext &c, ArrayRef<int64_t> values,
                  ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, c.builder.getI64Type());
  return c.constant(DenseElementsAttr::get(type, values));
}

Results convertShape(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  ArrayRef<int64_t> shape = c.inputType(0).getShape();
  int64_t rank = shape.size();
  int64_t start = c.intAttr("start", 0), end = c.intAttr("end", rank);
  auto clampDim = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  start = clampDim(start);
  end = std::max(start, clampDim(end));
  SmallVector<int64_t> dims(shape.begin() + start, shape.begin() + end);
  return SmallVector<Value>{
      i64Constant(c, dims, {static_cast<int64_t>(dims.size())})};
}

Results convertSize(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  return SmallVector<Value>{
      i64Constant(c, {c.inputType(0).getNumElements()}, {})};
}

Results convertConstantOfShape(NodeContext &c) {
  auto shape = c.constInts(0, "ConstantOfShape shape");
  if (failed(shape))
    return failure();
  int64_t count = 1;
  for (int64_t d : *shape) {
    if (d < 0)
      return c.error() << "ConstantOfShape has negative dimension " << d;
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d)
      return c.error() << "ConstantOfShape element count overflows int64";
    count *= d;
  }
  Type elem = c.builder.getF32Type();
  Attribute value = c.builder.getF32FloatAttr(0);
  if (const auto *a = c.attr("value")) {
    const onnx::TensorProto &t = a->t();
    elem = elementTypeFor(t.data_type(), c.ctx());
    if (!elem)
      return c.error() << "ConstantOfShape value has unsupported type";
    // The value is a one-element tensor; read it from whichever field holds
    // it.
    double f = 0;
    int64_t i = 0;
    if (t.has_raw_data()) {
      const std::string &raw = t.raw_data();
      unsigned bytes = (elem.getIntOrFloatBitWidth() + 7) / 8;
      if (raw.size() < bytes)
        return c.error() << "ConstantOfShape value has no data";
      if (elem.isF32()) {
        float v;
        memcpy(&v, raw.data(), 4);
        f = v;
      } else if (elem.isF64()) {
        memcpy(&f, raw.data(), 8);
      } else if (isa<IntegerType>(elem)) {
        uint64_t bits = 0;
        memcpy(&bits, raw.data(), bytes);
        i = elem.isInteger(1) ? bits & 1 : llvm::SignExtend64(bits, bytes * 8);
      }
    } else if (t.float_data_size()) {
      f = t.float_data(0);
    } else if (t.double_data_size()) {
      f = t.double_data(0);
    } else if (t.int64_data_size()) {
      i = t.int64_data(0);
    } else if (t.int32_data_size()) {
      i = t.int32_data(0);
    }
    if (isa<FloatType>(elem))
      value = FloatAttr::get(elem, f);
    else
      value = IntegerAttr::get(elem, elem.isInteger(1) ? (i != 0) : i);
  }
  auto type = RankedTensorType::get(*shape, elem);
  return SmallVector<Value>{c.constant(DenseElementsAttr::get(type, value))};
}

Results convertRange(NodeContext &c) {
  if (failed(c.requireInputs(3)))
    return failure();
  auto start = c.constScalar(0, "Range start");
  auto limit = c.constScalar(1, "Range limit");
  auto delta = c.constScalar(2, "Range delta");
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  if (*delta == 0)
    return c.error() << "Range delta is zero";
  double n = std::ceil((*limit - *start) / *delta);
  if (!std::isfinite(n))
    return c.error() << "Range start, limit and delta must be finite, got "
                     << *start << ", " << *limit << ", " << *delta;
  if (n > (1 << 24))
    return c.error() << "Range of " << n << " elements is too large to fold";
  int64_t count = std::max<int64_t>(0, int64_t(n));
  Type elem = c.inputType(0).getElementType();
  auto type = RankedTensorType::get({count}, elem);
  if (isa<FloatType>(elem)) {
    SmallVector<APFloat> vals;
    for (int64_t k = 0; k < count; ++k) {
      APFloat v(*start + k * *delta);
      bool lost;
      v.convert(cast<FloatType>(elem).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      vals.push_back(v);
    }
    return SmallVector<Value>{c.constant(DenseElementsAttr::get(type, vals))};
  }
  SmallVector<APInt> vals;
  for (int64_t k = 0; k < count; ++k)
    vals.push_back(APInt(elem.getIntOrFloatBitWidth(),
                         int64_t(*start) + k * int64_t(*delta), true));
  return SmallVector<Value>{c.constant(DenseElementsAttr::get(type, vals))};
}

FailureOr<Value> reshapeTo(NodeContext &c, Value v, ArrayRef<int64_t> shape) {
  return c.build1<ReshapeOp>(v, {c.i64s("shape", shape)});
}

Results convertReshape(NodeContext &c) {
  auto target = c.constInts(1, "Reshape shape");
  if (failed(target))
    return failure();
  auto in = c.inputType(0);
  bool allowZero = c.intAttr("allowzero", 0) != 0;
  SmallVector<int64_t> shape(*target);
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= in.getRank())
        return c.error() << "Reshape copies dim " << i
                         << " that the input does not have";
      d = in.getDimSize(i);
    }
    if (d == -1) {
      if (inferred >= 0)
        return c.error() << "Reshape shape has more than one -1";
      inferred = i;
      continue;
    }
    if (d < 0)
      return c.error() << "Reshape shape has invalid dimension " << d;
    if (d != 0 && known > std::numeric_limits<int64_t>::max() / d)
      return c.error() << "Reshape element count overflows int64";
    known *= d;
  }
  if (inferred >= 0) {
    if (known == 0 || in.getNumElements() % known != 0)
      return c.error() << "Reshape cannot infer the -1 dimension of "
                       << in << " with the other dims' product " << known;
    shape[inferred] = in.getNumElements() / known;
  }
  return one(reshapeTo(c, c.input(0), shape));
}

Results convertFlatten(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  auto in = c.inputType(0);
  int64_t rank = in.getRank();
  int64_t axis = c.intAttr("axis", 1);
  if (axis < -rank || axis > rank)
    return c.error() << "Flatten axis " << axis << " out of range for rank "
                     << rank;
  if (axis < 0)
    axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : inner) *= in.getDimSize(d);
  return one(reshapeTo(c, c.input(0), {outer, inner}));
}

Results convertSqueeze(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  auto in = c.inputType(0);
  auto axes = c.axesOperand(13, "Squeeze axes");
  if (failed(axes))
    return failure();
  SmallVector<bool> drop(in.getRank(), false);
  if (!*axes) {
    for (int64_t d = 0; d < in.getRank(); ++d)
      drop[d] = in.getDimSize(d) == 1;
  } else {
    for (int64_t a : **axes) {
      auto axis = normalizeAxis(c, a, in.getRank());
      if (failed(axis))
        return failure();
      if (in.getDimSize(*axis) != 1)
        return c.error() << "Squeeze axis " << a << " has size "
                         << in.getDimSize(*axis) << ", not 1";
      drop[*axis] = true;
    }
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (!drop[d])
      shape.push_back(in.getDimSize(d));
  return one(reshapeTo(c, c.input(0), shape));
}

Results convertUnsqueeze(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  auto in = c.inputType(0);
  auto axes = c.axesOperand(13, "Unsqueeze axes");
  if (failed(axes))
    return failure();
  if (!*axes)
    return c.error() << "Unsqueeze needs axes";
  int64_t outRank = in.getRank() + (*axes)->size();
  SmallVector<bool> inserted(outRank, false);
  for (int64_t a : **axes) {
    auto axis = normalizeAxis(c, a, outRank);
    if (failed(axis))
      return failure();
    if (inserted[*axis])
      return c.error() << "Unsqueeze axis " << a << " repeats";
    inserted[*axis] = true;
  }
  SmallVector<int64_t> shape;
  int64_t src = 0;
  for (int64_t d = 0; d < outRank; ++d)
    shape.push_back(inserted[d] ? 1 : in.getDimSize(src++));
  return one(reshapeTo(c, c.input(0), shape));
}

Results convertTranspose(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  int64_t rank = c.inputType(0).getRank();
  SmallVector<int64_t> perm;
  if (auto p = c.intsAttr("perm"))
    perm = *p;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  return one(c.build1<TransposeOp>(c.input(0), {c.i64s("perm", perm)}));
}

Results convertConcat(NodeContext &c) {
  if (c.numInputs() == 0)
    return c.error() << "Concat needs at least one input";
  if (failed(c.requireInputs(c.numInputs())))
    return failure();
  SmallVector<Value> inputs(c.inputs.begin(), c.inputs.end());
  // Concat's axis defaulted to 1 before opset 4.
  int64_t axis = c.intAttr("axis", c.opset < 4 ? 1 : 0);
  return one(c.build1<ConcatOp>(inputs, {c.i64("axis", axis)}));
}

Results convertSplit(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  auto in = c.inputType(0);
  auto axis = normalizeAxis(c, c.intAttr("axis", 0), in.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> sizes;
  if (c.opset >= 13 && c.input(1)) {
    auto s = c.constInts(1, "Split sizes");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (auto s = c.intsAttr("split"); s && c.opset < 13) {
    sizes = *s;
  } else {
    int64_t n = c.node.output_size();
    int64_t dim = in.getDimSize(*axis);
    if (n == 0 || dim % n != 0)
      return c.error() << "Split of dim " << dim << " into " << n
                       << " equal parts is uneven";
    sizes.assign(n, dim / n);
  }
  if (static_cast<int>(sizes.size()) != c.node.output_size())
    return c.error() << "Split has " << sizes.size() << " sizes for "
                     << c.node.output_size() << " outputs";
  return c.build<SplitOp>(c.input(0),
                          {c.i64("axis", *axis), c.i64s("sizes", sizes)});
}

Results convertSlice(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  auto in = c.inputType(0);
  int64_t rank = in.getRank();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (c.opset >= 10) {
    auto s = c.constInts(1, "Slice starts");
    auto e = c.constInts(2, "Slice ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (c.input(3)) {
      auto a = c.constInts(3, "Slice axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (c.input(4)) {
      auto st = c.constInts(4, "Slice steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  } else {
    starts = c.intsAttr("starts").value_or(SmallVector<int64_t>{});
    ends = c.intsAttr("ends").value_or(SmallVector<int64_t>{});
    axes = c.intsAttr("axes").value_or(SmallVector<int64_t>{});
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return c.error() << "Slice starts, ends, axes and steps differ in length";

  SmallVector<int64_t> outStart(rank, 0), outSize(in.getShape()),
      outStep(rank, 1);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    auto axis = normalizeAxis(c, axes[i], rank);
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return c.error() << "Slice axis " << axes[i] << " repeats";
    seen[*axis] = true;
    int64_t dim = in.getDimSize(*axis), step = steps[i];
    if (step == 0)
      return c.error() << "Slice step is zero";
    // A step longer than the axis picks at most one element; clamping it
    // keeps every later index computation (here, folders, generated code)
    // within int64.
    int64_t reach = std::max<int64_t>(dim, 1);
    step = std::clamp<int64_t>(step, -reach, reach);
    int64_t start = starts[i], end = ends[i];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    int64_t size;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = end > start ? 1 + (end - start - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      size = start > end ? 1 + (start - end - 1) / -step : 0;
    }
    outStart[*axis] = size ? start : 0;
    outSize[*axis] = size;
    outStep[*axis] = step;
  }
  return one(c.build1<SliceOp>(c.input(0), {c.i64s("starts", outStart),
                                            c.i64s("sizes", outSize),
                                            c.i64s("steps", outStep)}));
}

Results convertGather(NodeContext &c) {
  if (failed(c.requireInputs(2)))
    return failure();
  return one(c.build1<GatherOp>(ValueRange{c.input(0), c.input(1)},
                                {c.i64("axis", c.intAttr("axis", 0))}));
}

Results convertExpand(NodeContext &c) {
  auto shape = c.constInts(1, "Expand shape");
  if (failed(shape))
    return failure();
  return one(c.build1<ExpandOp>(c.input(0), {c.i64s("shape", *shape)}));
}

Results convertTrilu(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  int64_t k = 0;
  if (c.input(1)) {
    auto kv = c.constInts(1, "Trilu k");
    if (failed(kv))
      return failure();
    if (kv->size() != 1)
      return c.error() << "Trilu k must be a scalar";
    k = (*kv)[0];
  }
  return one(c.build1<TriluOp>(
      c.input(0), {c.boolean("upper", c.intAttr("upper", 1) != 0),
                   c.i64("k", k)}));
}

/// Constant index tuples whose first entry is the position along their
/// first dimension, which is data's first (torch's index assignment writes
/// the batch coordinate into every tuple): the tuples without it, or null.
/// With them the op takes batch_dims = 1, and a batch split divides it.
DenseIntElementsAttr batchLedTuples(Value indices, Value data) {
  DenseIntElementsAttr dense;
  if (!matchPattern(indices, m_Constant(&dense)))
    return {};
  auto type = cast<RankedTensorType>(indices.getType());
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() < 2 || shape.back() < 2 || shape[0] < 2 ||
      shape[0] != cast<RankedTensorType>(data.getType()).getDimSize(0))
    return {};
  int64_t k = shape.back(), perBatch = type.getNumElements() / shape[0];
  SmallVector<int64_t> rest;
  rest.reserve(type.getNumElements() / k * (k - 1));
  int64_t at = 0;
  for (const APInt &v : dense.getValues<APInt>()) {
    if (at % k == 0) {
      if (v.getSExtValue() != at / perBatch)
        return {};
    } else {
      rest.push_back(v.getSExtValue());
    }
    ++at;
  }
  SmallVector<int64_t> restShape(shape);
  restShape.back() = k - 1;
  return DenseIntElementsAttr::get(
      RankedTensorType::get(restShape, type.getElementType()),
      ArrayRef<int64_t>(rest));
}

Results convertScatterND(NodeContext &c) {
  if (failed(c.requireInputs(3)))
    return failure();
  std::string reduction = c.stringAttr("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    return c.error() << "ScatterND reduction '" << reduction
                     << "' is not supported (none, add or mul)";
  Value indices = c.input(1);
  int64_t batchDims = 0;
  if (auto rest = batchLedTuples(indices, c.input(0))) {
    indices = c.constant(rest);
    batchDims = 1;
  }
  return c.build<ScatterNDOp>(
      {c.input(0), indices, c.input(2)},
      {c.named("reduction", c.builder.getStringAttr(reduction)),
       c.i64("batch_dims", batchDims)});
}

} // namespace

void addTensorConverters(llvm::StringMap<Converter> &t) {
  t["Shape"] = convertShape;
  t["Size"] = convertSize;
  t["ConstantOfShape"] = convertConstantOfShape;
  t["Range"] = convertRange;
  t["Reshape"] = convertReshape;
  t["Flatten"] = convertFlatten;
  t["Squeeze"] = convertSqueeze;
  t["Unsqueeze"] = convertUnsqueeze;
  t["Transpose"] = convertTranspose;
  t["Concat"] = convertConcat;
  t["Split"] = convertSplit;
  t["Slice"] = convertSlice;
  t["Gather"] = convertGather;
  t["ScatterND"] = convertScatterND;
  t["Expand"] = convertExpand;
  t["Trilu"] = convertTrilu;
}

} // namespace pcc::import
