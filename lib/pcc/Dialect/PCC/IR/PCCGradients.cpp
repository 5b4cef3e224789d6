//===- PCCGradients.cpp - the gradient rule of each op --------------------===//
//
// GradientOpInterface: each rule maps the gradient of a scalar loss with
// respect to an op's results to the gradients with respect to its operands,
// as pcc ops (GradientBuilder.h), on the op's own global shapes. Operands
// that were broadcast get their gradient summed back (sumTo). The rules
// recompute what they need from the op's operands and results instead of
// keeping intermediates: attention's backward rebuilds the scores, layer
// norm its statistics. Every rule is checked against finite differences
// (test/e2e/gradients.test) and, in whole training steps, against PyTorch
// (test/e2e/train-*.test).
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/GradientBuilder.h"
#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include <cmath>

using namespace mlir;

namespace pcc {
namespace {

using Grads = SmallVectorImpl<Value>;

/// Ends a rule: success unless a step failed to build.
LogicalResult done(GradientBuilder &g) { return failure(g.failed()); }

bool isFloatTensor(Value v) {
  return isa<FloatType>(typeOf(v).getElementType());
}

Value whereZero(GradientBuilder &g, Value cond, Value keep, bool keepWhere) {
  Value zero = g.scalarLike(keep, 0);
  return keepWhere ? g.op<WhereOp>({cond, keep, zero})
                   : g.op<WhereOp>({cond, zero, keep});
}

/// Rules of unary ops whose derivative is a formula of x and y.
template <typename F>
LogicalResult unary(GradientBuilder &g, Operation *op, ArrayRef<Value> dy,
                    Grads &dx, F derivativeTimes) {
  Value x = op->getOperand(0), y = op->getResult(0);
  dx.push_back(derivativeTimes(x, y, dy[0]));
  return done(g);
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  dx.push_back(g.neg(dy[0]));
  return done(g);
}

LogicalResult AbsOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  return unary(g, *this, dy, dx, [&](Value x, Value, Value d) {
    Value zero = g.scalarLike(x, 0);
    Value negD = g.neg(d);
    Value inner = g.op<WhereOp>({g.op<LessOp>({x, zero}), negD, zero});
    return g.op<WhereOp>({g.op<GreaterOp>({x, zero}), d, inner});
  });
}

LogicalResult ExpOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  return unary(g, *this, dy, dx,
               [&](Value, Value y, Value d) { return g.mul(d, y); });
}

LogicalResult LogOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  return unary(g, *this, dy, dx,
               [&](Value x, Value, Value d) { return g.div(d, x); });
}

LogicalResult SqrtOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                     Grads &dx) {
  return unary(g, *this, dy, dx, [&](Value, Value y, Value d) {
    return g.div(g.scale(d, 0.5), y);
  });
}

LogicalResult ReciprocalOp::buildGradients(GradientBuilder &g,
                                           ArrayRef<Value> dy, Grads &dx) {
  return unary(g, *this, dy, dx, [&](Value, Value y, Value d) {
    return g.neg(g.mul(d, g.mul(y, y)));
  });
}

LogicalResult FloorOp::buildGradients(GradientBuilder &g, ArrayRef<Value>,
                                      Grads &dx) {
  dx.push_back(Value()); // zero almost everywhere
  return done(g);
}

LogicalResult CeilOp::buildGradients(GradientBuilder &g, ArrayRef<Value>,
                                     Grads &dx) {
  dx.push_back(Value());
  return done(g);
}

LogicalResult TanhOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                     Grads &dx) {
  return unary(g, *this, dy, dx, [&](Value, Value y, Value d) {
    return g.mul(d, g.sub(g.scalarLike(y, 1), g.mul(y, y)));
  });
}

LogicalResult ErfOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  return unary(g, *this, dy, dx, [&](Value x, Value, Value d) {
    Value e = g.op<ExpOp>({g.neg(g.mul(x, x))});
    return g.mul(d, g.scale(e, 2.0 / std::sqrt(M_PI)));
  });
}

LogicalResult SigmoidOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                        Grads &dx) {
  return unary(g, *this, dy, dx, [&](Value, Value y, Value d) {
    return g.mul(d, g.mul(y, g.sub(g.scalarLike(y, 1), y)));
  });
}

LogicalResult ReluOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                     Grads &dx) {
  return unary(g, *this, dy, dx, [&](Value x, Value, Value d) {
    return whereZero(g, g.op<GreaterOp>({x, g.scalarLike(x, 0)}), d, true);
  });
}

LogicalResult SinOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  return unary(g, *this, dy, dx, [&](Value x, Value, Value d) {
    return g.mul(d, g.op<CosOp>({x}));
  });
}

LogicalResult CosOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  return unary(g, *this, dy, dx, [&](Value x, Value, Value d) {
    return g.neg(g.mul(d, g.op<SinOp>({x})));
  });
}

LogicalResult NotOp::buildGradients(GradientBuilder &g, ArrayRef<Value>,
                                    Grads &dx) {
  dx.push_back(Value());
  return done(g);
}

