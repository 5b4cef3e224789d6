//===- PCCShardingRules.cpp - each op's factors ---------------------------===//
//
// The factor rules (FactorRule.h) of the ops that declare
// ShardingRuleOpInterface beyond the pointwise default. A rule only ties
// dimensions; which factors are split, and when that divides, is decided by
// pcc/Sharding/ShardingRules.cpp for every op alike.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

using namespace mlir;
using namespace pcc;

FactorRule::FactorRule(Operation *op) {
  for (Value v : op->getOperands())
    operands.emplace_back(shapeOf(v).size());
  for (Value v : op->getResults())
    results.emplace_back(shapeOf(v).size());
}

FactorRule pcc::pointwiseFactorRule(Operation *op) {
  FactorRule r(op);
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  for (size_t d = 0; d < out.size(); ++d)
    r.results[0][d] = {r.add(), 1};
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    ArrayRef<int64_t> s = shapeOf(v);
    size_t off = out.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] == out[d + off])
        r.operands[i][d] = r.results[0][d + off];
  }
  return r;
}

FactorRule pcc::sameShapeFactorRule(Operation *op,
                                    llvm::function_ref<bool(int64_t)> whole) {
  FactorRule r(op);
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  for (size_t d = 0; d < out.size(); ++d) {
    if (whole(d))
      continue;
    DimRef ref{r.add(), 1};
    r.results[0][d] = ref;
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (d < shapeOf(v).size() && shapeOf(v)[d] == out[d])
        r.operands[i][d] = ref;
  }
  return r;
}

FactorRule MatMulOp::getFactorRule() {
  MatMulOp mm = *this;
  FactorRule r(mm);
  auto &l = r.operands[0], &rr = r.operands[1], &o = r.results[0];
  int64_t lr = l.size(), rk = rr.size(), orank = o.size();
  int k = r.add(/*isReduction=*/true);
  l[lr - 1] = {k, 1};
  rr[rk == 1 ? 0 : rk - 2] = {k, 1};
  if (lr >= 2) {
    int m = r.add();
    l[lr - 2] = {m, 1};
    o[orank - (rk >= 2 ? 2 : 1)] = {m, 1};
  }
  if (rk >= 2) {
    int n = r.add();
    rr[rk - 1] = {n, 1};
    o[orank - 1] = {n, 1};
  }
  // Batch dims, right-aligned and broadcast.
  int64_t batch = orank - (lr >= 2) - (rk >= 2);
  ArrayRef<int64_t> os = shapeOf(mm.getResult());
  for (int64_t d = 0; d < batch; ++d) {
    int f = r.add();
    o[d] = {f, 1};
    int64_t li = d - (batch - std::max<int64_t>(lr - 2, 0));
    int64_t ri = d - (batch - std::max<int64_t>(rk - 2, 0));
    if (li >= 0 && shapeOf(mm.getLhs())[li] == os[d])
      l[li] = {f, 1};
    if (ri >= 0 && shapeOf(mm.getRhs())[ri] == os[d])
      rr[ri] = {f, 1};
  }
  return r;
}

