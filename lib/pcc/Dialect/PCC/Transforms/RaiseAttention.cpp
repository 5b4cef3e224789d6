//===- RaiseAttention.cpp - raise attention chains to pcc.attention -------===//
//
// torch exports attention as matmul(softmax(masks(scale(matmul(Q, Kt)))), V):
// the scale a Mul or Div by one constant, the masks a Where against a
// constant fill (causal masks from triu constants, boolean padding masks)
// and an Add (additive padding masks), in that order from the scores. Every
// intermediate must have no other user, so the scores exist nowhere else
// and raising never changes what the model computes. A scale applied to Q
// before the product (nn.MultiheadAttention's q / sqrt(d)) stays where it
// is: folding it into the scores would round differently.
//
//===----------------------------------------------------------------------===//

#include "MatchUtils.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

using namespace mlir;

namespace pcc {
namespace {

/// What a chain from the scores product to the softmax applies.
struct ScoreChain {
  MatMulOp product;
  std::optional<double> scale;
  bool divide = false;
  Value hide;         // i1, true where the fill replaces the score
  bool hideWhenFalse = false;
  double fill = 0;
  Value mask;         // added to the scores
};

/// A one-element float constant's value.
std::optional<double> scalarValue(Value v) {
  if (!v || numElements(shapeOf(v)) != 1)
    return std::nullopt;
  return splatValue(v);
}

struct RaiseAttention : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  /// Walks from the softmax input down to Q Kt: at most one Add, then one
  /// Where, then one scale, each used only by the step above it and of
  /// the scores' shape.
  static std::optional<ScoreChain> parseChain(Value x, ArrayRef<int64_t> shape) {
    ScoreChain c;
    enum { AddStep, WhereStep, ScaleStep, ProductStep } next = AddStep;
    while (true) {
      Operation *op = x.getDefiningOp();
      if (!op || !x.hasOneUse() || shapeOf(x) != shape)
        return std::nullopt;
      if (auto mm = dyn_cast<MatMulOp>(op)) {
        c.product = mm;
        return c;
      }
      if (auto add = dyn_cast<AddOp>(op); add && next <= AddStep) {
        // The operand that continues the chain is the one of the scores'
        // shape defined by a chain op; the other is the mask.
        Value lhs = add.getLhs(), rhs = add.getRhs();
        bool lhsChain = shapeOf(lhs) == shape && lhs.hasOneUse() &&
                        isa_and_nonnull<WhereOp, MulOp, DivOp, MatMulOp>(
                            lhs.getDefiningOp());
        c.mask = lhsChain ? rhs : lhs;
        x = lhsChain ? lhs : rhs;
        next = WhereStep;
        continue;
      }
      if (auto where = dyn_cast<WhereOp>(op); where && next <= WhereStep) {
        Value a = where.getLhs(), b = where.getRhs();
        if (auto f = scalarValue(a); f && shapeOf(b) == shape) {
          c.fill = *f;
          x = b;
        } else if (auto g = scalarValue(b); g && shapeOf(a) == shape) {
          c.fill = *g;
          c.hideWhenFalse = true;
          x = a;
        } else {
          return std::nullopt;
        }
        c.hide = where.getCondition();
        next = ScaleStep;
        continue;
      }
      if (next <= ScaleStep && isa<MulOp, DivOp>(op)) {
        Value lhs = op->getOperand(0), rhs = op->getOperand(1);
        bool div = isa<DivOp>(op);
        if (auto s = scalarValue(rhs)) {
          c.scale = *s;
          x = lhs;
        } else if (auto t = scalarValue(lhs); t && !div) {
          c.scale = *t;
          x = rhs;
        } else {
          return std::nullopt;
        }
        c.divide = div;
        next = ProductStep;
        continue;
      }
      return std::nullopt;
    }
  }

  LogicalResult matchAndRewrite(MatMulOp pv,
                                PatternRewriter &rewriter) const override {
    auto softmax = singleUse<SoftmaxOp>(pv.getLhs());
    Value v = pv.getRhs();
    ArrayRef<int64_t> scores = shapeOf(pv.getLhs());
    int64_t rank = scores.size();
    if (!softmax || rank < 2 || shapeOf(v).size() != size_t(rank) ||
        normalizeAxis(softmax.getAxis(), rank) != rank - 1)
      return rewriter.notifyMatchFailure(pv, "not softmax(...) times V");
    auto chain = parseChain(softmax.getInput(), scores);
    if (!chain)
      return rewriter.notifyMatchFailure(pv, "scores are not Q Kt, scaled "
                                             "and masked");
    Value q = chain->product.getLhs(), kt = chain->product.getRhs();
    ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(kt), vs = shapeOf(v);
    if (qs.size() != size_t(rank) || ks.size() != size_t(rank) ||
        qs.drop_back(2) != ks.drop_back(2) ||
        qs.drop_back(2) != vs.drop_back(2) ||
        !(elementTypeOf(q).isF32() || elementTypeOf(q).isF16() ||
          elementTypeOf(q).isBF16()) ||
        elementTypeOf(kt) != elementTypeOf(q) ||
        elementTypeOf(v) != elementTypeOf(q))
      return rewriter.notifyMatchFailure(pv, "Q, K, V are not of one float "
                                             "type (f32, f16, bf16) with the "
                                             "same leading dimensions");
    if (chain->mask && elementTypeOf(chain->mask) != elementTypeOf(q))
      return rewriter.notifyMatchFailure(pv, "mask of another type");

    // K from Kt: swap the last two dimensions, composed with the transpose
    // that made Kt if there is one.
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[rank - 1], perm[rank - 2]);
    Value kSource = kt;
    if (auto t = kt.getDefiningOp<TransposeOp>()) {
      ArrayRef<int64_t> inner = t.getPerm();
      for (int64_t &p : perm)
        p = inner[p];
      kSource = t.getInput();
    }
    Location loc = pv.getLoc();
    Value k = kSource;
    if (!llvm::equal(perm, llvm::seq<int64_t>(0, rank)))
      k = TransposeOp::create(rewriter, loc, kSource,
                              rewriter.getDenseI64ArrayAttr(perm));
    Value hide = chain->hide;
    if (hide && chain->hideWhenFalse)
      hide = NotOp::create(rewriter, loc, hide);
    auto attn = AttentionOp::create(
        rewriter, loc, pv.getType(), q, k, v, chain->mask, hide,
        rewriter.getF64FloatAttr(chain->scale.value_or(1.0)),
        chain->divide ? rewriter.getUnitAttr() : UnitAttr(),
        rewriter.getF64FloatAttr(hide ? chain->fill : 0.0), DenseI64ArrayAttr(),
        IntegerAttr(), UnitAttr(), DenseI64ArrayAttr());
    rewriter.replaceOp(pv, attn.getResult());
    return success();
  }
};

} // namespace

void populateRaiseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseAttention>(patterns.getContext());
}

} // namespace pcc
