//===- ShardingRules.cpp - how each op computes on sharded tensors --------===//
//
// Invariants of every OpSharding returned here:
// - each required operand layout and result layout divides its tensor;
// - no grid axis appears twice in one layout;
// - running the op on local blocks laid out as `operands` yields local blocks
//   of the results laid out as `results` (partial sums included).
// Factors are split greedily from activations first (operands not defined by
// weights or constants), then weights, in operand order; a factor whose split
// would not divide some dimension stays whole.
//
//===----------------------------------------------------------------------===//

#include "pcc/Sharding/ShardingRules.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"

#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace pcc {
namespace {

/// A dimension's tie to a factor; a dimension of `mult` groups is tied with
/// groups multiplied by `mult` (split's input along its axis).
struct DimRef {
  int factor = -1;
  int64_t mult = 1;
};

/// How partial sums flow through an op without a reduction.
enum class Linearity {
  None,      // partial operands are summed first
  Unary,     // f(sum x) = sum f(x): neg, expand, split
  AllSame,   // add/sub/concat: every operand partial over the same axes
  OneOf,     // mul: exactly one operand partial
  Numerator, // div: the dividend partial
};

struct FactorRule {
  int numFactors = 0;
  SmallVector<SmallVector<DimRef>> operands, results;
  llvm::SmallBitVector reduction;
  Linearity linear = Linearity::None;

  explicit FactorRule(Operation *op) {
    for (Value v : op->getOperands())
      operands.emplace_back(shapeOf(v).size());
    for (Value v : op->getResults())
      results.emplace_back(shapeOf(v).size());
  }
  int add(bool isReduction = false) {
    reduction.resize(numFactors + 1);
    reduction[numFactors] = isReduction;
    return numFactors++;
  }
};

bool isParameter(Value v) {
  Operation *def = v.getDefiningOp();
  return def && isa<WeightOp, ConstantOp>(def);
}

OpSharding applyRule(Operation *op, const FactorRule &rule,
                     ArrayRef<TensorSharding> in, const Mesh &mesh) {
  int nf = rule.numFactors;
  SmallVector<DimSharding> factor(nf);
  SmallVector<bool> used(mesh.shape.size(), false);

  // Sizes of all dimensions tied to each factor, with their multipliers.
  SmallVector<SmallVector<std::pair<int64_t, int64_t>>> tied(nf);
  auto collect = [&](ValueRange values,
                     ArrayRef<SmallVector<DimRef>> refs) {
    for (auto [v, dims] : llvm::zip(values, refs))
      for (auto [size, ref] : llvm::zip(shapeOf(v), dims))
        if (ref.factor >= 0)
          tied[ref.factor].push_back({size, ref.mult});
  };
  collect(op->getOperands(), rule.operands);
  collect(op->getResults(), rule.results);

  auto trySplit = [&](int f, const DimSharding &d, int64_t mult) {
    if (factor[f].isSplit() || d.groups % mult)
      return;
    int64_t groups = d.groups / mult;
    for (int64_t a : d.axes)
      if (used[a])
        return;
    int64_t n = mesh.size(d.axes);
    for (auto [size, m] : tied[f]) {
      int64_t g = groups * m;
      if (size % g || (size / g) % n || size / g < n)
        return;
    }
    factor[f].axes = d.axes;
    factor[f].groups = groups;
    for (int64_t a : d.axes)
      used[a] = true;
  };
  for (int pass = 0; pass < 2; ++pass)
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      if (isParameter(v) != (pass == 1) || i >= in.size())
        continue;
      for (auto [d, ref] : llvm::zip(in[i].dims, rule.operands[i]))
        if (ref.factor >= 0 && d.isSplit())
          trySplit(ref.factor, d, ref.mult);
    }

  SmallVector<int64_t, 2> partial;
  for (int f = 0; f < nf; ++f)
    if (rule.reduction[f])
      llvm::append_range(partial, factor[f].axes);