FactorRule GemmOp::getFactorRule() {
  GemmOp g = *this;
  FactorRule r(g);
  auto &a = r.operands[0], &b = r.operands[1], &y = r.results[0];
  size_t leading = a.size() - 1;
  bool ta = g.getTransA(), tb = g.getTransB();
  // A's leading dimensions are rows: each its own factor, kept in the
  // result or (transA) contracted with B's rows.
  SmallVector<int> rows;
  for (size_t d = 0; d < leading; ++d)
    rows.push_back(r.add(/*isReduction=*/ta));
  int last = r.add(), n = r.add();
  for (size_t d = 0; d < leading; ++d)
    a[d] = {rows[d], 1};
  a[leading] = {last, 1};
  if (ta) {
    // op(A) [last, rows], op(B) [rows, n].
    if (b.size() > 2 || !tb) {
      for (size_t d = 0; d + 1 < b.size(); ++d)
        b[d] = {rows[d], 1};
      b.back() = {n, 1};
    } else {
      b[0] = {n, 1};
      b[1] = {rows[0], 1};
    }
    y[0] = {last, 1};
    y[1] = {n, 1};
  } else {
    // op(A) [rows, last], op(B) [last, n].
    b[tb ? 1 : 0] = {last, 1};
    b[tb ? 0 : 1] = {n, 1};
    r.reduction[last] = true;
    for (size_t d = 0; d < leading; ++d)
      y[d] = {rows[d], 1};
    y.back() = {n, 1};
  }
  if (Value c = g.getC()) {
    ArrayRef<int64_t> cs = shapeOf(c), ys = shapeOf(g.getResult());
    size_t off = ys.size() - cs.size();
    for (size_t d = 0; d < cs.size(); ++d)
      if (cs[d] == ys[d + off])
        r.operands[2][d] = y[d + off];
    // C is added once, after the sum over a split K.
    r.sumBeforeLastOperand = true;
  }
  return r;
}

FactorRule ConvOp::getFactorRule() {
  ConvOp conv = *this;
  FactorRule r(conv);
  int n = r.add();
  r.operands[0][0] = r.results[0][0] = {n, 1};
  int64_t group = conv.getGroup();
  int64_t inChannels = shapeOf(conv.getInput())[1];
  if (group == 1) {
    int cout = r.add();
    r.operands[1][0] = r.results[0][1] = {cout, 1};
    if (conv.getBias())
      r.operands[2][0] = {cout, 1};
  } else if (group == inChannels) {
    // Depthwise: the input channels, the filters and the outputs split
    // together, each device convolving whole groups (the partitioner
    // divides the local op's group). Other grouped convolutions split the
    // batch only: a split could cut a group in two.
    int channels = r.add();
    r.operands[0][1] = r.operands[1][0] = r.results[0][1] = {channels, 1};
    if (conv.getBias())
      r.operands[2][0] = {channels, 1};
  }
  // The input channels are a sum; splitting them would add the bias once
  // per device, so only bias-free ungrouped convolutions split them.
  if (conv.getGroup() == 1 && !conv.getBias()) {
    int cin = r.add(/*isReduction=*/true);
    r.operands[0][1] = r.operands[1][1] = {cin, 1};
  }
  return r;
}

namespace {

/// Batch and channel dims of pooling / batch norm; `spatial` also ties the
/// remaining dims (elementwise in space).
FactorRule channelRule(Operation *op, bool spatial) {
  FactorRule r(op);
  size_t rank = r.results[0].size();
  for (size_t d = 0; d < rank; ++d) {
    if (d >= 2 && !spatial)
      continue;
    int f = r.add();
    r.operands[0][d] = r.results[0][d] = {f, 1};
    if (d == 1)
      for (size_t i = 1; i < r.operands.size(); ++i)
        r.operands[i][0] = {f, 1};
  }
  return r;
}

FactorRule reduceRule(Operation *op, ArrayRef<int64_t> axes, bool keepdims,
                      bool isSum) {
  FactorRule r(op);
  size_t rank = r.operands[0].size();
  for (size_t d = 0, o = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(axes, static_cast<int64_t>(d));
    if (reduced) {
      if (isSum)
        r.operands[0][d] = {r.add(/*isReduction=*/true), 1};
      if (keepdims)
        ++o;
      continue;
    }
    int f = r.add();
    r.operands[0][d] = r.results[0][o++] = {f, 1};
  }
  return r;
}

FactorRule gatherRule(Operation *op, int64_t axis) {
  FactorRule r(op);
  size_t rank = r.operands[0].size(), irank = r.operands[1].size();
  axis = normalizeAxis(axis, rank);
  for (size_t d = 0; d < rank; ++d) {
    if (static_cast<int64_t>(d) == axis) {
      // Gathering from a split table: each device looks up the rows it has
      // and the results are summed (vocabulary-parallel embedding).
      if (isa<GatherOp>(op))
        r.operands[0][d] = {r.add(/*isReduction=*/true), 1};
      continue;
    }
    int f = r.add();
    r.operands[0][d] = {f, 1};
    r.results[0][d < static_cast<size_t>(axis) ? d : d + irank - 1] = {f, 1};
  }
  for (size_t d = 0; d < irank; ++d) {
    int f = r.add();
    r.operands[1][d] = r.results[0][axis + d] = {f, 1};
  }
  return r;
}

/// Result dims as the input's, except `axis`.
FactorRule exceptAxisRule(Operation *op, int64_t axis) {
  int64_t rank = shapeOf(op->getResult(0)).size();
  axis = normalizeAxis(axis, rank);
  return sameShapeFactorRule(op, [&](int64_t d) { return d == axis; });
}

} // namespace