LogicalResult GeluOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                     Grads &dx) {
  bool tanhForm = getApproximate() == "tanh";
  return unary(g, *this, dy, dx, [&](Value x, Value, Value d) -> Value {
    if (!tanhForm) {
      // Phi(x) + x phi(x).
      Value cdf = g.scale(
          g.add(g.scalarLike(x, 1), g.op<ErfOp>({g.scale(x, M_SQRT1_2)})),
          0.5);
      Value pdf = g.scale(g.op<ExpOp>({g.scale(g.mul(x, x), -0.5)}),
                          1.0 / std::sqrt(2 * M_PI));
      return g.mul(d, g.add(cdf, g.mul(x, pdf)));
    }
    // t = tanh(c (x + a x^3)): 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2).
    const double c = std::sqrt(2.0 / M_PI), a = 0.044715;
    Value x2 = g.mul(x, x);
    Value inner = g.scale(g.add(x, g.scale(g.mul(x2, x), a)), c);
    Value t = g.op<TanhOp>({inner});
    Value one = g.scalarLike(x, 1);
    Value left = g.scale(g.add(one, t), 0.5);
    Value slope = g.scale(g.add(one, g.scale(x2, 3 * a)), c);
    Value right =
        g.mul(g.scale(x, 0.5), g.mul(g.sub(one, g.mul(t, t)), slope));
    return g.mul(d, g.add(left, right));
  });
}

LogicalResult LeakyReluOp::buildGradients(GradientBuilder &g,
                                          ArrayRef<Value> dy, Grads &dx) {
  double alpha = getAlpha().convertToFloat();
  return unary(g, *this, dy, dx, [&](Value x, Value, Value d) {
    return g.op<WhereOp>(
        {g.op<GreaterOp>({x, g.scalarLike(x, 0)}), d, g.scale(d, alpha)});
  });
}

LogicalResult ClipOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                     Grads &dx) {
  double lo = getMin().convertToFloat(), hi = getMax().convertToFloat();
  return unary(g, *this, dy, dx, [&](Value x, Value, Value d) {
    Value inside = g.op<AndOp>({g.op<GreaterEqualOp>({x, g.scalarLike(x, lo)}),
                                g.op<LessEqualOp>({x, g.scalarLike(x, hi)})});
    return whereZero(g, inside, d, true);
  });
}

LogicalResult CastOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                     Grads &dx) {
  Value x = getInput();
  if (!isFloatTensor(x) || !isFloatTensor(getResult())) {
    dx.push_back(Value());
    return done(g);
  }
  dx.push_back(g.op<CastOp>(
      {dy[0]}, {g.named("to", TypeAttr::get(typeOf(x).getElementType()))}));
  return done(g);
}

LogicalResult AddOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  dx.push_back(g.sumTo(dy[0], getLhs()));
  dx.push_back(g.sumTo(dy[0], getRhs()));
  return done(g);
}

LogicalResult SubOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  dx.push_back(g.sumTo(dy[0], getLhs()));
  dx.push_back(g.sumTo(g.neg(dy[0]), getRhs()));
  return done(g);
}

LogicalResult MulOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  dx.push_back(g.sumTo(g.mul(dy[0], getRhs()), getLhs()));
  dx.push_back(g.sumTo(g.mul(dy[0], getLhs()), getRhs()));
  return done(g);
}

LogicalResult DivOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  if (!isFloatTensor(getResult())) {
    dx.append({Value(), Value()});
    return done(g);
  }
  Value da = g.div(dy[0], getRhs());
  dx.push_back(g.sumTo(da, getLhs()));
  dx.push_back(g.sumTo(g.neg(g.mul(da, getResult())), getRhs()));
  return done(g);
}

LogicalResult PowOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  Value a = getLhs(), b = getRhs();
  Value bMinus1 = g.sub(b, g.scalarLike(b, 1));
  Value da = g.mul(dy[0], g.mul(b, g.op<PowOp>({a, bMinus1})));
  dx.push_back(g.sumTo(da, a));
  // Unused (and removed) when the exponent is a constant.
  Value db = g.mul(dy[0], g.mul(getResult(), g.op<LogOp>({a})));
  dx.push_back(g.sumTo(db, b));
  return done(g);
}

namespace {

/// max/min: the gradient goes to the operand selected (the left on ties).
LogicalResult selected(GradientBuilder &g, Operation *op, ArrayRef<Value> dy,
                       Grads &dx, bool isMax) {
  Value a = op->getOperand(0), b = op->getOperand(1);
  Value pickA = isMax ? g.op<GreaterEqualOp>({a, b})
                      : g.op<LessEqualOp>({a, b});
  dx.push_back(g.sumTo(whereZero(g, pickA, dy[0], true), a));
  dx.push_back(g.sumTo(whereZero(g, pickA, dy[0], false), b));
  return done(g);
}

/// Comparisons and logic: no gradient.
LogicalResult none(GradientBuilder &g, Operation *op, Grads &dx) {
  dx.append(op->getNumOperands(), Value());
  return done(g);
}

} // namespace

