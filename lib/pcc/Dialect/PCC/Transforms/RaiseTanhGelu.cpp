//===- RaiseTanhGelu.cpp - raise written-out tanh GELU to pcc.gelu --------===//
//
// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` is written many ways:
// Hugging Face's gelu_new (pow(x, 3)), Megatron's bias_gelu
// (x * 0.5 * (1 + tanh(0.79788456 * x * (1 + 0.044715 * x * x)))), with
// the halving first or last. Rather than one pattern per spelling, a
// candidate is any expression of one tensor x through add, sub, mul, div,
// pow, neg and one tanh, with splat constants and no intermediate read
// elsewhere; it is raised when it equals tanh GELU at sample points, to the
// precision of its constants' own float type. Raising never changes what
// the model computes beyond that rounding.
//
//===----------------------------------------------------------------------===//

#include "MatchUtils.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

using namespace mlir;

namespace pcc {
namespace {

bool isArithmetic(Operation *op) {
  return op && isa<AddOp, SubOp, MulOp, DivOp, PowOp, NegOp, TanhOp>(op);
}

/// The expression a candidate root computes of the tensor `x`.
class Expression {
public:
  explicit Expression(Value x) : x(x) {}

  /// Collects the ops under `root`, down to `x`; fails unless they read
  /// nothing else but splat constants, hold one tanh, and nothing outside
  /// reads their results.
  bool collect(Operation *root) {
    if (!visit(root->getResult(0)) || tanhs != 1)
      return false;
    for (Operation *op : ops)
      if (op != root)
        for (Operation *user : op->getUsers())
          if (!ops.contains(user))
            return false;
    return true;
  }

  double evaluate(Value v, double at) const {
    if (v == x)
      return at;
    if (std::optional<double> c = splatValue(v))
      return *c;
    Operation *op = v.getDefiningOp();
    auto arg = [&](unsigned k) { return evaluate(op->getOperand(k), at); };
    if (isa<AddOp>(op))
      return arg(0) + arg(1);
    if (isa<SubOp>(op))
      return arg(0) - arg(1);
    if (isa<MulOp>(op))
      return arg(0) * arg(1);
    if (isa<DivOp>(op))
      return arg(0) / arg(1);
    if (isa<PowOp>(op))
      return std::pow(arg(0), arg(1));
    if (isa<NegOp>(op))
      return -arg(0);
    return std::tanh(arg(0)); // TanhOp, the only other kind collected
  }

private:
  bool visit(Value v) {
    if (v == x || splatValue(v))
      return true;
    Operation *op = v.getDefiningOp();
    if (!isArithmetic(op))
      return false;
    if (isa<PowOp>(op) && !splatValue(op->getOperand(1)))
      return false;
    if (!ops.insert(op).second)
      return true;
    if (ops.size() > 16)
      return false;
    tanhs += isa<TanhOp>(op);
    return llvm::all_of(op->getOperands(),
                        [&](Value operand) { return visit(operand); });
  }

  Value x;
  int tanhs = 0;
  llvm::SmallPtrSet<Operation *, 16> ops;
};

/// Values the arithmetic under `root` reads more than once: GELU reads its
/// input at least twice (0.5 x and inside the tanh).
SmallVector<Value> inputCandidates(Operation *root) {
  SmallVector<Value> out;
  llvm::SmallPtrSet<Operation *, 16> seen;
  SmallVector<Operation *> work{root};
  while (!work.empty() && seen.size() <= 16) {
    Operation *op = work.pop_back_val();
    if (!seen.insert(op).second)
      continue;
    for (Value v : op->getOperands()) {
      if (splatValue(v))
        continue;
      if (!v.hasOneUse() && !llvm::is_contained(out, v))
        out.push_back(v);
      if (isArithmetic(v.getDefiningOp()))
        work.push_back(v.getDefiningOp());
    }
  }
  return out;
}

double tanhGelu(double x) {
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

struct RaiseTanhGelu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    // Constants are rounded to the model's float type (0.044715 is
    // 0.044708 in f16), so the tolerance is a few units of its precision.
    auto type = dyn_cast<FloatType>(root.getType().getElementType());
    if (!type)
      return rewriter.notifyMatchFailure(root, "not a float product");
    double tolerance =
        8 * std::ldexp(1.0, -int(type.getFPMantissaWidth()) + 1);
    for (Value x : inputCandidates(root)) {
      Expression e(x);
      if (x.getType() != root.getType() || !e.collect(root))
        continue;
      bool equal = true;
      for (double at : {-3.1, -1.7, -0.6, -0.05, 0.3, 0.9, 1.6, 2.8}) {
        double want = tanhGelu(at), got = e.evaluate(root.getResult(), at);
        equal &= std::abs(got - want) <=
                 tolerance * std::max(1.0, std::abs(want));
      }
      if (!equal)
        continue;
      rewriter.replaceOpWithNewOp<GeluOp>(root, root.getType(), x,
                                          rewriter.getStringAttr("tanh"));
      return success();
    }
    return rewriter.notifyMatchFailure(root, "not tanh GELU");
  }
};

} // namespace

void populateRaiseTanhGeluPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseTanhGelu>(patterns.getContext());
}

} // namespace pcc