FactorRule MaxPoolOp::getFactorRule() {
  return channelRule(*this, /*spatial=*/false);
}
FactorRule AveragePoolOp::getFactorRule() {
  return channelRule(*this, /*spatial=*/false);
}
FactorRule GlobalAveragePoolOp::getFactorRule() {
  return channelRule(*this, /*spatial=*/false);
}
FactorRule BatchNormOp::getFactorRule() {
  return channelRule(*this, /*spatial=*/true);
}

FactorRule DropoutOp::getFactorRule() { return pointwiseFactorRule(*this); }

FactorRule SoftmaxOp::getFactorRule() {
  return exceptAxisRule(*this, getAxis());
}
FactorRule LogSoftmaxOp::getFactorRule() {
  return exceptAxisRule(*this, getAxis());
}
FactorRule ConcatOp::getFactorRule() {
  // Pieces of one size (a fused Q|K|V projection's gradient, split's
  // inverse): each device concatenates its block of every piece, which is
  // the result split into that many groups. Otherwise the axis stays whole.
  int64_t rank = shapeOf(getResult()).size();
  int64_t axis = normalizeAxis(getAxis(), rank);
  if (!llvm::all_equal(llvm::map_range(
          getOperands(), [&](Value v) { return shapeOf(v)[axis]; })))
    return exceptAxisRule(*this, axis);
  FactorRule r(*this);
  for (int64_t d = 0; d < rank; ++d) {
    int f = r.add();
    r.results[0][d] = {f, d == axis ? int64_t(getNumOperands()) : 1};
    for (auto &operand : r.operands)
      operand[d] = {f, 1};
  }
  return r;
}

FactorRule ArgMaxOp::getFactorRule() {
  int64_t rank = shapeOf(getInput()).size();
  return reduceRule(*this, {normalizeAxis(getAxis(), rank)}, getKeepdims(),
                    /*isSum=*/false);
}
FactorRule ArgMinOp::getFactorRule() {
  int64_t rank = shapeOf(getInput()).size();
  return reduceRule(*this, {normalizeAxis(getAxis(), rank)}, getKeepdims(),
                    /*isSum=*/false);
}

FactorRule TopKOp::getFactorRule() {
  // Every line is independent: any dimension but the axis splits, the
  // input and both results alike.
  FactorRule r(*this);
  for (size_t d = 0; d < r.operands[0].size(); ++d) {
    if (int64_t(d) == getAxis())
      continue;
    DimRef ref{r.add(), 1};
    r.operands[0][d] = r.results[0][d] = r.results[1][d] = ref;
  }
  return r;
}

FactorRule ReduceSumOp::getFactorRule() {
  return reduceRule(*this, getAxes(), getKeepdims(), /*isSum=*/true);
}
FactorRule ReduceMeanOp::getFactorRule() {
  // A sum scaled by the whole count: a split reduced axis leaves partial
  // sums (the partitioner divides each block's sum by the whole count).
  return reduceRule(*this, getAxes(), getKeepdims(), /*isSum=*/true);
}
FactorRule ReduceMaxOp::getFactorRule() {
  return reduceRule(*this, getAxes(), getKeepdims(), /*isSum=*/false);
}
FactorRule ReduceMinOp::getFactorRule() {
  return reduceRule(*this, getAxes(), getKeepdims(), /*isSum=*/false);
}
FactorRule ReduceProdOp::getFactorRule() {
  return reduceRule(*this, getAxes(), getKeepdims(), /*isSum=*/false);
}

