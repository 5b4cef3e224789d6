//===- VolumeConverters.cpp - 3-D convolutions and pools as 2-D ones ------===//
//
// pcc's kernels (CPU and CUDA) convolve and pool over two spatial axes. A
// 3-D Conv or pool over (D, H, W) is composed at import of 2-D ones over
// (H, W), one per depth tap of the window: tap t reads the depth-strided
// slice of the depth-padded input that its window position sees, with the
// output depths folded into the batch, and the taps are summed (conv),
// maximised (MaxPool) or averaged (AveragePool, divided by the taps inside
// the input unless padding counts). The work equals a direct 3-D kernel's;
// the slices cost one copy of the input per tap.
//
//===----------------------------------------------------------------------===//

#include "VolumeConverters.h"
#include "ImportContext.h"

#include <cmath>

using namespace mlir;

namespace pcc::import {

namespace {

/// `v` padded along axis 2 with `front` and `back` elements of `fill`.
FailureOr<Value> padDepth(NodeContext &c, Value v, int64_t front, int64_t back,
                          double fill) {
  if (front == 0 && back == 0)
    return v;
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<Value> parts;
  auto block = [&](int64_t n) {
    SmallVector<int64_t> shape(type.getShape());
    shape[2] = n;
    return c.build1<ExpandOp>(c.scalar(type.getElementType(), fill),
                              {c.i64s("shape", shape)});
  };
  if (front > 0) {
    auto f = block(front);
    if (failed(f))
      return failure();
    parts.push_back(*f);
  }
  parts.push_back(v);
  if (back > 0) {
    auto b = block(back);
    if (failed(b))
      return failure();
    parts.push_back(*b);
  }
  return c.build1<ConcatOp>(parts, {c.i64("axis", 2)});
}

/// The depths window tap `tap` reads for each of `outDepth` outputs, as
/// [N * outDepth, C, H, W] (output depths folded into the batch).
FailureOr<Value> tapPlanes(NodeContext &c, Value padded, int64_t tap,
                           int64_t outDepth, const Window &w) {
  auto shape = cast<RankedTensorType>(padded.getType()).getShape();
  SmallVector<int64_t> starts(5, 0), sizes(shape), steps(5, 1);
  starts[2] = tap * w.dilations[0];
  sizes[2] = outDepth;
  steps[2] = w.strides[0];
  auto slice = c.build1<SliceOp>(padded, {c.i64s("starts", starts),
                                          c.i64s("sizes", sizes),
                                          c.i64s("steps", steps)});
  if (failed(slice))
    return failure();
  auto depthFirst = c.build1<TransposeOp>(
      *slice, {c.i64s("perm", ArrayRef<int64_t>{0, 2, 1, 3, 4})});
  if (failed(depthFirst))
    return failure();
  return c.build1<ReshapeOp>(
      *depthFirst,
      {c.i64s("shape", ArrayRef<int64_t>{shape[0] * outDepth, shape[1],
                                         shape[3], shape[4]})});
}

/// [N * D, C, H, W] back to [N, C, D, H, W].
FailureOr<Value> unfoldDepth(NodeContext &c, Value v, int64_t n,
                             int64_t depth) {
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  auto split = c.build1<ReshapeOp>(
      v, {c.i64s("shape",
                 ArrayRef<int64_t>{n, depth, shape[1], shape[2], shape[3]})});
  if (failed(split))
    return failure();
  return c.build1<TransposeOp>(
      *split, {c.i64s("perm", ArrayRef<int64_t>{0, 2, 1, 3, 4})});
}

/// The 2-D window over (H, W) of a 3-D one.
Window planeWindow(const Window &w) {
  Window p;
  p.kernel = {w.kernel[1], w.kernel[2]};
  p.strides = {w.strides[1], w.strides[2]};
  p.dilations = {w.dilations[1], w.dilations[2]};
  p.pads = {w.pads[1], w.pads[2], w.pads[4], w.pads[5]};
  return p;
}

int64_t outputDepth(int64_t depth, const Window &w) {
  int64_t span = (w.kernel[0] - 1) * w.dilations[0] + 1;
  return (depth + w.pads[0] + w.pads[3] - span) / w.strides[0] + 1;
}

/// What a 3-D op's depth taps read: its output depth, its input padded
/// along the depth with `fill`, and the window over (H, W).
struct Taps {
  int64_t depth;
  Value padded;
  Window plane;
};

FailureOr<Taps> prepareTaps(NodeContext &c, const Window &w, double fill) {
  int64_t od = outputDepth(c.inputType(0).getDimSize(2), w);
  if (od < 1)
    return c.error() << "'" << c.node.op_type()
                     << "' window is deeper than its padded input";
  auto padded = padDepth(c, c.input(0), w.pads[0], w.pads[3], fill);
  if (failed(padded))
    return failure();
  return Taps{od, *padded, planeWindow(w)};
}

} // namespace

Results convertConv3d(NodeContext &c, const Window &w, int64_t group) {
  Value f = c.input(1), bias = c.input(2);
  ArrayRef<int64_t> xs = c.inputType(0).getShape(),
                    fs = c.inputType(1).getShape();
  auto taps = prepareTaps(c, w, 0.0);
  if (failed(taps))
    return failure();
  int64_t od = taps->depth;
  const Window &plane = taps->plane;
  Value sum;
  for (int64_t t = 0; t < w.kernel[0]; ++t) {
    auto planes = tapPlanes(c, taps->padded, t, od, w);
    // The filter's depth tap t: [O, C/group, KH, KW].
    SmallVector<int64_t> starts(5, 0), sizes(fs), steps(5, 1);
    starts[2] = t;
    sizes[2] = 1;
    auto tap =
        c.build1<SliceOp>(f, {c.i64s("starts", starts), c.i64s("sizes", sizes),
                              c.i64s("steps", steps)});
    if (failed(planes) || failed(tap))
      return failure();
    auto filter = c.build1<ReshapeOp>(
        *tap, {c.i64s("shape", ArrayRef<int64_t>{fs[0], fs[1], fs[3], fs[4]})});
    if (failed(filter))
      return failure();
    auto y = c.build1<ConvOp>(
        ValueRange{*planes, *filter},
        {c.i64s("strides", plane.strides), c.i64s("pads", plane.pads),
         c.i64s("dilations", plane.dilations), c.i64("group", group)});
    if (failed(y))
      return failure();
    if (!sum) {
      sum = *y;
      continue;
    }
    auto added = c.build1<AddOp>(ValueRange{sum, *y});
    if (failed(added))
      return failure();
    sum = *added;
  }
  auto y = unfoldDepth(c, sum, xs[0], od);
  if (failed(y) || !bias)
    return one(y);
  auto b = c.build1<ReshapeOp>(
      bias, {c.i64s("shape", ArrayRef<int64_t>{fs[0], 1, 1, 1})});
  if (failed(b))
    return failure();
  return one(c.build1<AddOp>(ValueRange{*y, *b}));
}

Results convertPool3d(NodeContext &c, const Window &w, bool isMax,
                      bool countIncludePad) {
  auto type = c.inputType(0);
  ArrayRef<int64_t> xs = type.getShape();
  auto prepared = prepareTaps(c, w, isMax ? -INFINITY : 0.0);
  if (failed(prepared))
    return failure();
  int64_t od = prepared->depth;
  const Window &plane = prepared->plane;
  Value acc;
  for (int64_t t = 0; t < w.kernel[0]; ++t) {
    auto planes = tapPlanes(c, prepared->padded, t, od, w);
    if (failed(planes))
      return failure();
    // Every attribute given: type inference reads them from the dictionary.
    SmallVector<NamedAttribute> attrs = {
        c.i64s("kernel_shape", plane.kernel),
        c.i64s("strides", plane.strides),
        c.i64s("pads", plane.pads),
        c.i64s("dilations", plane.dilations),
        c.boolean("ceil_mode", false),
        c.boolean("count_include_pad", countIncludePad)};
    FailureOr<Value> pooled = isMax ? c.build1<MaxPoolOp>(*planes, attrs)
                                    : c.build1<AveragePoolOp>(*planes, attrs);
    if (failed(pooled))
      return failure();
    if (!acc) {
      acc = *pooled;
      continue;
    }
    auto next = isMax ? c.build1<MaxOp>(ValueRange{acc, *pooled})
                      : c.build1<AddOp>(ValueRange{acc, *pooled});
    if (failed(next))
      return failure();
    acc = *next;
  }
  auto y = unfoldDepth(c, acc, xs[0], od);
  if (failed(y) || isMax)
    return one(y);
  // The plane averages divide by the plane's count; the depth taps add
  // up: divide by the taps inside the input (all of them when padding
  // counts). A box window's count is the product of its axes' counts.
  SmallVector<Attribute> taps;
  for (int64_t d = 0; d < od; ++d) {
    int64_t n = 0;
    for (int64_t t = 0; t < w.kernel[0]; ++t) {
      int64_t at = d * w.strides[0] + t * w.dilations[0] - w.pads[0];
      n += countIncludePad || (at >= 0 && at < xs[2]);
    }
    taps.push_back(FloatAttr::get(type.getElementType(), double(n)));
  }
  auto countType =
      RankedTensorType::get({1, 1, od, 1, 1}, type.getElementType());
  Value counts = c.constant(cast<ElementsAttr>(
      DenseElementsAttr::get(countType, ArrayRef<Attribute>(taps))));
  return one(c.build1<DivOp>(ValueRange{*y, counts}));
}

} // namespace pcc::import
