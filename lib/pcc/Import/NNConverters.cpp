//===- NNConverters.cpp - ONNX contractions, convolutions, norms to pcc ---===//

#include "ExprBuilder.h"
#include "VolumeConverters.h"

using namespace mlir;

namespace pcc::import {
namespace {

Results convertMatMul(NodeContext &c) {
  if (failed(c.requireInputs(2)))
    return failure();
  return one(c.build1<MatMulOp>(ValueRange{c.input(0), c.input(1)}));
}

Results convertGemm(NodeContext &c) {
  if (failed(c.requireInputs(2)))
    return failure();
  SmallVector<Value> operands{c.input(0), c.input(1)};
  if (c.input(2))
    operands.push_back(c.input(2));
  return one(c.build1<GemmOp>(
      operands, {c.f32("alpha", c.floatAttr("alpha", 1.0f)),
                 c.f32("beta", c.floatAttr("beta", 1.0f)),
                 c.boolean("transA", c.intAttr("transA", 0) != 0),
                 c.boolean("transB", c.intAttr("transB", 0) != 0)}));
}

FailureOr<Window> readWindow(NodeContext &c, ArrayRef<int64_t> inputShape,
                             std::optional<SmallVector<int64_t>> kernel) {
  size_t spatial = inputShape.size() - 2;
  Window w;
  if (!kernel)
    return c.error() << "'" << c.node.op_type() << "' needs kernel_shape";
  w.kernel = *kernel;
  w.strides = c.intsAttr("strides").value_or(SmallVector<int64_t>(spatial, 1));
  w.dilations =
      c.intsAttr("dilations").value_or(SmallVector<int64_t>(spatial, 1));
  w.pads = c.intsAttr("pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
  if (w.kernel.size() != spatial || w.strides.size() != spatial ||
      w.dilations.size() != spatial || w.pads.size() != 2 * spatial)
    return c.error() << "'" << c.node.op_type()
                     << "' window attributes do not match " << spatial
                     << " spatial axes";
  for (int64_t v : llvm::concat<int64_t>(w.kernel, w.strides, w.dilations))
    if (v <= 0)
      return c.error() << "kernel, stride and dilation must be positive";
  std::string autoPad = c.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < spatial; ++i) {
      int64_t in = inputShape[i + 2];
      int64_t out = (in + w.strides[i] - 1) / w.strides[i];
      int64_t span = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + span - in);
      int64_t small = total / 2;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      w.pads[i + spatial] = total - w.pads[i];
    }
  } else if (autoPad != "NOTSET") {
    return c.error() << "unknown auto_pad '" << autoPad << "'";
  }
  return w;
}

Results convertConv(NodeContext &c) {
  if (failed(c.requireInputs(2)))
    return failure();
  auto x = c.inputType(0), f = c.inputType(1);
  if (x.getRank() < 3 || f.getRank() != x.getRank())
    return c.error() << "Conv needs input and filter of equal rank >= 3";
  auto kernel = c.intsAttr("kernel_shape")
                    .value_or(SmallVector<int64_t>(f.getShape().drop_front(2)));
  auto w = readWindow(c, x.getShape(), kernel);
  if (failed(w))
    return failure();
  int64_t group = c.intAttr("group", 1);
  if (x.getRank() == 5)
    return convertConv3d(c, *w, group);
  SmallVector<Value> operands{c.input(0), c.input(1)};
  if (c.input(2))
    operands.push_back(c.input(2));
  return one(c.build1<ConvOp>(
      operands, {c.i64s("strides", w->strides), c.i64s("pads", w->pads),
                 c.i64s("dilations", w->dilations), c.i64("group", group)}));
}

