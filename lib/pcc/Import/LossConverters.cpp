//===- LossConverters.cpp - ONNX training losses from pcc ops -------------===//
//
// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (what torch exports
// for F.cross_entropy and F.nll_loss) as formulas: the class picked by each
// label is a one-hot product over the class axis, so the loss is a
// pointwise chain and reductions that every target runs, partitioning
// splits, and training differentiates. ONNX's definitions: the weighted
// mean divides by the summed weights of the labels counted; labels equal to
// ignore_index count nothing.
//
//===----------------------------------------------------------------------===//

#include "ExprBuilder.h"

#include "pcc/Dialect/PCC/IR/TensorUtils.h"

using namespace mlir;

namespace pcc::import {
namespace {

/// The loss of log-probabilities `logp` ([N, C, D...]) at integer `labels`
/// ([N, D...]) with optional per-class `weights` ([C]).
FailureOr<Value> negativeLogLikelihood(NodeContext &c, Expr &e, Value logp,
                                       Value labels, Value weights) {
  auto lt = typeOf(logp);
  if (lt.getRank() < 2)
    return c.error() << "'" << c.node.op_type()
                     << "' needs scores of shape [N, C, ...], got " << lt;
  auto labelType = typeOf(labels);
  SmallVector<int64_t> expected(lt.getShape());
  expected.erase(expected.begin() + 1);
  if (labelType.getShape() != ArrayRef<int64_t>(expected) ||
      !isa<IntegerType>(labelType.getElementType()))
    return c.error() << "'" << c.node.op_type() << "' labels must be integers "
                     << "of shape [N, D...] matching the scores " << lt
                     << ", got " << labelType;
  int64_t classes = lt.getDimSize(1);
  std::string reduction = c.stringAttr("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return c.error() << "reduction must be mean, sum or none, got '"
                     << reduction << "'";
  // One-hot over the class axis, [N, C, D...].
  SmallVector<int64_t> column(lt.getShape());
  column[1] = 1;
  SmallVector<int64_t> iotaShape(lt.getRank(), 1);
  iotaShape[1] = classes;
  Type it = labelType.getElementType();
  SmallVector<APInt> iota;
  for (int64_t k = 0; k < classes; ++k)
    iota.push_back(APInt(it.getIntOrFloatBitWidth(), k));
  Value positions = c.constant(
      DenseElementsAttr::get(RankedTensorType::get(iotaShape, it), iota));
  Value l = e.take(c.build1<ReshapeOp>(labels, {c.i64s("shape", column)}));
  Value onehot = e.cast(e.op<EqualOp>(l, positions), e.elem);
  auto classSum = [&](Value v) {
    return e.take(c.build1<ReduceSumOp>(
        v, {c.i64s("axes", {1}), c.boolean("keepdims", false)}));
  };
  Value picked = classSum(e.op<MulOp>(logp, onehot));
  // Per-element weight: the label's class weight, 0 where ignored.
  Value weight;
  if (weights) {
    if (typeOf(weights).getShape() != ArrayRef<int64_t>{classes})
      return c.error() << "class weights must have shape [" << classes
                       << "], got " << typeOf(weights);
    SmallVector<int64_t> wShape(lt.getRank(), 1);
    wShape[1] = classes;
    Value w = e.take(c.build1<ReshapeOp>(weights, {c.i64s("shape", wShape)}));
    weight = classSum(e.op<MulOp>(onehot, w));
  }
  if (const onnx::AttributeProto *a = c.attr("ignore_index")) {
    Value ignored = e.op<EqualOp>(labels, e.take(c.build1<CastOp>(
        e.k(double(a->i())), {c.named("to", TypeAttr::get(it))})));
    Value keep = e.cast(e.op<NotOp>(ignored), e.elem);
    weight = weight ? e.op<MulOp>(weight, keep) : keep;
  }
  Value loss = e.op<NegOp>(weight ? e.op<MulOp>(picked, weight) : picked);
  if (reduction == "none" || e.anyFailed())
    return loss;
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < typeOf(loss).getRank(); ++i)
    all.push_back(i);
  auto reduce = [&](Value v, bool mean) {
    auto attrs = {c.i64s("axes", all), c.boolean("keepdims", false)};
    return mean ? e.take(c.build1<ReduceMeanOp>(v, attrs))
                : e.take(c.build1<ReduceSumOp>(v, attrs));
  };
  if (reduction == "sum")
    return reduce(loss, false);
  if (!weight)
    return reduce(loss, true);
  return e.op<DivOp>(reduce(loss, false), reduce(weight, false));
}

Results convertLoss(NodeContext &c, bool softmax) {
  if (failed(c.requireInputs(2)))
    return failure();
  Expr e(c);
  e.elem = c.inputType(0).getElementType();
  if (!isa<FloatType>(e.elem))
    return c.error() << "'" << c.node.op_type() << "' on " << e.elem
                     << " is not supported (floating-point scores only)";
  Value logp = c.input(0);
  if (softmax)
    logp = e.take(c.build1<LogSoftmaxOp>(logp, {c.i64("axis", 1)}));
  auto loss = negativeLogLikelihood(c, e, logp, c.input(1), c.input(2));
  if (failed(loss) || e.anyFailed())
    return failure();
  SmallVector<Value> out{*loss};
  if (softmax)
    out.push_back(logp); // the optional log_prob output
  return out;
}

} // namespace

void addLossConverters(llvm::StringMap<Converter> &t) {
  t["SoftmaxCrossEntropyLoss"] = [](NodeContext &c) {
    return convertLoss(c, /*softmax=*/true);
  };
  t["NegativeLogLikelihoodLoss"] = [](NodeContext &c) {
    return convertLoss(c, /*softmax=*/false);
  };
}

} // namespace pcc::import
