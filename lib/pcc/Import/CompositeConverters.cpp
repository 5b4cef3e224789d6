//===- CompositeConverters.cpp - ONNX activations built from pcc ops ------===//
//
// Activations that are short formulas over existing elementwise ops import as
// those formulas rather than as new ops: the code generator fuses each back
// into one loop, and partitioning needs no rule for them. Each formula follows
// the ONNX operator definition.
//
//===----------------------------------------------------------------------===//

#include "ExprBuilder.h"

using namespace mlir;

namespace pcc::import {
namespace {

/// Wraps a formula over input 0 (float input required).
template <typename Fn>
Converter formula(Fn fn) {
  return [fn](NodeContext &c) -> Results {
    if (failed(c.requireInputs(1)))
      return failure();
    Type elem = c.inputType(0).getElementType();
    if (!isa<FloatType>(elem))
      return c.error() << "'" << c.node.op_type() << "' on " << elem
                       << " is not supported (floating-point only)";
    Expr e(c);
    e.elem = elem;
    return e.done(fn(c, e, c.input(0)));
  };
}

/// max(x, 0) + log(1 + exp(-|x|)): softplus without overflow.
Value softplus(Expr &e, Value x) {
  Value pos = e.op<MaxOp>(x, e.k(0));
  Value tail = e.op<LogOp>(e.op<AddOp>(e.k(1), e.op<ExpOp>(e.op<NegOp>(e.op<AbsOp>(x)))));
  return e.op<AddOp>(pos, tail);
}

Value hardSigmoid(Expr &e, Value x, double alpha, double beta) {
  Value lin = e.op<AddOp>(e.op<MulOp>(x, e.k(alpha)), e.k(beta));
  return e.op<MaxOp>(e.op<MinOp>(lin, e.k(1)), e.k(0));
}

} // namespace

void addCompositeConverters(llvm::StringMap<Converter> &t) {
  t["Softplus"] = formula([](NodeContext &, Expr &e, Value x) {
    return softplus(e, x);
  });
  t["Softsign"] = formula([](NodeContext &, Expr &e, Value x) {
    return e.op<DivOp>(x, e.op<AddOp>(e.k(1), e.op<AbsOp>(x)));
  });
  t["Elu"] = formula([](NodeContext &c, Expr &e, Value x) {
    double alpha = c.floatAttr("alpha", 1.0f);
    Value neg = e.op<MulOp>(e.k(alpha), e.op<SubOp>(e.op<ExpOp>(x), e.k(1)));
    return e.where(e.op<LessOp>(x, e.k(0)), neg, x);
  });
  t["Selu"] = formula([](NodeContext &c, Expr &e, Value x) {
    double alpha = c.floatAttr("alpha", 1.67326319217681884765625f);
    double gamma = c.floatAttr("gamma", 1.05070102214813232421875f);
    Value neg = e.op<SubOp>(e.op<MulOp>(e.k(alpha), e.op<ExpOp>(x)), e.k(alpha));
    return e.op<MulOp>(e.k(gamma), e.where(e.op<LessEqualOp>(x, e.k(0)), neg, x));
  });
  t["Celu"] = formula([](NodeContext &c, Expr &e, Value x) {
    double alpha = c.floatAttr("alpha", 1.0f);
    Value expm1 = e.op<SubOp>(e.op<ExpOp>(e.op<DivOp>(x, e.k(alpha))), e.k(1));
    return e.op<AddOp>(e.op<MaxOp>(x, e.k(0)),
                       e.op<MinOp>(e.k(0), e.op<MulOp>(e.k(alpha), expm1)));
  });
  t["HardSigmoid"] = formula([](NodeContext &c, Expr &e, Value x) {
    return hardSigmoid(e, x, c.floatAttr("alpha", 0.2f), c.floatAttr("beta", 0.5f));
  });
  t["HardSwish"] = formula([](NodeContext &, Expr &e, Value x) {
    return e.op<MulOp>(x, hardSigmoid(e, x, 1.0 / 6, 0.5));
  });
  t["ThresholdedRelu"] = formula([](NodeContext &c, Expr &e, Value x) {
    return e.where(e.op<GreaterOp>(x, e.k(c.floatAttr("alpha", 1.0f))), x, e.k(0));
  });
  t["Mish"] = formula([](NodeContext &, Expr &e, Value x) {
    return e.op<MulOp>(x, e.op<TanhOp>(softplus(e, x)));
  });
  t["Shrink"] = formula([](NodeContext &c, Expr &e, Value x) {
    double bias = c.floatAttr("bias", 0.0f), lambd = c.floatAttr("lambd", 0.5f);
    Value low = e.op<LessOp>(x, e.k(-lambd)), high = e.op<GreaterOp>(x, e.k(lambd));
    return e.where(low, e.op<AddOp>(x, e.k(bias)),
                   e.where(high, e.op<SubOp>(x, e.k(bias)), e.k(0)));
  });
  t["Sign"] = formula([](NodeContext &, Expr &e, Value x) {
    Value pos = e.cast(e.op<GreaterOp>(x, e.k(0)), e.elem);
    Value neg = e.cast(e.op<LessOp>(x, e.k(0)), e.elem);
    return e.op<SubOp>(pos, neg);
  });
  t["PRelu"] = [](NodeContext &c) -> Results {
    if (failed(c.requireInputs(2)))
      return failure();
    Expr e(c);
    e.elem = c.inputType(0).getElementType();
    Value x = c.input(0), slope = c.input(1);
    // Before opset 7 a slope of C values is per channel (axis 1), not
    // broadcast numpy-style from the last axis.
    auto xs = c.inputType(0), ss = c.inputType(1);
    if (c.opset < 7 && ss.getRank() == 1 && xs.getRank() > 2 &&
        ss.getDimSize(0) == xs.getDimSize(1) && ss.getDimSize(0) != 1) {
      SmallVector<int64_t> shape(xs.getRank() - 1, 1);
      shape[0] = ss.getDimSize(0);
      slope = e.take(c.build1<ReshapeOp>(slope, {c.i64s("shape", shape)}));
    }
    return e.done(e.where(e.op<LessOp>(x, e.k(0)), e.op<MulOp>(x, slope), x));
  };
  // fmod = 1: the remainder takes the dividend's sign (C fmod); fmod = 0
  // (integers only): the divisor's (Python's %).
  t["Mod"] = [](NodeContext &c) -> Results {
    if (failed(c.requireInputs(2)))
      return failure();
    Expr e(c);
    e.elem = c.inputType(0).getElementType();
    Value a = c.input(0), b = c.input(1);
    bool isFloat = isa<FloatType>(e.elem);
    bool fmod = c.intAttr("fmod", 0) != 0;
    if (isFloat && !fmod)
      return c.error() << "Mod on floats needs fmod = 1";
    Value q = e.op<DivOp>(a, b);
    if (isFloat) // truncate the quotient toward zero
      q = e.where(e.op<LessOp>(q, e.k(0)), e.op<CeilOp>(q), e.op<FloorOp>(q));
    Value r = e.op<SubOp>(a, e.op<MulOp>(b, q));
    if (fmod)
      return e.done(r);
    Value differ = e.op<XorOp>(e.op<LessOp>(r, e.k(0)), e.op<LessOp>(b, e.k(0)));
    Value fix = e.op<AndOp>(e.op<NotOp>(e.op<EqualOp>(r, e.k(0))), differ);
    return e.done(e.where(fix, e.op<AddOp>(r, b), r));
  };
}

} // namespace pcc::import