  // Partial sums passed through by linear ops.
  SmallVector<SmallVector<int64_t, 2>> inPartial(op->getNumOperands());
  auto free = [&](ArrayRef<int64_t> axes) {
    return llvm::none_of(axes, [&](int64_t a) { return used[a]; });
  };
  auto partialOf = [&](unsigned i) -> ArrayRef<int64_t> {
    return i < in.size() ? ArrayRef<int64_t>(in[i].partial)
                         : ArrayRef<int64_t>();
  };
  unsigned numPartial = 0;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    numPartial += !partialOf(i).empty();
  if (numPartial && partial.empty()) {
    ArrayRef<int64_t> p;
    switch (rule.linear) {
    case Linearity::None:
      break;
    case Linearity::Unary:
      if (op->getNumOperands() == 1)
        p = partialOf(0);
      break;
    case Linearity::AllSame:
      if (numPartial == op->getNumOperands() &&
          llvm::all_of(llvm::seq(0u, op->getNumOperands()), [&](unsigned i) {
            return partialOf(i) == partialOf(0);
          }))
        p = partialOf(0);
      break;
    case Linearity::OneOf:
      if (numPartial == 1)
        for (unsigned i = 0; i < op->getNumOperands(); ++i)
          if (!partialOf(i).empty())
            p = partialOf(i);
      break;
    case Linearity::Numerator:
      if (numPartial == 1)
        p = partialOf(0);
      break;
    }
    if (!p.empty() && free(p)) {
      partial.assign(p.begin(), p.end());
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (!partialOf(i).empty())
          inPartial[i].assign(p.begin(), p.end());
    }
  }

  auto layout = [&](ArrayRef<DimRef> refs) {
    TensorSharding s = TensorSharding::replicated(refs.size());
    for (auto [d, ref] : llvm::zip(s.dims, refs))
      if (ref.factor >= 0 && factor[ref.factor].isSplit()) {
        d.axes = factor[ref.factor].axes;
        d.groups = factor[ref.factor].groups * ref.mult;
      }
    return s;
  };
  OpSharding out;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    out.operands.push_back(layout(rule.operands[i]));
    out.operands.back().partial = inPartial[i];
  }
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    out.results.push_back(layout(rule.results[i]));
    out.results.back().partial = partial;
  }
  return out;
}