LogicalResult MaxOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  return selected(g, *this, dy, dx, true);
}
LogicalResult MinOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                    Grads &dx) {
  return selected(g, *this, dy, dx, false);
}
LogicalResult EqualOp::buildGradients(GradientBuilder &g, ArrayRef<Value>,
                                      Grads &dx) {
  return none(g, *this, dx);
}
LogicalResult LessOp::buildGradients(GradientBuilder &g, ArrayRef<Value>,
                                     Grads &dx) {
  return none(g, *this, dx);
}
LogicalResult LessEqualOp::buildGradients(GradientBuilder &g, ArrayRef<Value>,
                                          Grads &dx) {
  return none(g, *this, dx);
}
LogicalResult GreaterOp::buildGradients(GradientBuilder &g, ArrayRef<Value>,
                                        Grads &dx) {
  return none(g, *this, dx);
}
LogicalResult GreaterEqualOp::buildGradients(GradientBuilder &g,
                                             ArrayRef<Value>, Grads &dx) {
  return none(g, *this, dx);
}
LogicalResult AndOp::buildGradients(GradientBuilder &g, ArrayRef<Value>,
                                    Grads &dx) {
  return none(g, *this, dx);
}
LogicalResult OrOp::buildGradients(GradientBuilder &g, ArrayRef<Value>,
                                   Grads &dx) {
  return none(g, *this, dx);
}
LogicalResult XorOp::buildGradients(GradientBuilder &g, ArrayRef<Value>,
                                    Grads &dx) {
  return none(g, *this, dx);
}

LogicalResult WhereOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                      Grads &dx) {
  Value c = getCondition();
  dx.push_back(Value());
  dx.push_back(g.sumTo(whereZero(g, c, dy[0], true), getLhs()));
  dx.push_back(g.sumTo(whereZero(g, c, dy[0], false), getRhs()));
  return done(g);
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                       Grads &dx) {
  Value a = getLhs(), b = getRhs(), d = dy[0];
  ArrayRef<int64_t> as = shapeOf(a), bs = shapeOf(b);
  // x W with a 2-D W (every linear layer): one GEMM per gradient over the
  // rows of x, no transposes, no reshapes (a reshape merging x's rows would
  // gather a row dimension split over one axis inside one split over
  // another: a sequence over sp inside a batch over dp).
  if (as.size() >= 2 && bs.size() == 2) {
    dx.push_back(g.gemm(d, b, false, true));
    dx.push_back(g.gemm(a, d, true, false));
    return done(g);
  }
  // Vectors are promoted to matrices (numpy) and the gradients reshaped back.
  Value a2 = as.size() == 1 ? g.reshape(a, {1, as[0]}) : a;
  Value b2 = bs.size() == 1 ? g.reshape(b, {bs[0], 1}) : b;
  Value y2 = g.op<MatMulOp>({a2, b2});
  if (!y2)
    return failure();
  Value d2 = g.reshape(d, shapeOf(y2));
  Value da = g.sumTo(g.op<MatMulOp>({d2, g.transposeLast2(b2)}), a2);
  Value db = g.sumTo(g.op<MatMulOp>({g.transposeLast2(a2), d2}), b2);
  y2.getDefiningOp()->erase();
  dx.push_back(g.reshape(da, as));
  dx.push_back(g.reshape(db, bs));
  return done(g);
}

LogicalResult GemmOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                     Grads &dx) {
  Value a = getA(), b = getB(), d = dy[0];
  bool ta = getTransA(), tb = getTransB();
  double alpha = getAlpha().convertToFloat();
  auto gemm = [&](Value l, Value r, bool tl, bool tr) {
    return g.gemm(l, r, tl, tr, alpha);
  };
  // Y = alpha op(A) op(B) + beta C.
  dx.push_back(ta ? gemm(b, d, tb, true) : gemm(d, b, false, !tb));
  dx.push_back(tb ? gemm(d, a, true, ta) : gemm(a, d, !ta, false));
  if (Value c = getC())
    dx.push_back(g.sumTo(g.scale(d, getBeta().convertToFloat()), c));
  return done(g);
}

LogicalResult AttentionOp::buildGradients(GradientBuilder &g,
                                          ArrayRef<Value> dy, Grads &dx) {
  // Masks by index exist only on per-device programs, built after the step.
  if (getHideFrom() || getSeqFirst())
    return emitOpError("hide_from and seq_first are not differentiable; "
                       "differentiate before code generation's rewrites");
  // The forward's chain, rebuilt (scores are materialized here; the forward
  // kernel never holds them).
  Value q = getQuery(), k = getKey(), v = getValue(), d = dy[0];
  double s = getScale().convertToDouble();
  double factor = getDivide() ? 1.0 / s : s;
  Value scores = g.scale(g.op<MatMulOp>({q, g.transposeLast2(k)}), factor);
  if (Value hide = getHide())
    scores = g.op<WhereOp>(
        {hide, g.scalarLike(scores, getFill().convertToDouble()), scores});
  if (Value mask = getMask())
    scores = g.add(scores, mask);
  int64_t last = typeOf(q).getRank() - 1;
  Value p = g.op<SoftmaxOp>({scores}, {g.i64("axis", last)});
  Value dv = g.op<MatMulOp>({g.transposeLast2(p), d});
  Value dp = g.op<MatMulOp>({d, g.transposeLast2(v)});
  Value rowDot = g.reduceSum(g.mul(dp, p), {last}, /*keepdims=*/true);
  Value ds = g.mul(p, g.sub(dp, rowDot));
  if (Value hide = getHide())
    ds = whereZero(g, hide, ds, false);
  Value dsScaled = g.scale(ds, factor);
  dx.push_back(g.sumTo(g.op<MatMulOp>({dsScaled, k}), q));
  dx.push_back(g.sumTo(g.op<MatMulOp>({g.transposeLast2(dsScaled), q}), k));
  dx.push_back(g.sumTo(dv, v));
  if (Value mask = getMask())
    dx.push_back(g.sumTo(ds, mask));
  if (getHide())
    dx.push_back(Value());
  return done(g);
}