/// Batch and head dimensions, query rows and value columns are factors;
/// the keys and the depth stay whole (the softmax needs a row's every
/// score). A ring split of the keys is the layout rule's own case
/// (pcc/Sharding/ShardingRules.cpp).
FactorRule AttentionOp::getFactorRule() {
  FactorRule r(*this);
  int64_t rank = shapeOf(getQuery()).size();
  auto &o = r.results[0];
  for (int64_t d = 0; d + 1 < rank; ++d) {
    o[d] = {r.add(), 1};
    r.operands[0][d] = o[d];
    if (d + 2 < rank)
      r.operands[1][d] = r.operands[2][d] = o[d];
  }
  o[rank - 1] = {r.add(), 1};
  r.operands[2][rank - 1] = o[rank - 1];
  // Masks, right-aligned to the scores [..., Sq, Sk]: a dimension of the
  // scores' size shares its factor; the key column stays whole.
  ArrayRef<int64_t> scores = shapeOf(getQuery()).drop_back();
  for (auto [i, v] : llvm::enumerate(getOperands())) {
    if (i < 3)
      continue;
    ArrayRef<int64_t> s = shapeOf(v);
    int64_t off = rank - int64_t(s.size());
    for (int64_t d = 0; d + 1 < int64_t(s.size()); ++d)
      if (s[d] == scores[d + off])
        r.operands[i][d] = o[d + off];
  }
  return r;
}

/// Dims before the normalised axis are rows; the normalised ones stay whole.
FactorRule LayerNormOp::getFactorRule() {
  int64_t axis = normalizeAxis(getAxis(), shapeOf(getInput()).size());
  FactorRule r(*this);
  for (int64_t d = 0; d < axis; ++d)
    r.operands[0][d] = r.results[0][d] = {r.add(), 1};
  return r;
}

FactorRule GatherOp::getFactorRule() { return gatherRule(*this, getAxis()); }

FactorRule ScatterNDOp::getFactorRule() {
  // Batch dimensions split everything alike; the dimensions a slice spans
  // split data, updates and the result; the addressed ones and the index
  // tuples stay whole.
  FactorRule r(*this);
  int64_t b = getBatchDims(), k = shapeOf(getIndices()).back();
  for (int64_t d = 0; d < b; ++d) {
    DimRef ref{r.add(), 1};
    r.operands[0][d] = r.operands[1][d] = r.operands[2][d] = r.results[0][d] =
        ref;
  }
  size_t tuples = r.operands[1].size() - 1;
  for (size_t d = b + k; d < r.results[0].size(); ++d) {
    DimRef ref{r.add(), 1};
    r.operands[0][d] = r.results[0][d] = r.operands[2][tuples + d - (b + k)] =
        ref;
  }
  return r;
}

FactorRule TriluOp::getFactorRule() {
  int64_t rank = shapeOf(getInput()).size();
  return sameShapeFactorRule(*this, [&](int64_t d) { return d >= rank - 2; });
}

FactorRule SplitOp::getFactorRule() {
  SplitOp sp = *this;
  FactorRule r(sp);
  size_t rank = r.operands[0].size();
  int64_t axis = normalizeAxis(sp.getAxis(), rank);
  ArrayRef<int64_t> sizes = sp.getSizes();
  bool equal = llvm::all_equal(sizes);
  for (size_t d = 0; d < rank; ++d) {
    if (static_cast<int64_t>(d) == axis && !equal)
      continue;
    int f = r.add();
    int64_t mult = static_cast<int64_t>(d) == axis ? sizes.size() : 1;
    r.operands[0][d] = {f, mult};
    for (auto &res : r.results)
      res[d] = {f, 1};
  }
  return r;
}