/// Ties operand and result dims of a broadcasting elementwise op
/// (right-aligned; size-1 dims that broadcast stay whole).
FactorRule elementwiseRule(Operation *op) {
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

/// Result dim `d` keeps input dim `d` except for `whole` dims.
FactorRule sameShapeRule(Operation *op, llvm::function_ref<bool(int64_t)> whole) {
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

FactorRule matmulRule(MatMulOp mm) {
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

FactorRule gemmRule(GemmOp g) {
  FactorRule r(g);
  int m = r.add(), n = r.add(), k = r.add(/*isReduction=*/true);
  auto &a = r.operands[0], &b = r.operands[1];
  a[g.getTransA() ? 1 : 0] = {m, 1};
  a[g.getTransA() ? 0 : 1] = {k, 1};
  b[g.getTransB() ? 1 : 0] = {k, 1};
  b[g.getTransB() ? 0 : 1] = {n, 1};
  r.results[0][0] = {m, 1};
  r.results[0][1] = {n, 1};
  if (Value c = g.getC()) {
    ArrayRef<int64_t> cs = shapeOf(c), ys = shapeOf(g.getResult());
    size_t off = 2 - cs.size();
    for (size_t d = 0; d < cs.size(); ++d)
      if (cs[d] == ys[d + off])
        r.operands[2][d] = r.results[0][d + off];
  }
  return r;
}

FactorRule convRule(ConvOp conv) {
  FactorRule r(conv);
  int n = r.add(), cout = r.add();
  r.operands[0][0] = r.results[0][0] = {n, 1};
  r.operands[1][0] = r.results[0][1] = {cout, 1};
  if (conv.getBias())
    r.operands[2][0] = {cout, 1};
  // The input channels are a sum; splitting them would add the bias once
  // per device, so only bias-free ungrouped convolutions split them.
  if (conv.getGroup() == 1 && !conv.getBias()) {
    int cin = r.add(/*isReduction=*/true);
    r.operands[0][1] = r.operands[1][1] = {cin, 1};
  }
  return r;
}

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

FactorRule splitRule(SplitOp sp) {
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

/// Reshape maps each split input dimension to the output dimension that has
/// the same elements before it in row-major order (counting the groups of the
/// dimension itself), so the devices' blocks are the same bytes before and
/// after. Splits with no such output dimension are gathered first.
OpSharding reshapeSharding(ReshapeOp op, const TensorSharding &in,
                           const Mesh &mesh) {
  ArrayRef<int64_t> is = shapeOf(op.getInput()), os = shapeOf(op.getResult());
  OpSharding out;
  TensorSharding req = TensorSharding::replicated(is.size());
  TensorSharding res = TensorSharding::replicated(os.size());
  req.partial = res.partial = in.partial;
  int64_t prefix = 1;
  for (size_t d = 0; d < is.size(); prefix *= is[d], ++d) {
    const DimSharding &ds = in.dims[d];
    if (!ds.isSplit())
      continue;
    int64_t n = mesh.size(ds.axes);
    int64_t before = prefix * ds.groups, virt = is[d] / ds.groups;
    int64_t oprefix = 1;
    for (size_t e = 0; e < os.size(); oprefix *= os[e], ++e) {
      if (before % oprefix || before / oprefix >= os[e])
        continue;
      int64_t g = before / oprefix;
      if (os[e] % g || (os[e] / g) % n || virt % n)
        break;
      if (res.dims[e].isSplit())
        break;
      req.dims[d] = ds;
      res.dims[e].axes = ds.axes;
      res.dims[e].groups = g;
      break;
    }
  }
  out.operands.push_back(req);
  out.results.push_back(res);
  return out;
}

OpSharding transposeSharding(TransposeOp op, const TensorSharding &in) {
  OpSharding out;
  out.operands.push_back(in);
  TensorSharding res;
  for (int64_t p : op.getPerm())
    res.dims.push_back(in.dims[p]);
  res.partial = in.partial;
  out.results.push_back(res);
  return out;
}

/// Whole dims keep their layout; a sliced dim keeps its split when the slice
/// takes whole groups of it (one of the Q, K, V parts of a fused projection:
/// each device takes its block of that part).
OpSharding sliceSharding(SliceOp op, const TensorSharding &in) {
  ArrayRef<int64_t> shape = shapeOf(op.getInput());
  OpSharding out;
  TensorSharding req = in, res = in;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t start = op.getStarts()[d], size = op.getSizes()[d];
    if (start == 0 && size == shape[d] && op.getSteps()[d] == 1)
      continue;
    const DimSharding &ds = in.dims[d];
    int64_t group = shape[d] / ds.groups;
    if (ds.isSplit() && op.getSteps()[d] == 1 && start % group == 0 &&
        size % group == 0) {
      res.dims[d].groups = size / group;
      continue;
    }
    req.dims[d] = DimSharding();
    res.dims[d] = DimSharding();
  }
  out.operands.push_back(req);
  out.results.push_back(res);
  return out;
}

OpSharding replicatedSharding(Operation *op) {
  OpSharding out;
  for (Value v : op->getOperands())
    out.operands.push_back(TensorSharding::replicated(shapeOf(v).size()));
  for (Value v : op->getResults())
    out.results.push_back(TensorSharding::replicated(shapeOf(v).size()));
  return out;
}

/// How partial sums pass through `op`, as its ODS traits declare.
Linearity linearityOf(Operation *op) {
  if (op->hasTrait<pcc::OpTrait::LinearUnary>())
    return Linearity::Unary;
  if (op->hasTrait<pcc::OpTrait::LinearAllSame>())
    return Linearity::AllSame;
  if (op->hasTrait<pcc::OpTrait::LinearInOne>())
    return Linearity::OneOf;
  if (op->hasTrait<pcc::OpTrait::LinearInNumerator>())
    return Linearity::Numerator;
  return Linearity::None;
}

} // namespace

OpSharding inferOpSharding(Operation *op, ArrayRef<TensorSharding> in,
                           const Mesh &mesh) {
  // Layouts that do not fit their operand (hand-written IR) count as whole.
  SmallVector<TensorSharding> operands;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    ArrayRef<int64_t> shape = shapeOf(v);
    if (i < in.size() && divides(shape, in[i], mesh))
      operands.push_back(in[i]);
    else
      operands.push_back(TensorSharding::replicated(shape.size()));
  }
  if (op->getNumResults() == 0 ||
      !llvm::all_of(op->getResultTypes(),
                    [](Type t) { return isa<RankedTensorType>(t); }))
    return replicatedSharding(op);

  if (auto r = dyn_cast<ReshapeOp>(op))
    return reshapeSharding(r, operands[0], mesh);
  if (auto t = dyn_cast<TransposeOp>(op))
    return transposeSharding(t, operands[0]);

  std::optional<FactorRule> rule;
  if (op->hasTrait<pcc::OpTrait::Pointwise>()) {
    rule = elementwiseRule(op);
  } else if (auto mm = dyn_cast<MatMulOp>(op)) {
    rule = matmulRule(mm);
  } else if (auto g = dyn_cast<GemmOp>(op)) {
    rule = gemmRule(g);
  } else if (auto conv = dyn_cast<ConvOp>(op)) {
    rule = convRule(conv);
  } else if (isa<MaxPoolOp, AveragePoolOp, GlobalAveragePoolOp>(op)) {
    rule = channelRule(op, /*spatial=*/false);
  } else if (isa<BatchNormOp>(op)) {
    rule = channelRule(op, /*spatial=*/true);
  } else if (isa<SoftmaxOp, LogSoftmaxOp, ArgMaxOp, ArgMinOp>(op)) {
    int64_t rank = shapeOf(op->getOperand(0)).size();
    int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
    axis = normalizeAxis(axis, rank);
    if (isa<ArgMaxOp, ArgMinOp>(op)) {
      bool keep = op->getAttrOfType<BoolAttr>("keepdims").getValue();
      rule = reduceRule(op, {axis}, keep, /*isSum=*/false);
    } else {
      rule = sameShapeRule(op, [&](int64_t d) { return d == axis; });
    }
  } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
    int64_t rank = shapeOf(ln.getInput()).size();
    int64_t axis = normalizeAxis(ln.getAxis(), rank);
    FactorRule r(op);
    for (int64_t d = 0; d < axis; ++d)
      r.operands[0][d] = r.results[0][d] = {r.add(), 1};
    rule = r;
  } else if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
                 ReduceProdOp>(op)) {
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    bool keep = op->getAttrOfType<BoolAttr>("keepdims").getValue();
    rule = reduceRule(op, axes, keep, isa<ReduceSumOp>(op));
  } else if (auto g = dyn_cast<GatherOp>(op)) {
    rule = gatherRule(op, g.getAxis());
  } else if (auto sl = dyn_cast<SliceOp>(op)) {
    return sliceSharding(sl, operands[0]);
  } else if (auto c = dyn_cast<ConcatOp>(op)) {
    int64_t rank = shapeOf(c.getResult()).size();
    int64_t axis = normalizeAxis(c.getAxis(), rank);
    rule = sameShapeRule(op, [&](int64_t d) { return d == axis; });
  } else if (auto sp = dyn_cast<SplitOp>(op)) {
    rule = splitRule(sp);
  } else if (isa<TriluOp>(op)) {
    int64_t rank = shapeOf(op->getOperand(0)).size();
    rule = sameShapeRule(op, [&](int64_t d) { return d >= rank - 2; });
  }
  if (!rule)
    return replicatedSharding(op);
  rule->linear = linearityOf(op);

  OpSharding out = applyRule(op, *rule, operands, mesh);
  // A gemm adds C after the sum over a split K, so that C counts once.
  if (auto g = dyn_cast<GemmOp>(op); g && g.getC() &&
                                     !out.results[0].partial.empty()) {
    out.reduceBeforeBias = out.results[0].partial;
    out.results[0].partial.clear();
  }
  return out;
}

OpSharding annotatedOpSharding(Operation *op, const Mesh &mesh) {
  SmallVector<TensorSharding> in;
  if (auto pinned = operandShardings(op, kOperandShardingAttr))
    in = std::move(*pinned);
  else
    for (Value v : op->getOperands())
      in.push_back(shardingOf(v));
  return inferOpSharding(op, in, mesh);
}

} // namespace pcc