namespace {

/// `v` with `front` elements added before and `back` after along `axis`
/// (of `fill`, zeros by default), or removed where negative.
Value padAxis(GradientBuilder &g, Value v, int64_t axis, int64_t front,
              int64_t back, double fill = 0) {
  SmallVector<int64_t> shape(shapeOf(v));
  if (front < 0 || back < 0) {
    int64_t rank = shape.size();
    SmallVector<int64_t> starts(rank, 0), sizes(shape), steps(rank, 1);
    starts[axis] = std::max<int64_t>(-front, 0);
    sizes[axis] -= starts[axis] + std::max<int64_t>(-back, 0);
    v = g.op<SliceOp>({v}, {g.i64s("starts", starts), g.i64s("sizes", sizes),
                            g.i64s("steps", steps)});
    shape[axis] = sizes[axis];
  }
  SmallVector<Value> parts;
  auto zeros = [&](int64_t n) {
    SmallVector<int64_t> z(shape);
    z[axis] = n;
    return g.expand(g.scalarLike(v, fill), z);
  };
  if (front > 0)
    parts.push_back(zeros(front));
  parts.push_back(v);
  if (back > 0)
    parts.push_back(zeros(back));
  return parts.size() == 1 ? v : g.op<ConcatOp>(parts, {g.i64("axis", axis)});
}

/// `stride - 1` zeros between neighbours along `axis`.
Value spreadAxis(GradientBuilder &g, Value v, int64_t axis, int64_t stride) {
  if (stride == 1)
    return v;
  SmallVector<int64_t> shape(shapeOf(v)), column(shape);
  int64_t n = shape[axis];
  column.insert(column.begin() + axis + 1, 1);
  SmallVector<int64_t> gap(column);
  gap[axis + 1] = stride - 1;
  Value c = g.reshape(v, column);
  Value wide = g.op<ConcatOp>({c, g.expand(g.scalarLike(v, 0), gap)},
                              {g.i64("axis", axis + 1)});
  SmallVector<int64_t> flat(shape);
  flat[axis] = n * stride;
  return padAxis(g, g.reshape(wide, flat), axis, 0, -(stride - 1));
}

} // namespace