template <typename OpTy>
Results convertPool(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  auto x = c.inputType(0);
  if (x.getRank() < 3)
    return c.error() << "'" << c.node.op_type() << "' needs rank >= 3";
  auto w = readWindow(c, x.getShape(), c.intsAttr("kernel_shape"));
  if (failed(w))
    return failure();
  if (c.intAttr("storage_order", 0) != 0)
    return c.error() << "MaxPool storage_order 1 is not supported";
  bool ceil = c.intAttr("ceil_mode", 0) != 0;
  bool countPad = c.intAttr("count_include_pad", 0) != 0;
  if (x.getRank() == 5) {
    if (ceil)
      return c.error() << "3-D " << c.node.op_type()
                       << " with ceil_mode is not supported";
    auto pooled =
        convertPool3d(c, *w, std::is_same_v<OpTy, MaxPoolOp>, countPad);
    if (failed(pooled))
      return failure();
    // MaxPool's optional Indices output is not produced.
    return SmallVector<Value>{(*pooled)[0], Value()};
  }
  auto result = c.build1<OpTy>(
      c.input(0),
      {c.i64s("kernel_shape", w->kernel), c.i64s("strides", w->strides),
       c.i64s("pads", w->pads), c.i64s("dilations", w->dilations),
       c.boolean("ceil_mode", ceil), c.boolean("count_include_pad", countPad)});
  if (failed(result))
    return failure();
  // MaxPool's optional Indices output is not produced.
  return SmallVector<Value>{*result, Value()};
}

Results convertGlobalAveragePool(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  return one(c.build1<GlobalAveragePoolOp>(c.input(0)));
}

/// Before opset 13, Softmax flattens the input to 2-D at `axis` (default 1)
/// and normalizes each row; opset 13 normalizes along `axis` (default -1).
template <typename OpTy>
Results convertSoftmax(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  auto x = c.inputType(0);
  int64_t rank = x.getRank();
  if (rank == 0)
    return c.error() << "Softmax needs rank >= 1";
  auto axis = normalizeAxis(c, c.intAttr("axis", c.opset >= 13 ? -1 : 1), rank);
  if (failed(axis))
    return failure();
  if (c.opset >= 13 || *axis == rank - 1)
    return one(c.build1<OpTy>(c.input(0), {c.i64("axis", *axis)}));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < *axis ? outer : inner) *= x.getDimSize(d);
  auto flat = c.build1<ReshapeOp>(c.input(0), {c.i64s("shape", {outer, inner})});
  if (failed(flat))
    return failure();
  auto soft = c.build1<OpTy>(*flat, {c.i64("axis", 1)});
  if (failed(soft))
    return failure();
  return one(c.build1<ReshapeOp>(*soft, {c.i64s("shape", x.getShape())}));
}

Results convertLayerNorm(NodeContext &c) {
  if (failed(c.requireInputs(2)))
    return failure();
  auto axis = normalizeAxis(c, c.intAttr("axis", -1), c.inputType(0).getRank());
  if (failed(axis))
    return failure();
  SmallVector<Value> operands{c.input(0), c.input(1)};
  if (c.input(2))
    operands.push_back(c.input(2));
  auto result = c.build1<LayerNormOp>(
      operands, {c.i64("axis", *axis),
                 c.f32("epsilon", c.floatAttr("epsilon", 1e-5f))});
  if (failed(result))
    return failure();
  // The optional Mean and InvStdDev outputs are not produced.
  return SmallVector<Value>{*result, Value(), Value()};
}

