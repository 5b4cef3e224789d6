//===- MatrixConverters.cpp - ops composed as a constant-matrix product --===//
//
// Resize/Upsample and CumSum are linear along one axis with coefficients
// known at compile time: each becomes the axis moved last, a MatMul by a
// constant matrix, and the axis moved back. Exact for every coordinate
// mapping and mode, and ops every target already runs and every strategy
// already splits, so they need no kernels and no sharding rules of their
// own.
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

using namespace mlir;

namespace pcc::import {
namespace {

/// `x` with axis `d` (length n) replaced by its product with the constant
/// matrix `m` [n, out] (row-major): the axis moved last, multiplied, moved
/// back. A GEMM every target and strategy runs.
FailureOr<Value> multiplyAlongAxis(NodeContext &c, Value x, int64_t d,
                                   ArrayRef<double> m, int64_t out) {
  auto t = cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank(), in = t.getDimSize(d);
  auto mt = RankedTensorType::get({in, out}, t.getElementType());
  SmallVector<APFloat> values;
  const auto &sem = cast<FloatType>(t.getElementType()).getFloatSemantics();
  for (double v : m) {
    APFloat f(v);
    bool lost;
    f.convert(sem, APFloat::rmNearestTiesToEven, &lost);
    values.push_back(f);
  }
  Value matrix = c.constant(DenseElementsAttr::get(mt, values));
  SmallVector<int64_t> perm;
  for (int64_t a = 0; a < rank; ++a)
    if (a != d)
      perm.push_back(a);
  perm.push_back(d);
  SmallVector<int64_t> back(rank);
  for (int64_t a = 0; a < rank; ++a)
    back[perm[a]] = a;
  auto moved = d == rank - 1
                   ? FailureOr<Value>(x)
                   : c.build1<TransposeOp>(x, {c.i64s("perm", perm)});
  if (failed(moved))
    return failure();
  auto product = c.build1<MatMulOp>(ValueRange{*moved, matrix});
  if (failed(product) || d == rank - 1)
    return product;
  return c.build1<TransposeOp>(*product, {c.i64s("perm", back)});
}

/// Row o of Resize's interpolation matrix along one axis: weights on the
/// input positions output position o reads (ONNX Resize: the output
/// coordinate mapped back by `transform`, then the nearest input or the
/// two around it, indices clamped to the axis as edge padding does).
LogicalResult interpolationRow(NodeContext &c, StringRef mode,
                               StringRef transform, StringRef nearest,
                               int64_t in, int64_t out, double scale,
                               int64_t o, MutableArrayRef<double> row) {
  double x = o, src;
  if (transform == "half_pixel")
    src = (x + 0.5) / scale - 0.5;
  else if (transform == "pytorch_half_pixel")
    src = out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  else if (transform == "align_corners")
    src = out == 1 ? 0 : x * double(in - 1) / double(out - 1);
  else if (transform == "asymmetric")
    src = x / scale;
  else if (transform == "tf_half_pixel_for_nn")
    src = (x + 0.5) / scale;
  else
    return c.error() << "Resize coordinate_transformation_mode '" << transform
                     << "' is not supported";
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  if (mode == "nearest") {
    double f = std::floor(src), frac = src - f;
    int64_t i;
    if (nearest == "round_prefer_floor")
      i = frac <= 0.5 ? int64_t(f) : int64_t(f) + 1;
    else if (nearest == "round_prefer_ceil")
      i = frac < 0.5 ? int64_t(f) : int64_t(f) + 1;
    else if (nearest == "floor")
      i = int64_t(f);
    else if (nearest == "ceil")
      i = int64_t(std::ceil(src));
    else
      return c.error() << "Resize nearest_mode '" << nearest
                       << "' is not supported";
    row[clamp(i)] += 1;
    return success();
  }
  double f = std::floor(src), lam = src - f;
  row[clamp(int64_t(f))] += 1 - lam;
  row[clamp(int64_t(f) + 1)] += lam;
  return success();
}

/// Resize (nearest and linear, the modes torch exports) as one matrix
/// product per resized axis: the axis moved last, times the interpolation
/// matrix [in, out], moved back. Exact for every coordinate mapping, and a
/// GEMM every target and strategy runs.
Results convertResize(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  auto t = c.inputType(0);
  int64_t rank = t.getRank();
  if (!isa<FloatType>(t.getElementType()))
    return c.error() << "Resize on " << t.getElementType()
                     << " is not supported (floating-point only)";
  std::string mode = c.stringAttr("mode", "nearest");
  if (mode != "nearest" && mode != "linear")
    return c.error() << "Resize mode '" << mode << "' is not supported";
  std::string transform = c.stringAttr(
      "coordinate_transformation_mode", c.opset >= 11 ? "half_pixel" : "asymmetric");
  std::string nearest = c.stringAttr("nearest_mode", "round_prefer_floor");
  // Opset 10: (X, scales); 11+: (X, roi, scales, sizes).
  size_t scalesAt = c.opset >= 11 ? 2 : 1, sizesAt = 3;
  SmallVector<double> scales(rank, 1.0);
  SmallVector<int64_t> sizes(t.getShape());
  auto present = [&](size_t i) {
    return c.input(i) && c.inputType(i).getNumElements() > 0;
  };
  if (present(sizesAt)) {
    auto s = c.constInts(sizesAt, "Resize sizes");
    if (failed(s))
      return failure();
    if (int64_t(s->size()) != rank)
      return c.error() << "Resize sizes has " << s->size() << " entries";
    sizes = *s;
    for (int64_t d = 0; d < rank; ++d)
      scales[d] = t.getDimSize(d) ? double(sizes[d]) / t.getDimSize(d) : 1.0;
  } else if (present(scalesAt)) {
    auto values = c.constFloats(scalesAt, "Resize scales");
    if (failed(values))
      return failure();
    if (int64_t(values->size()) != rank)
      return c.error() << "Resize scales has " << values->size() << " entries";
    for (int64_t d = 0; d < rank; ++d) {
      if (!((*values)[d] > 0))
        return c.error() << "Resize scales must be positive";
      scales[d] = (*values)[d];
      sizes[d] = int64_t(std::floor(t.getDimSize(d) * scales[d]));
    }
  } else {
    return c.error() << "Resize needs constant scales or sizes";
  }
  Value x = c.input(0);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = t.getDimSize(d), out = sizes[d];
    if (in == out && scales[d] == 1.0)
      continue;
    if (in == 0 || out <= 0)
      return c.error() << "Resize of axis " << d << " from " << in << " to "
                       << out << " is not supported";
    // The interpolation matrix, transposed: [in, out].
    std::vector<double> m(in * out, 0.0);
    SmallVector<double> row(in);
    for (int64_t o = 0; o < out; ++o) {
      std::fill(row.begin(), row.end(), 0.0);
      if (failed(interpolationRow(c, mode, transform, nearest, in, out,
                                  scales[d], o, row)))
        return failure();
      for (int64_t i = 0; i < in; ++i)
        m[i * out + o] = row[i];
    }
    auto next = multiplyAlongAxis(c, x, d, m, out);
    if (failed(next))
      return failure();
    x = *next;
  }
  return SmallVector<Value>{x};
}

/// CumSum as a product with a triangular matrix of ones along its axis
/// (M[i, o] = 1 where input i adds to output o: i <= o, i < o when
/// exclusive, mirrored when reverse). Floating-point tensors only: a sum of
/// integers through f32 would be inexact past 2^24.
Results convertCumSum(NodeContext &c) {
  if (failed(c.requireInputs(2)))
    return failure();
  auto t = c.inputType(0);
  if (!isa<FloatType>(t.getElementType()))
    return c.error() << "CumSum on " << t.getElementType()
                     << " is not supported (floating-point only)";
  auto axis = c.constScalar(1, "CumSum axis");
  if (failed(axis))
    return failure();
  int64_t rank = t.getRank(), d = int64_t(*axis);
  if (d < -rank || d >= rank)
    return c.error() << "CumSum axis " << d << " is out of range for rank "
                     << rank;
  d = d < 0 ? d + rank : d;
  bool exclusive = c.intAttr("exclusive", 0), reverse = c.intAttr("reverse", 0);
  int64_t n = t.getDimSize(d);
  std::vector<double> m(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < n; ++o) {
      bool adds = reverse ? (exclusive ? i > o : i >= o)
                          : (exclusive ? i < o : i <= o);
      m[i * n + o] = adds ? 1.0 : 0.0;
    }
  auto y = multiplyAlongAxis(c, c.input(0), d, m, n);
  if (failed(y))
    return failure();
  return SmallVector<Value>{*y};
}

} // namespace

void addMatrixConverters(llvm::StringMap<Converter> &t) {
  t["Resize"] = convertResize;
  t["Upsample"] = convertResize;
  t["CumSum"] = convertCumSum;
}

} // namespace pcc::import