LogicalResult ConvOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                     Grads &dx) {
  Value x = getInput(), w = getFilter(), d = dy[0];
  int64_t rank = typeOf(x).getRank(), spatial = rank - 2, group = getGroup();
  ArrayRef<int64_t> s = getStrides(), p = getPads(), dil = getDilations();
  ArrayRef<int64_t> xs = shapeOf(x), ws = shapeOf(w), ys = shapeOf(d);
  SmallVector<int64_t> swap01 = {1, 0};
  for (int64_t i = 2; i < rank; ++i)
    swap01.push_back(i);
  // Both gradients are convolutions with the same groups: each group's
  // channels only meet their own.
  auto conv = [&](Value in, Value f, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations) {
    return g.op<ConvOp>(
        {in, f}, {g.i64s("strides", strides), g.i64s("pads", pads),
                  g.i64s("dilations", dilations), g.i64("group", group)});
  };
  // dX: dY spread by the stride, padded by the dilated window less the
  // pads (plus the rows no window reached), convolved with the filter's
  // channels swapped and its window flipped (a transposed convolution).
  Value spread = d;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t span = (ws[i + 2] - 1) * dil[i];
    int64_t rest = (xs[i + 2] + p[i] + p[i + spatial] - span - 1) % s[i];
    spread = padAxis(g, spreadAxis(g, spread, i + 2, s[i]), i + 2,
                     span - p[i], span - p[i + spatial] + rest);
  }
  // The filter [out, in / G, k...] as the transposed convolution's
  // [in, out / G, k...]: swapped within each group.
  Value flipped = w;
  if (group != 1) {
    SmallVector<int64_t> grouped = {group, ws[0] / group, ws[1]};
    grouped.append(ws.begin() + 2, ws.end());
    SmallVector<int64_t> perm = {0, 2, 1};
    for (int64_t i = 3; i < rank + 1; ++i)
      perm.push_back(i);
    SmallVector<int64_t> swapped = {ws[1] * group, ws[0] / group};
    swapped.append(ws.begin() + 2, ws.end());
    flipped = g.reshape(g.transpose(g.reshape(w, grouped), perm), swapped);
  } else {
    flipped = g.transpose(w, swap01);
  }
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t k = ws[i + 2];
    SmallVector<int64_t> starts(rank, 0), sizes(shapeOf(flipped)),
        steps(rank, 1);
    starts[i + 2] = k - 1;
    steps[i + 2] = -1;
    flipped = g.op<SliceOp>({flipped}, {g.i64s("starts", starts),
                                        g.i64s("sizes", sizes),
                                        g.i64s("steps", steps)});
  }
  SmallVector<int64_t> ones(spatial, 1), noPads(2 * spatial, 0);
  dx.push_back(conv(spread, flipped, ones, noPads, dil));
  // dW: X (channels as the batch) convolved with dY (images as input
  // channels): the stride becomes the dilation and back, cropped to the
  // window, channels swapped back. With groups, X's channels [G, in / G]
  // become the batch [in / G] and each group's images its input channels.
  Value xt = g.transpose(x, swap01);
  if (group != 1) {
    SmallVector<int64_t> split = {xs[0], group, xs[1] / group},
                         perm = {2, 1, 0},
                         merged = {xs[1] / group, group * xs[0]};
    for (int64_t i = 2; i < rank; ++i) {
      split.push_back(xs[i]);
      perm.push_back(i + 1);
      merged.push_back(xs[i]);
    }
    xt = g.reshape(g.transpose(g.reshape(x, split), perm), merged);
  }
  Value taps = conv(xt, g.transpose(d, swap01), dil, p, s);
  if (!taps)
    return failure();
  SmallVector<int64_t> starts(rank, 0), sizes(shapeOf(taps)), steps(rank, 1);
  for (int64_t i = 0; i < spatial; ++i)
    sizes[i + 2] = ws[i + 2];
  Value cropped = g.op<SliceOp>({taps}, {g.i64s("starts", starts),
                                         g.i64s("sizes", sizes),
                                         g.i64s("steps", steps)});
  dx.push_back(g.transpose(cropped, swap01));
  if (Value bias = getBias()) {
    SmallVector<int64_t> axes = {0};
    for (int64_t i = 2; i < int64_t(ys.size()); ++i)
      axes.push_back(i);
    dx.push_back(g.reduceSum(d, axes, /*keepdims=*/false));
  }
  return done(g);
}

namespace {

/// How many elements each average-pooling window covers, as a
/// [1, 1, out...] constant of `elem`: the divisor. Those of the unpadded
/// input, or with `countPad` those within the explicit pads too (never a
/// ceil_mode window's overhang beyond them), as pcc's kernels count.
Value windowCounts(GradientBuilder &g, ArrayRef<int64_t> in,
                   ArrayRef<int64_t> out, ArrayRef<int64_t> kernel,
                   ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                   ArrayRef<int64_t> dilations, Type elem, bool countPad) {
  int64_t spatial = kernel.size();
  // Per axis and output position, the window's elements counted.
  SmallVector<SmallVector<int64_t>> inside(spatial);
  for (int64_t i = 0; i < spatial; ++i)
    for (int64_t j = 0; j < out[i]; ++j) {
      int64_t n = 0;
      int64_t end = in[i] + (countPad ? pads[i + spatial] : 0);
      for (int64_t o = 0; o < kernel[i]; ++o) {
        int64_t at = j * strides[i] + o * dilations[i] - pads[i];
        n += (countPad || at >= 0) && at < end;
      }
      inside[i].push_back(n);
    }
  SmallVector<int64_t> shape = {1, 1};
  llvm::append_range(shape, out);
  auto type = RankedTensorType::get(shape, elem);
  SmallVector<Attribute> counts;
  for (int64_t flat = 0; flat < type.getNumElements(); ++flat) {
    int64_t rest = flat, n = 1;
    for (int64_t i = spatial - 1; i >= 0; --i) {
      n *= inside[i][rest % out[i]];
      rest /= out[i];
    }
    counts.push_back(FloatAttr::get(elem, double(n)));
  }
  return ConstantOp::create(g.builder(), g.location(),
                            cast<ElementsAttr>(DenseElementsAttr::get(
                                type, ArrayRef<Attribute>(counts))));
}

/// A pooling's gradient, one window offset at a time: the input elements
/// an offset reads (a strided slice of the padded input) receive that
/// offset's share of dY, spread back by the stride and shifted into place.
/// Max pooling gives each window's gradient to its first element equal to
/// the maximum (the element torch's kernel picks on ties); average pooling
/// divides it by the window's count.
template <typename PoolOp>
LogicalResult poolGradient(GradientBuilder &g, PoolOp op, ArrayRef<Value> dy,
                           Grads &dx, bool isMax) {
  Value x = op.getInput(), y = op.getResult();
  ArrayRef<int64_t> k = op.getKernelShape(), s = op.getStrides(),
                    p = op.getPads(), d = op.getDilations();
  ArrayRef<int64_t> xs = shapeOf(x), ys = shapeOf(y);
  int64_t rank = xs.size(), spatial = rank - 2;
  Value padded = x, share = dy[0];
  // ceil_mode's last windows reach past the padded input (`overhang`):
  // padded further, with what never wins a maximum nor adds to a sum.
  SmallVector<int64_t> paddedLen, overhang;
  bool anyPad = false, anyOverhang = false;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t len = xs[i + 2] + p[i] + p[i + spatial];
    int64_t reach = (ys[i + 2] - 1) * s[i] + (k[i] - 1) * d[i] + 1;
    overhang.push_back(std::max<int64_t>(reach - len, 0));
    paddedLen.push_back(len + overhang.back());
    anyPad |= p[i] || p[i + spatial];
    anyOverhang |= overhang.back() > 0;
    // Padding never wins a maximum.
    if (isMax)
      padded = padAxis(g, padded, i + 2, p[i], p[i + spatial] + overhang[i],
                       -INFINITY);
  }
  if (!isMax) {
    int64_t window = 1;
    for (int64_t n : k)
      window *= n;
    bool countPad = op.getCountIncludePad();
    share =
        (countPad || !anyPad) && !anyOverhang
            ? g.scale(share, 1.0 / double(window))
            : g.div(share,
                    windowCounts(g, xs.drop_front(2), ys.drop_front(2), k, s, p,
                                 d, typeOf(x).getElementType(), countPad));
  }
  Value taken, sum;
  SmallVector<int64_t> offset(spatial, 0);
  while (true) {
    Value part = share;
    if (isMax) {
      SmallVector<int64_t> starts(rank, 0), sizes(ys), steps(rank, 1);
      for (int64_t i = 0; i < spatial; ++i) {
        starts[i + 2] = offset[i] * d[i];
        steps[i + 2] = s[i];
      }
      Value read = g.op<SliceOp>({padded}, {g.i64s("starts", starts),
                                            g.i64s("sizes", sizes),
                                            g.i64s("steps", steps)});
      Value isMaximum = g.op<EqualOp>({read, y});
      Value first =
          taken ? g.op<AndOp>({isMaximum, g.op<NotOp>({taken})}) : isMaximum;
      taken = taken ? g.op<OrOp>({taken, isMaximum}) : isMaximum;
      part = whereZero(g, first, dy[0], true);
    }
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t front = offset[i] * d[i];
      int64_t reach = (ys[i + 2] - 1) * s[i] + 1;
      part = padAxis(g, spreadAxis(g, part, i + 2, s[i]), i + 2, front,
                     paddedLen[i] - front - reach);
    }
    sum = sum ? g.add(sum, part) : part;
    // Next offset, the last axis fastest.
    int64_t i = spatial - 1;
    while (i >= 0 && ++offset[i] == k[i])
      offset[i--] = 0;
    if (i < 0)
      break;
  }
  for (int64_t i = 0; i < spatial; ++i)
    sum = padAxis(g, sum, i + 2, -p[i], -p[i + spatial] - overhang[i]);
  dx.push_back(sum);
  return done(g);
}

} // namespace

