//===- RaiseComposites.cpp - raise decomposed GELU, LayerNorm, attention --===//
//
// Matches are exact: every constant in a chain must have the value the
// decomposition uses (0.5, 1, sqrt 2, exponent 2), and every intermediate
// value must have no other users, so raising never changes what the model
// computes. A constant matches when it equals the expected value rounded to
// the constant's own float type (sqrt 2 is 1.4140625 in f16), within a
// relative 1e-6 because exporters may compute it in f32 before casting.
//
//===----------------------------------------------------------------------===//

#include "MatchUtils.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/Transforms/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace pcc {
#define GEN_PASS_DEF_RAISECOMPOSITES
#include "pcc/Dialect/PCC/Transforms/Passes.h.inc"
} // namespace pcc

using namespace mlir;
using namespace pcc;

namespace {

/// x * 0.5 * (1 + erf(x / sqrt 2)), in either association torch uses:
/// mul(mul(x, 1 + erf(..)), 0.5) or mul(x, mul(1 + erf(..), 0.5)).
struct RaiseGelu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  /// If `v` is 1 + erf(x / sqrt 2), returns x.
  static Value matchOnePlusErf(Value v) {
    auto add = singleUse<AddOp>(v);
    if (!add)
      return {};
    for (Value operand : add->getOperands()) {
      auto erf = operand.getDefiningOp<ErfOp>();
      if (!erf || !erf->hasOneUse() || !isSplat(other(add, operand), 1.0))
        continue;
      auto div = singleUse<DivOp>(erf.getInput());
      if (div && isSplat(div.getRhs(), std::sqrt(2.0)))
        return div.getLhs();
    }
    return {};
  }

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    Value x;
    for (Value half : root->getOperands()) {
      if (!isSplat(half, 0.5))
        continue;
      Value rest = other(root, half);
      auto inner = singleUse<MulOp>(rest);
      if (!inner)
        continue;
      // mul(mul(x, 1 + erf(x / sqrt2)), 0.5)
      for (Value candidate : inner->getOperands()) {
        Value erfInput = matchOnePlusErf(other(inner, candidate));
        if (erfInput && erfInput == candidate)
          x = candidate;
      }
    }
    if (!x) {
      // mul(x, mul(1 + erf(x / sqrt2), 0.5)) or mul(mul(x, 0.5), 1 + erf(..))
      for (Value operand : root->getOperands()) {
        auto inner = singleUse<MulOp>(operand);
        if (!inner)
          continue;
        Value outer = other(root, operand);
        for (Value half : inner->getOperands()) {
          if (!isSplat(half, 0.5))
            continue;
          Value mid = other(inner, half);
          if (Value in = matchOnePlusErf(mid); in && in == outer)
            x = outer;
          else if (Value in2 = matchOnePlusErf(outer); in2 && in2 == mid)
            x = mid;
        }
      }
    }
    if (!x || x.getType() != root.getType())
      return rewriter.notifyMatchFailure(root, "not an erf GELU");
    rewriter.replaceOpWithNewOp<GeluOp>(root, root.getType(), x,
                                        rewriter.getStringAttr("none"));
    return success();
  }
};

/// Whether a scale or bias broadcasts to the normalized trailing shape of
/// `type` from `axis` (then layer_norm applies it the same way add/mul do).
bool fitsNormalized(Value param, RankedTensorType type, int64_t axis) {
  auto pt = cast<RankedTensorType>(param.getType());
  ArrayRef<int64_t> norm = type.getShape().drop_front(axis);
  if (pt.getElementType() != type.getElementType() ||
      pt.getRank() > static_cast<int64_t>(norm.size()))
    return false;
  for (auto [p, n] : llvm::zip(llvm::reverse(pt.getShape()),
                               llvm::reverse(norm)))
    if (p != n && p != 1)
      return false;
  return true;
}

/// add(mul(div(x - mean(x), sqrt(mean((x - mean(x))^2) + eps)), gamma), beta)
/// with means over the trailing axes.
struct RaiseLayerNorm : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp root,
                                PatternRewriter &rewriter) const override {
    for (Value scaled : root->getOperands()) {
      Value beta = other(root, scaled);
      auto mul = singleUse<MulOp>(scaled);
      if (!mul)
        continue;
      for (Value normed : mul->getOperands()) {
        Value gamma = other(mul, normed);
        if (succeeded(tryRaise(root, normed, gamma, beta, rewriter)))
          return success();
      }
    }
    return rewriter.notifyMatchFailure(root, "not a decomposed layer norm");
  }

  static LogicalResult tryRaise(AddOp root, Value normed, Value gamma,
                                Value beta, PatternRewriter &rewriter) {
    auto div = singleUse<DivOp>(normed);
    if (!div)
      return failure();
    auto centered = div.getLhs().getDefiningOp<SubOp>();
    auto sqrt = singleUse<SqrtOp>(div.getRhs());
    if (!centered || !sqrt)
      return failure();
    auto mean = centered.getRhs().getDefiningOp<ReduceMeanOp>();
    Value x = centered.getLhs();
    if (!mean || mean.getInput() != x || !mean.getKeepdims())
      return failure();
    auto addEps = singleUse<AddOp>(sqrt.getInput());
    if (!addEps)
      return failure();
    for (Value varV : addEps->getOperands()) {
      auto eps = splatValue(other(addEps, varV));
      auto var = singleUse<ReduceMeanOp>(varV);
      if (!eps || !var || var.getAxes() != mean.getAxes() ||
          !var.getKeepdims())
        continue;
      auto pow = singleUse<PowOp>(var.getInput());
      if (!pow || pow.getLhs() != centered.getResult() ||
          !isSplat(pow.getRhs(), 2.0))
        continue;
      // centered feeds exactly the pow and the div.
      if (!llvm::hasNItems(centered->getUses(), 2))
        continue;
      auto type = cast<RankedTensorType>(x.getType());
      ArrayRef<int64_t> axes = mean.getAxes();
      int64_t axis = axes.empty() ? -1 : axes.front();
      bool trailing = !axes.empty();
      for (auto [i, a] : llvm::enumerate(axes))
        trailing &= a == axis + static_cast<int64_t>(i);
      if (!trailing || axes.back() != type.getRank() - 1)
        continue;
      if (root.getType() != type || !mean->hasOneUse() ||
          !fitsNormalized(gamma, type, axis) ||
          !fitsNormalized(beta, type, axis))
        continue;
      auto ln = LayerNormOp::create(
          rewriter, root.getLoc(), type, x, gamma, beta,
          rewriter.getI64IntegerAttr(axis),
          rewriter.getF32FloatAttr(static_cast<float>(*eps)),
          DenseI64ArrayAttr());
      rewriter.replaceOp(root, ln.getResult());
      return success();
    }
    return failure();
  }
};

struct RaiseCompositesPass
    : pcc::impl::RaiseCompositesBase<RaiseCompositesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseGelu, RaiseLayerNorm>(&getContext());
    populateRaiseAttentionPatterns(patterns);
    populateRaiseTanhGeluPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