/// BatchNormalization with training_mode: the batch's own statistics, as
/// formulas over pcc ops (so training differentiates them and partitioning
/// sums them over a split batch: SyncBatchNorm's statistics, the single
/// device's). Outputs 1 and 2 are the running statistics' next values; a
/// training import stores them into the initializers they update.
Results batchNormTraining(NodeContext &c) {
  Value x = c.input(0);
  RankedTensorType xt = c.inputType(0);
  int64_t rank = xt.getRank(), channels = xt.getDimSize(1);
  if (rank < 2)
    return c.error() << "BatchNormalization needs an input of shape [N, C, "
                        "...], got "
                     << xt;
  SmallVector<int64_t> axes{0}, perChannel(rank, 1);
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  perChannel[1] = channels;
  int64_t count = xt.getNumElements() / channels;
  Expr e(c);
  e.elem = xt.getElementType();
  auto mean = [&](Value v) {
    return e.take(c.build1<ReduceMeanOp>(
        v, {c.i64s("axes", axes), c.boolean("keepdims", true)}));
  };
  auto reshape = [&](Value v, ArrayRef<int64_t> shape) {
    return e.take(c.build1<ReshapeOp>(v, {c.i64s("shape", shape)}));
  };
  Value mu = mean(x);
  Value centered = e.op<SubOp>(x, mu);
  // The biased variance normalizes, as in ONNX and PyTorch.
  Value var = mean(e.op<MulOp>(centered, centered));
  double eps = c.floatAttr("epsilon", 1e-5f);
  Value inv = e.op<DivOp>(e.k(1.0), e.op<SqrtOp>(e.op<AddOp>(var, e.k(eps))));
  Value y = e.op<AddOp>(
      e.op<MulOp>(e.op<MulOp>(centered, inv), reshape(c.input(1), perChannel)),
      reshape(c.input(2), perChannel));
  // running = momentum running + (1 - momentum) batch. The node's outputs
  // are ONNX's (the biased variance); the buffers a training step stores
  // keep the unbiased one (count / (count - 1)), as PyTorch, TensorFlow and
  // ONNX Runtime update them: ONNX defines no update, the exporter does.
  double momentum = c.floatAttr("momentum", 0.9f);
  double bessel = count > 1 ? double(count) / double(count - 1) : 1.0;
  auto running = [&](Value old, Value batch, double scale) {
    return e.op<AddOp>(
        e.op<MulOp>(old, e.k(momentum)),
        e.op<MulOp>(reshape(batch, {channels}), e.k((1 - momentum) * scale)));
  };
  Value runningMean = running(c.input(3), mu, 1.0);
  Value runningVar = running(c.input(4), var, 1.0);
  Value storedVar = c.training ? running(c.input(4), var, bessel) : Value();
  if (e.anyFailed())
    return failure();
  if (c.training)
    for (auto [old, next] :
         {std::pair{c.input(3), runningMean}, std::pair{c.input(4), storedVar}})
      if (old.getDefiningOp<WeightOp>())
        AssignOp::create(c.builder, c.loc, old, next);
  return SmallVector<Value>{y, runningMean, runningVar};
}

Results convertBatchNorm(NodeContext &c) {
  if (failed(c.requireInputs(5)))
    return failure();
  if (c.intAttr("training_mode", 0) != 0)
    return batchNormTraining(c);
  auto result = c.build1<BatchNormOp>(
      ValueRange{c.input(0), c.input(1), c.input(2), c.input(3), c.input(4)},
      {c.f32("epsilon", c.floatAttr("epsilon", 1e-5f))});
  if (failed(result))
    return failure();
  return SmallVector<Value>{*result, Value(), Value(), Value(), Value()};
}

/// ONNX reductions take axes as an attribute until ReduceSum moved them to
/// an input in opset 13 (the others in opset 18). No axes means all axes,
/// unless noop_with_empty_axes.
template <typename OpTy>
FailureOr<Value> reduceValue(NodeContext &c, Value input, int axesInputSince) {
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  auto axesOr = c.axesOperand(axesInputSince, "reduction axes");
  if (failed(axesOr))
    return failure();
  std::optional<SmallVector<int64_t>> axes = *axesOr;
  SmallVector<int64_t> normalized;
  if (!axes || axes->empty()) {
    if (c.intAttr("noop_with_empty_axes", 0))
      return input;
    for (int64_t d = 0; d < rank; ++d)
      normalized.push_back(d);
  } else {
    for (int64_t a : *axes) {
      auto axis = normalizeAxis(c, a, rank);
      if (failed(axis))
        return failure();
      normalized.push_back(*axis);
    }
    llvm::sort(normalized);
    normalized.erase(std::unique(normalized.begin(), normalized.end()),
                     normalized.end());
  }
  return c.build1<OpTy>(
      input, {c.i64s("axes", normalized),
              c.boolean("keepdims", c.intAttr("keepdims", 1) != 0)});
}

template <typename OpTy>
Converter reduce(int axesInputSince) {
  return [axesInputSince](NodeContext &c) -> Results {
    if (failed(c.requireInputs(1)))
      return failure();
    return one(reduceValue<OpTy>(c, c.input(0), axesInputSince));
  };
}

/// ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum and ReduceLogSumExp as
/// an elementwise pre-step, a sum, and an elementwise post-step (which the
/// code generator fuses back into loops).
template <typename PreOp, typename PostOp, bool square>
Converter reduceComposite() {
  return [](NodeContext &c) -> Results {
    if (failed(c.requireInputs(1)))
      return failure();
    Value x = c.input(0);
    FailureOr<Value> pre = x;
    if constexpr (square)
      pre = c.build1<MulOp>(ValueRange{x, x});
    else if constexpr (!std::is_same_v<PreOp, void>)
      pre = c.build1<PreOp>(x);
    if (failed(pre))
      return failure();
    auto sum = reduceValue<ReduceSumOp>(c, *pre, 18);
    if (failed(sum) || std::is_same_v<PostOp, void>)
      return one(sum);
    if constexpr (!std::is_same_v<PostOp, void>)
      return one(c.build1<PostOp>(*sum));
    return failure();
  };
}

template <typename OpTy>
Results convertArgReduce(NodeContext &c) {
  if (failed(c.requireInputs(1)))
    return failure();
  if (c.intAttr("select_last_index", 0) != 0)
    return c.error() << "select_last_index is not supported";
  auto axis = normalizeAxis(c, c.intAttr("axis", 0), c.inputType(0).getRank());
  if (failed(axis))
    return failure();
  return one(c.build1<OpTy>(
      c.input(0), {c.i64("axis", *axis),
                   c.boolean("keepdims", c.intAttr("keepdims", 1) != 0)}));
}

/// TopK: k an attribute before opset 10, a constant input since.
Results convertTopK(NodeContext &c) {
  if (failed(c.requireInputs(c.opset >= 10 ? 2 : 1)))
    return failure();
  int64_t k = c.intAttr("k", -1);
  if (c.opset >= 10) {
    auto K = c.constInts(1, "TopK's K");
    if (failed(K))
      return failure();
    if (K->size() != 1)
      return c.error() << "TopK's K must hold one value, not " << K->size();
    k = (*K)[0];
  }
  auto axis = normalizeAxis(c, c.intAttr("axis", -1), c.inputType(0).getRank());
  if (failed(axis))
    return failure();
  return c.build<TopKOp>(c.input(0),
                         {c.i64("k", k), c.i64("axis", *axis),
                          c.boolean("largest", c.intAttr("largest", 1) != 0)});
}

} // namespace

void addNNConverters(llvm::StringMap<Converter> &t) {
  t["MatMul"] = convertMatMul;
  t["Gemm"] = convertGemm;
  t["Conv"] = convertConv;
  t["MaxPool"] = convertPool<MaxPoolOp>;
  t["AveragePool"] = convertPool<AveragePoolOp>;
  t["GlobalAveragePool"] = convertGlobalAveragePool;
  t["Softmax"] = convertSoftmax<SoftmaxOp>;
  t["LogSoftmax"] = convertSoftmax<LogSoftmaxOp>;
  t["LayerNormalization"] = convertLayerNorm;
  t["BatchNormalization"] = convertBatchNorm;
  t["ReduceSum"] = reduce<ReduceSumOp>(13);
  t["ReduceMean"] = reduce<ReduceMeanOp>(18);
  t["ReduceMax"] = reduce<ReduceMaxOp>(18);
  t["ReduceMin"] = reduce<ReduceMinOp>(18);
  t["ReduceProd"] = reduce<ReduceProdOp>(18);
  t["ReduceSumSquare"] = reduceComposite<void, void, true>();
  t["ReduceL1"] = reduceComposite<AbsOp, void, false>();
  t["ReduceL2"] = reduceComposite<void, SqrtOp, true>();
  t["ReduceLogSum"] = reduceComposite<void, LogOp, false>();
  t["ReduceLogSumExp"] = reduceComposite<ExpOp, LogOp, false>();
  t["ArgMax"] = convertArgReduce<ArgMaxOp>;
  t["ArgMin"] = convertArgReduce<ArgMinOp>;
  t["TopK"] = convertTopK;
}

} // namespace pcc::import