LogicalResult MaxPoolOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                        Grads &dx) {
  return poolGradient(g, *this, dy, dx, /*isMax=*/true);
}

LogicalResult AveragePoolOp::buildGradients(GradientBuilder &g,
                                            ArrayRef<Value> dy, Grads &dx) {
  return poolGradient(g, *this, dy, dx, /*isMax=*/false);
}

LogicalResult GlobalAveragePoolOp::buildGradients(GradientBuilder &g,
                                                  ArrayRef<Value> dy,
                                                  Grads &dx) {
  Value x = getInput();
  int64_t count = 1;
  for (int64_t n : shapeOf(x).drop_front(2))
    count *= n;
  dx.push_back(g.scale(g.expand(dy[0], shapeOf(x)), 1.0 / double(count)));
  return done(g);
}

//===----------------------------------------------------------------------===//
// Normalizations and reductions
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                        Grads &dx) {
  Value y = getResult(), d = dy[0];
  int64_t axis = normalizeAxis(getAxis(), typeOf(y).getRank());
  Value dot = g.reduceSum(g.mul(d, y), {axis}, true);
  dx.push_back(g.mul(y, g.sub(d, dot)));
  return done(g);
}

LogicalResult LogSoftmaxOp::buildGradients(GradientBuilder &g,
                                           ArrayRef<Value> dy, Grads &dx) {
  Value y = getResult(), d = dy[0];
  int64_t axis = normalizeAxis(getAxis(), typeOf(y).getRank());
  Value sum = g.reduceSum(d, {axis}, true);
  dx.push_back(g.sub(d, g.mul(g.op<ExpOp>({y}), sum)));
  return done(g);
}

LogicalResult LayerNormOp::buildGradients(GradientBuilder &g,
                                          ArrayRef<Value> dy, Grads &dx) {
  Value x = getInput(), d = dy[0];
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> axes;
  for (int64_t a = normalizeAxis(getAxis(), rank); a < rank; ++a)
    axes.push_back(a);
  OpBuilder &ob = g.builder();
  auto mean = [&](Value v) {
    return g.op<ReduceMeanOp>(
        {v}, {g.i64s("axes", axes), g.named("keepdims", ob.getBoolAttr(true))});
  };
  Value centred = g.sub(x, mean(x));
  Value var = mean(g.mul(centred, centred));
  Value rstd = g.op<ReciprocalOp>({g.op<SqrtOp>(
      {g.add(var, g.scalarLike(var, getEpsilon().convertToFloat()))})});
  Value xhat = g.mul(centred, rstd);
  Value dxhat = g.mul(d, getScale());
  Value inner = g.sub(g.sub(dxhat, mean(dxhat)),
                      g.mul(xhat, mean(g.mul(dxhat, xhat))));
  dx.push_back(g.mul(rstd, inner));
  dx.push_back(g.sumTo(g.mul(d, xhat), getScale()));
  if (Value bias = getBias())
    dx.push_back(g.sumTo(d, bias));
  return done(g);
}

