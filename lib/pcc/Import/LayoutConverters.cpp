//===- LayoutConverters.cpp - ops composed of data movement at import -----===//
//
// Pad, Tile, DepthToSpace, SpaceToDepth, InstanceNormalization and
// ConvTranspose become slices, concatenations, broadcasts, reshapes,
// transposes, a layer norm or a convolution:
// ops every target already runs and every strategy already splits, so these
// need no kernels and no sharding rules of their own.
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include <limits>

using namespace mlir;

namespace pcc::import {
namespace {

/// `x` sliced to [start, start + size) with `step` along `axis`.
FailureOr<Value> sliceAxis(NodeContext &c, Value x, int64_t axis,
                           int64_t start, int64_t size, int64_t step = 1) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  SmallVector<int64_t> starts(shape.size(), 0), sizes(shape), steps(shape.size(), 1);
  starts[axis] = start;
  sizes[axis] = size;
  steps[axis] = step;
  return c.build1<SliceOp>(x, {c.i64s("starts", starts), c.i64s("sizes", sizes),
                               c.i64s("steps", steps)});
}

/// `block` (size 1 along `axis`, or a scalar) broadcast to `x`'s shape with
/// `count` along `axis`.
FailureOr<Value> broadcastAlong(NodeContext &c, Value block, Value x,
                                int64_t axis, int64_t count) {
  SmallVector<int64_t> shape(cast<RankedTensorType>(x.getType()).getShape());
  shape[axis] = count;
  return c.build1<ExpandOp>(block, {c.i64s("shape", shape)});
}

FailureOr<Value> concatAxis(NodeContext &c, ValueRange parts, int64_t axis) {
  if (parts.size() == 1)
    return parts.front();
  return c.build1<ConcatOp>(parts, {c.i64("axis", axis)});
}

/// One axis of Pad: crop negative pads, then add `before` and `after`
/// elements (the constant, the edge element, or the reflection).
FailureOr<Value> padAxis(NodeContext &c, Value x, int64_t axis,
                         int64_t before, int64_t after, StringRef mode,
                         double value) {
  int64_t dim = cast<RankedTensorType>(x.getType()).getDimSize(axis);
  if (before < 0 || after < 0) {
    int64_t from = std::max<int64_t>(-before, 0);
    int64_t keep = dim - from - std::max<int64_t>(-after, 0);
    if (keep < 0)
      return c.error() << "Pad crops more than axis " << axis << " holds";
    auto cropped = sliceAxis(c, x, axis, from, keep);
    if (failed(cropped))
      return failure();
    x = *cropped;
    dim = keep;
    before = std::max<int64_t>(before, 0);
    after = std::max<int64_t>(after, 0);
  }
  if (before == 0 && after == 0)
    return x;
  if (mode != "constant" && dim == 0)
    return c.error() << "Pad mode '" << mode << "' on an empty axis";
  if (mode == "reflect" && (before >= dim || after >= dim))
    return c.error() << "Pad mode 'reflect' needs pads smaller than the axis ("
                     << dim << ")";
  Type elem = cast<RankedTensorType>(x.getType()).getElementType();
  auto side = [&](bool left, int64_t count) -> FailureOr<Value> {
    if (mode == "constant")
      return broadcastAlong(c, c.scalar(elem, value), x, axis, count);
    if (mode == "edge") {
      auto edge = sliceAxis(c, x, axis, left ? 0 : dim - 1, 1);
      if (failed(edge))
        return failure();
      return broadcastAlong(c, *edge, x, axis, count);
    }
    // reflect: x[count] .. x[1] on the left, x[dim-2] .. x[dim-1-count] on
    // the right (the edge element itself is not repeated).
    return sliceAxis(c, x, axis, left ? count : dim - 2, count, -1);
  };
  SmallVector<Value> parts;
  if (before) {
    auto l = side(true, before);
    if (failed(l))
      return failure();
    parts.push_back(*l);
  }
  parts.push_back(x);
  if (after) {
    auto r = side(false, after);
    if (failed(r))
      return failure();
    parts.push_back(*r);
  }
  return concatAxis(c, parts, axis);
}

Results convertPad(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  int64_t rank = c.inputType(0).getRank();
  SmallVector<int64_t> pads;
  double value = 0;
  if (c.opset >= 11) {
    auto p = c.constInts(1, "Pad pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (c.input(2)) {
      auto v = c.constScalar(2, "Pad constant_value");
      if (failed(v))
        return failure();
      value = *v;
    }
    if (c.input(3))
      return c.error() << "Pad with an axes input is not supported";
  } else {
    pads = c.intsAttr(c.opset < 2 ? "paddings" : "pads")
               .value_or(SmallVector<int64_t>{});
    value = c.floatAttr("value", 0.0f);
  }
  if (int64_t(pads.size()) != 2 * rank)
    return c.error() << "Pad pads has " << pads.size() << " entries, expected "
                     << 2 * rank;
  std::string mode = c.stringAttr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return c.error() << "Pad mode '" << mode << "' is not supported";
  Value x = c.input(0);
  for (int64_t d = 0; d < rank; ++d) {
    auto padded = padAxis(c, x, d, pads[d], pads[d + rank], mode, value);
    if (failed(padded))
      return failure();
    x = *padded;
  }
  return SmallVector<Value>{x};
}

Results convertTile(NodeContext &c) {
  auto repeats = c.constInts(1, "Tile repeats");
  if (failed(repeats))
    return failure();
  int64_t rank = c.inputType(0).getRank();
  if (int64_t(repeats->size()) != rank)
    return c.error() << "Tile repeats has " << repeats->size()
                     << " entries for a rank-" << rank << " input";
  Value x = c.input(0);
  for (int64_t d = 0; d < rank; ++d) {
    if ((*repeats)[d] < 0)
      return c.error() << "Tile repeats must be non-negative";
    if ((*repeats)[d] == 1)
      continue;
    if ((*repeats)[d] == 0) {
      auto empty = sliceAxis(c, x, d, 0, 0);
      if (failed(empty))
        return failure();
      x = *empty;
      continue;
    }
    // r copies of the axis as a new axis before it, broadcast and merged:
    // three ops whatever r is (a Concat of r operands grows with r).
    int64_t r = (*repeats)[d];
    SmallVector<int64_t> shape(cast<RankedTensorType>(x.getType()).getShape());
    int64_t n = shape[d];
    if (n > 0 && r > std::numeric_limits<int64_t>::max() / n)
      return c.error() << "Tile repeats " << r << " make axis " << d
                       << " overflow int64";
    SmallVector<int64_t> split(shape), copies(shape), merged(shape);
    split.insert(split.begin() + d, 1);
    copies.insert(copies.begin() + d, r);
    merged[d] = r * n;
    auto unit = c.build1<ReshapeOp>(x, {c.i64s("shape", split)});
    if (failed(unit))
      return failure();
    auto wide = c.build1<ExpandOp>(*unit, {c.i64s("shape", copies)});
    if (failed(wide))
      return failure();
    auto tiled = c.build1<ReshapeOp>(*wide, {c.i64s("shape", merged)});
    if (failed(tiled))
      return failure();
    x = *tiled;
  }
  return SmallVector<Value>{x};
}

/// reshape -> transpose -> reshape, the form of DepthToSpace/SpaceToDepth.
Results regroup(NodeContext &c, ArrayRef<int64_t> split, ArrayRef<int64_t> perm,
                ArrayRef<int64_t> result) {
  auto r = c.build1<ReshapeOp>(c.input(0), {c.i64s("shape", split)});
  if (failed(r))
    return failure();
  auto t = c.build1<TransposeOp>(*r, {c.i64s("perm", perm)});
  if (failed(t))
    return failure();
  return one(c.build1<ReshapeOp>(*t, {c.i64s("shape", result)}));
}

Results convertDepthToSpace(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  auto t = c.inputType(0);
  int64_t b = c.intAttr("blocksize", 0);
  if (t.getRank() != 4 || b < 1 || t.getDimSize(1) % (b * b))
    return c.error() << "DepthToSpace needs a rank-4 input whose channels "
                        "divide by blocksize^2";
  int64_t n = t.getDimSize(0), ch = t.getDimSize(1) / (b * b);
  int64_t h = t.getDimSize(2), w = t.getDimSize(3);
  SmallVector<int64_t> out = {n, ch, h * b, w * b};
  if (c.stringAttr("mode", "DCR") == "CRD")
    return regroup(c, {n, ch, b, b, h, w}, {0, 1, 4, 2, 5, 3}, out);
  return regroup(c, {n, b, b, ch, h, w}, {0, 3, 4, 1, 5, 2}, out);
}

Results convertSpaceToDepth(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  auto t = c.inputType(0);
  int64_t b = c.intAttr("blocksize", 0);
  if (t.getRank() != 4 || b < 1 || t.getDimSize(2) % b || t.getDimSize(3) % b)
    return c.error() << "SpaceToDepth needs a rank-4 input whose height and "
                        "width divide by blocksize";
  int64_t n = t.getDimSize(0), ch = t.getDimSize(1);
  int64_t h = t.getDimSize(2) / b, w = t.getDimSize(3) / b;
  return regroup(c, {n, ch, h, b, w, b}, {0, 3, 5, 1, 2, 4},
                 {n, ch * b * b, h, w});
}

/// Each (sample, channel) normalized over its spatial positions: a layer
/// norm over the last axis of [N, C, S], then the per-channel scale and
/// bias. (torch's GroupNorm exports as Reshape -> this -> Reshape.)
Results convertInstanceNorm(NodeContext &c) {
  if (failed(c.requireInputs(3)))
    return failure();
  auto t = c.inputType(0);
  if (t.getRank() < 3)
    return c.error() << "InstanceNormalization needs a rank >= 3 input";
  int64_t n = t.getDimSize(0), ch = t.getDimSize(1);
  int64_t s = t.getNumElements() / std::max<int64_t>(n * ch, 1);
  auto flat = c.build1<ReshapeOp>(c.input(0), {c.i64s("shape", {n, ch, s})});
  if (failed(flat))
    return failure();
  auto ones = c.constant(DenseElementsAttr::get(
      RankedTensorType::get({1}, t.getElementType()),
      FloatAttr::get(t.getElementType(), 1.0)));
  auto norm = c.build1<LayerNormOp>(
      ValueRange{*flat, ones},
      {c.i64("axis", 2), c.f32("epsilon", c.floatAttr("epsilon", 1e-5f))});
  if (failed(norm))
    return failure();
  auto perChannel = [&](Value v) {
    return c.build1<ReshapeOp>(v, {c.i64s("shape", {ch, 1})});
  };
  auto scale = perChannel(c.input(1)), bias = perChannel(c.input(2));
  if (failed(scale) || failed(bias))
    return failure();
  auto scaled = c.build1<MulOp>(ValueRange{*norm, *scale});
  if (failed(scaled))
    return failure();
  auto shifted = c.build1<AddOp>(ValueRange{*scaled, *bias});
  if (failed(shifted))
    return failure();
  return one(c.build1<ReshapeOp>(*shifted, {c.i64s("shape", t.getShape())}));
}

/// `x` with `s - 1` zeros after each element along `axis`, the last
/// element's dropped: length s * (n - 1) + 1.
FailureOr<Value> spreadAxis(NodeContext &c, Value x, int64_t axis, int64_t s) {
  auto t = cast<RankedTensorType>(x.getType());
  int64_t n = t.getDimSize(axis);
  if (s == 1 || n == 0)
    return x;
  SmallVector<int64_t> split(t.getShape());
  split.insert(split.begin() + axis + 1, 1);
  auto col = c.build1<ReshapeOp>(x, {c.i64s("shape", split)});
  if (failed(col))
    return failure();
  auto zeros = broadcastAlong(c, c.scalar(t.getElementType(), 0.0), *col,
                              axis + 1, s - 1);
  if (failed(zeros))
    return failure();
  auto both = concatAxis(c, ValueRange{*col, *zeros}, axis + 1);
  if (failed(both))
    return failure();
  SmallVector<int64_t> merged(t.getShape());
  merged[axis] = n * s;
  auto flat = c.build1<ReshapeOp>(*both, {c.i64s("shape", merged)});
  if (failed(flat))
    return failure();
  return sliceAxis(c, *flat, axis, 0, s * (n - 1) + 1);
}

/// ConvTranspose as the convolution it is the gradient of: the input spread
/// by the stride (zeros between elements), padded by the dilated kernel's
/// span less the pads (negative: cropped), convolved at stride 1 with the
/// filter's channels swapped per group and its window flipped.
Results convertConvTranspose(NodeContext &c) {
  if (failed(c.requireInputs(2)))
    return failure();
  auto xt = c.inputType(0), ft = c.inputType(1);
  int64_t rank = xt.getRank(), spatial = rank - 2;
  if (rank < 3 || ft.getRank() != rank)
    return c.error() << "ConvTranspose needs input and filter of equal rank "
                        ">= 3";
  int64_t group = c.intAttr("group", 1), cin = xt.getDimSize(1);
  if (group < 1 || cin % group || ft.getDimSize(0) != cin)
    return c.error() << "ConvTranspose filter does not match the input's "
                        "channels and groups";
  SmallVector<int64_t> kernel(ft.getShape().drop_front(2));
  auto ones = SmallVector<int64_t>(spatial, 1);
  auto strides = c.intsAttr("strides").value_or(ones);
  auto dilations = c.intsAttr("dilations").value_or(ones);
  auto pads = c.intsAttr("pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
  auto extra = c.intsAttr("output_padding")
                   .value_or(SmallVector<int64_t>(spatial, 0));
  if (int64_t(strides.size()) != spatial ||
      int64_t(dilations.size()) != spatial ||
      int64_t(pads.size()) != 2 * spatial || int64_t(extra.size()) != spatial)
    return c.error() << "ConvTranspose attributes do not match " << spatial
                     << " spatial axes";
  std::string autoPad = c.stringAttr("auto_pad", "NOTSET");
  auto outputShape = c.intsAttr("output_shape");
  if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // Pads that give the asked output size (SAME: input x stride).
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t in = xt.getDimSize(i + 2);
      int64_t want = outputShape && int64_t(outputShape->size()) >= spatial
                         ? (*outputShape)[outputShape->size() - spatial + i]
                         : in * strides[i];
      int64_t total = strides[i] * (in - 1) + extra[i] +
                      (kernel[i] - 1) * dilations[i] + 1 - want;
      bool upper = autoPad != "SAME_LOWER";
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[i + spatial] = total - pads[i];
    }
  } else if (autoPad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  } else if (autoPad != "NOTSET") {
    return c.error() << "unknown auto_pad '" << autoPad << "'";
  }
  Value x = c.input(0);
  for (int64_t i = 0; i < spatial; ++i) {
    auto spread = spreadAxis(c, x, i + 2, strides[i]);
    if (failed(spread))
      return failure();
    int64_t span = (kernel[i] - 1) * dilations[i];
    auto padded = padAxis(c, *spread, i + 2, span - pads[i],
                          span - pads[i + spatial] + extra[i], "constant", 0);
    if (failed(padded))
      return failure();
    x = *padded;
  }
  // Filter [C, M/g, k...] -> [M, C/g, k...], window flipped.
  int64_t mg = ft.getDimSize(1);
  SmallVector<int64_t> grouped = {group, cin / group, mg};
  grouped.append(kernel);
  SmallVector<int64_t> perm = {0, 2, 1};
  SmallVector<int64_t> swapped = {group * mg, cin / group};
  for (int64_t i = 0; i < spatial; ++i) {
    perm.push_back(i + 3);
    swapped.push_back(kernel[i]);
  }
  auto w = c.build1<ReshapeOp>(c.input(1), {c.i64s("shape", grouped)});
  if (failed(w))
    return failure();
  w = c.build1<TransposeOp>(*w, {c.i64s("perm", perm)});
  if (failed(w))
    return failure();
  w = c.build1<ReshapeOp>(*w, {c.i64s("shape", swapped)});
  for (int64_t i = 0; i < spatial && succeeded(w); ++i)
    w = sliceAxis(c, *w, i + 2, kernel[i] - 1, kernel[i], -1);
  if (failed(w))
    return failure();
  SmallVector<Value> operands{x, *w};
  if (c.input(2))
    operands.push_back(c.input(2));
  return one(c.build1<ConvOp>(
      operands, {c.i64s("strides", ones),
                 c.i64s("pads", SmallVector<int64_t>(2 * spatial, 0)),
                 c.i64s("dilations", dilations), c.i64("group", group)}));
}

} // namespace

void addLayoutConverters(llvm::StringMap<Converter> &t) {
  t["Pad"] = convertPad;
  t["Tile"] = convertTile;
  t["DepthToSpace"] = convertDepthToSpace;
  t["SpaceToDepth"] = convertSpaceToDepth;
  t["InstanceNormalization"] = convertInstanceNorm;
  t["ConvTranspose"] = convertConvTranspose;
}

} // namespace pcc::import