LogicalResult BatchNormOp::buildGradients(GradientBuilder &g,
                                          ArrayRef<Value> dy, Grads &dx) {
  // The statistics are constants of the step: y is an affine map of x.
  Value x = getInput(), d = dy[0];
  int64_t rank = typeOf(x).getRank(), channels = typeOf(x).getDimSize(1);
  SmallVector<int64_t> perChannel(rank, 1), axes{0};
  perChannel[1] = channels;
  for (int64_t a = 2; a < rank; ++a)
    axes.push_back(a);
  auto channel = [&](Value v) { return g.reshape(v, perChannel); };
  auto sumToChannels = [&](Value v) {
    return g.reshape(g.reduceSum(v, axes, /*keepdims=*/false), {channels});
  };
  Value var = getVariance();
  Value rstd = channel(g.op<ReciprocalOp>({g.op<SqrtOp>(
      {g.add(var, g.scalarLike(var, getEpsilon().convertToFloat()))})}));
  Value xhat = g.mul(g.sub(x, channel(getMean())), rstd);
  dx.push_back(g.mul(d, g.mul(channel(getScale()), rstd)));
  dx.push_back(sumToChannels(g.mul(d, xhat)));
  dx.push_back(sumToChannels(d));
  // The running statistics are buffers (PyTorch's eval mode): no gradient.
  dx.push_back(Value());
  dx.push_back(Value());
  return done(g);
}

LogicalResult DropoutOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                        Grads &dx) {
  // Linear in the input, with the same mask: the same op on the gradient.
  SmallVector<Value, 2> operands{dy[0]};
  if (getStep())
    operands.push_back(getStep());
  dx.push_back(g.op<DropoutOp>(operands, {g.named("ratio", getRatioAttr()),
                                          g.named("seed", getSeedAttr()),
                                          g.named("stream", getStreamAttr())}));
  if (getStep())
    dx.push_back(Value());
  return done(g);
}

namespace {

LogicalResult reduction(GradientBuilder &g, Operation *op, ArrayRef<Value> dy,
                        Grads &dx, ArrayRef<int64_t> axes) {
  Value x = op->getOperand(0), y = op->getResult(0), d = dy[0];
  if (!isFloatTensor(x)) {
    dx.push_back(Value());
    return done(g);
  }
  Value spreadD = g.spread(d, x, axes);
  if (isa<ReduceSumOp>(op)) {
    dx.push_back(spreadD);
  } else if (isa<ReduceMeanOp>(op)) {
    int64_t count = 1;
    for (int64_t a : axes)
      count *= shapeOf(x)[a];
    dx.push_back(g.scale(spreadD, 1.0 / double(count)));
  } else if (isa<ReduceProdOp>(op)) {
    dx.push_back(g.div(g.mul(spreadD, g.spread(y, x, axes)), x));
  } else { // max, min: to the elements equal to the result
    Value hit = g.op<EqualOp>({x, g.spread(y, x, axes)});
    dx.push_back(whereZero(g, hit, spreadD, true));
  }
  return done(g);
}

} // namespace

LogicalResult ReduceSumOp::buildGradients(GradientBuilder &g,
                                          ArrayRef<Value> dy, Grads &dx) {
  return reduction(g, *this, dy, dx, getAxes());
}
LogicalResult ReduceMeanOp::buildGradients(GradientBuilder &g,
                                           ArrayRef<Value> dy, Grads &dx) {
  return reduction(g, *this, dy, dx, getAxes());
}
LogicalResult ReduceMaxOp::buildGradients(GradientBuilder &g,
                                          ArrayRef<Value> dy, Grads &dx) {
  return reduction(g, *this, dy, dx, getAxes());
}
LogicalResult ReduceMinOp::buildGradients(GradientBuilder &g,
                                          ArrayRef<Value> dy, Grads &dx) {
  return reduction(g, *this, dy, dx, getAxes());
}
LogicalResult ReduceProdOp::buildGradients(GradientBuilder &g,
                                           ArrayRef<Value> dy, Grads &dx) {
  return reduction(g, *this, dy, dx, getAxes());
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                        Grads &dx) {
  dx.push_back(g.reshape(dy[0], shapeOf(getInput())));
  return done(g);
}

LogicalResult TransposeOp::buildGradients(GradientBuilder &g,
                                          ArrayRef<Value> dy, Grads &dx) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  dx.push_back(g.transpose(dy[0], inverse));
  return done(g);
}

LogicalResult ExpandOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                       Grads &dx) {
  dx.push_back(g.sumTo(dy[0], getInput()));
  return done(g);
}

LogicalResult ConcatOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                       Grads &dx) {
  Value d = dy[0];
  int64_t rank = typeOf(d).getRank();
  int64_t axis = normalizeAxis(getAxis(), rank);
  int64_t at = 0;
  for (Value in : getInputs()) {
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
    starts[axis] = at;
    at += shapeOf(in)[axis];
    dx.push_back(g.op<SliceOp>({d}, {g.i64s("starts", starts),
                                     g.i64s("sizes", shapeOf(in)),
                                     g.i64s("steps", steps)}));
  }
  return done(g);
}

LogicalResult SplitOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                      Grads &dx) {
  SmallVector<Value> parts;
  for (auto [r, d] : llvm::zip(getResults(), dy))
    parts.push_back(d ? d : g.fill(r, 0));
  int64_t axis = normalizeAxis(getAxis(), typeOf(getInput()).getRank());
  dx.push_back(parts.size() == 1 ? parts[0]
                                 : g.op<ConcatOp>(parts, {g.i64("axis", axis)}));
  return done(g);
}

LogicalResult SliceOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                      Grads &dx) {
  // The slice put back among zeros, one axis at a time: a reversed axis
  // (negative step) turned back, a strided one spread by its step, then
  // shifted into place.
  Value d = dy[0];
  ArrayRef<int64_t> in = shapeOf(getInput());
  int64_t rank = in.size();
  for (auto [axis, start, step] :
       llvm::zip(llvm::seq<int64_t>(0, rank), getStarts(), getSteps())) {
    int64_t size = shapeOf(d)[axis];
    if (size == 0)
      continue;
    int64_t first = start;
    if (step < 0) {
      SmallVector<int64_t> starts(rank, 0), sizes(shapeOf(d)), steps(rank, 1);
      starts[axis] = size - 1;
      steps[axis] = -1;
      d = g.op<SliceOp>({d}, {g.i64s("starts", starts), g.i64s("sizes", sizes),
                              g.i64s("steps", steps)});
      first = start + (size - 1) * step;
    }
    int64_t stride = std::abs(step);
    int64_t span = (size - 1) * stride + 1;
    d = padAxis(g, spreadAxis(g, d, axis, stride), axis, first,
                in[axis] - first - span);
  }
  dx.push_back(d);
  return done(g);
}

LogicalResult GatherOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                       Grads &dx) {
  Value table = getInput(), idx = getIndices(), d = dy[0];
  ArrayRef<int64_t> ts = shapeOf(table);
  int64_t axis = normalizeAxis(getAxis(), ts.size());
  if (!isFloatTensor(table)) {
    dx.append({Value(), Value()});
    return done(g);
  }
  // The rows each index picked, summed: a one-hot product over the gathered
  // axis, a GEMM (or a batched one) the partitioner splits like any other.
  int64_t n = numElements(shapeOf(idx)), rows = ts[axis];
  int64_t outer = numElements(ts.take_front(axis));
  int64_t inner = numElements(ts.drop_front(axis + 1));
  Type it = typeOf(idx).getElementType();
  if (outer == 1 && !shapeOf(idx).empty()) {
    // An embedding: [idx..., rows] one-hot rows contracted with the
    // gradient's rows [idx..., inner] in place (no reshape merging the
    // index dimensions, which may be split over different axes).
    SmallVector<int64_t> is(shapeOf(idx)), rowsOf(is);
    is.push_back(1);
    Value at = g.reshape(idx, is);
    Value wrapped = g.op<WhereOp>({g.op<LessOp>({at, g.scalar(it, 0)}),
                                   g.add(at, g.scalar(it, double(rows))),
                                   at});
    Value picked = g.oneHot(wrapped, rows, is.size(), is.size() - 1,
                            typeOf(table).getElementType());
    rowsOf.push_back(inner);
    dx.push_back(g.reshape(g.gemm(picked, g.reshape(d, rowsOf), true, false),
                           ts));
    dx.push_back(Value());
    return done(g);
  }
  // Negative indices count from the end.
  Value flat = g.reshape(idx, {1, n});
  Value wrapped = g.op<WhereOp>({g.op<LessOp>({flat, g.scalar(it, 0)}),
                                 g.add(flat, g.scalar(it, double(rows))),
                                 flat});
  // [rows, n]: 1 where index k picked row r.
  Value picked = g.oneHot(wrapped, rows, /*rank=*/2, /*axis=*/0,
                          typeOf(table).getElementType());
  Value dt;
  if (outer == 1)
    dt = g.gemm(picked, g.reshape(d, {n, inner}), false, false);
  else
    dt = g.op<MatMulOp>({picked, g.reshape(d, {outer, n, inner})});
  dx.push_back(g.reshape(dt, ts));
  dx.push_back(Value());
  return done(g);
}

LogicalResult TriluOp::buildGradients(GradientBuilder &g, ArrayRef<Value> dy,
                                      Grads &dx) {
  dx.push_back(g.op<TriluOp>({dy[0]}, {g.named("upper", getUpperAttr()),
                                       g.named("k", getKAttr())}));
  return done(g);
}

} // namespace pcc
