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
#include "pcc/Sharding/ParallelPlan.h"
#include "pcc/Sharding/Reshard.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/WeightViews.h"

#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace pcc {
namespace {

/// How partial sums flow through an op without a reduction.
enum class Linearity {
  None,      // partial operands are summed first
  Unary,     // f(sum x) = sum f(x): neg, expand, split
  AllSame,   // add/sub/concat: every operand partial over the same axes
  OneOf,     // mul: exactly one operand partial
  Numerator, // div: the dividend partial
  Product,   // matmul, gemm without C: one factor partial, when the
             // product is no larger than it
};

bool isParameter(Value v) {
  Operation *def = v.getDefiningOp();
  return def && (isa<WeightOp, ConstantOp>(def) || weightBehind(v));
}

OpSharding applyRule(Operation *op, const FactorRule &rule, Linearity linear,
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
  // A partial sum passes only where summing after the op moves no more
  // bytes than before it: a broadcast (a mean's gradient, a scale by a
  // larger tensor) is summed small, before it.
  auto grows = [&](unsigned i) {
    return numElements(shapeOf(op->getResult(0))) >
           numElements(shapeOf(op->getOperand(i)));
  };
  // A product's partial factor may join the sums of its split reduction.
  if (numPartial && (partial.empty() || linear == Linearity::Product)) {
    ArrayRef<int64_t> p;
    SmallVector<int64_t, 2> common;
    switch (linear) {
    case Linearity::None:
      break;
    case Linearity::Unary:
      if (op->getNumOperands() == 1 && !grows(0))
        p = partialOf(0);
      break;
    case Linearity::AllSame:
      // The sums all operands share pass (a tied weight's gradient: the
      // head's partial over dp and tp plus the embedding's over dp sums tp
      // first, then joins the dp bucket); each sums the rest before.
      if (numPartial == op->getNumOperands()) {
        common.assign(partialOf(0).begin(), partialOf(0).end());
        for (unsigned i = 1; i < op->getNumOperands(); ++i)
          llvm::erase_if(common, [&](int64_t a) {
            return !llvm::is_contained(partialOf(i), a);
          });
        p = common;
      }
      break;
    case Linearity::OneOf:
      if (numPartial == 1)
        for (unsigned i = 0; i < op->getNumOperands(); ++i)
          if (!partialOf(i).empty() && !grows(i))
            p = partialOf(i);
      break;
    case Linearity::Numerator:
      if (numPartial == 1)
        p = partialOf(0);
      break;
    case Linearity::Product:
      for (unsigned i = 0; i < 2 && numPartial == 1; ++i)
        if (!partialOf(i).empty() && !grows(i))
          p = partialOf(i);
      break;
    }
    if (!p.empty() && free(p)) {
      partial.append(p.begin(), p.end());
      llvm::sort(partial); // a set: one bucket per set of axes
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

/// Ring attention (an op the strategy marked kRingAttentionAttr): keys and
/// values may keep the split of their sequence when it is over the axes
/// that split the queries' rows; the result is the queries' rows either way.
void allowRing(AttentionOp op, ArrayRef<TensorSharding> in, OpSharding &out) {
  if (!op->hasAttr(kRingAttentionAttr))
    return;
  size_t rows = shapeOf(op.getQuery()).size() - 2;
  const DimSharding &q = out.operands[0].dims[rows];
  if (!q.isSplit() || q.groups != 1)
    return;
  for (int i : {1, 2})
    if (in[i].dims[rows] != q)
      return;
  for (int i : {1, 2})
    out.operands[i].dims[rows] = q;
}

/// SUMMA (an op the strategy marked kSummaAttr): x [..., M, K] with K split
/// over one axis (the grid's columns) times a weight [K, N] (or [N, K] with
/// transB) split over another (rows) on K and over the columns on N: the
/// result is x's layout with N in place of K, whole sums.
std::optional<OpSharding> summaSharding(Operation *op,
                                        ArrayRef<TensorSharding> in,
                                        const Mesh &mesh) {
  if (!op->hasAttr(kSummaAttr) || in.size() < 2)
    return std::nullopt;
  bool transB = false;
  if (auto g = dyn_cast<GemmOp>(op)) {
    if (g.getTransA())
      return std::nullopt;
    transB = g.getTransB();
  }
  const TensorSharding &x = in[0], &w = in[1];
  if (w.dims.size() != 2 || x.dims.size() < 2 || !x.partial.empty() ||
      !w.partial.empty())
    return std::nullopt;
  const DimSharding &xk = x.dims.back();
  const DimSharding &wk = w.dims[transB ? 1 : 0], &wn = w.dims[transB ? 0 : 1];
  if (xk.axes.size() != 1 || wk.axes.size() != 1 || xk.axes != wn.axes ||
      xk.axes == wk.axes || xk.groups != 1 || wk.groups != 1 ||
      x.usesAxis(wk.axes[0]) == false)
    return std::nullopt;
  OpSharding out;
  out.operands.assign(in.begin(), in.begin() + 2);
  TensorSharding y = x;
  y.dims.back() = wn;
  for (unsigned i = 2; i < op->getNumOperands(); ++i) {
    // Gemm's C [N] (or broadcast): its block of the columns.
    TensorSharding c = TensorSharding::replicated(shapeOf(op->getOperand(i)).size());
    if (!c.dims.empty() && shapeOf(op->getOperand(i)).back() ==
                               shapeOf(op->getResult(0)).back())
      c.dims.back() = wn;
    out.operands.push_back(c);
  }
  out.results.push_back(y);
  if (!divides(shapeOf(op->getResult(0)), y, mesh))
    return std::nullopt;
  return out;
}

/// A layer norm whose last axis is split (an op the strategy marked
/// kSplitStatsAttr): the statistics are all-reduced over the split, so
/// input, scale, bias and result keep it.
std::optional<OpSharding> splitStatsSharding(LayerNormOp op,
                                             ArrayRef<TensorSharding> in) {
  int64_t rank = shapeOf(op.getInput()).size();
  if (!op->hasAttr(kSplitStatsAttr) ||
      normalizeAxis(op.getAxis(), rank) != rank - 1 || !in[0].partial.empty())
    return std::nullopt;
  const DimSharding &last = in[0].dims.back();
  if (!last.isSplit() || last.groups != 1)
    return std::nullopt;
  OpSharding out;
  out.operands.push_back(in[0]);
  for (unsigned i = 1; i < op->getNumOperands(); ++i) {
    TensorSharding p = TensorSharding::replicated(shapeOf(op->getOperand(i)).size());
    p.dims.back() = last;
    out.operands.push_back(p);
  }
  out.results.push_back(in[0]);
  return out;
}

/// A softmax whose axis is split: each device normalizes its block of every
/// line with the line's statistics gathered over the split (stat_axes), so
/// the result keeps the input's layout. Cheaper than gathering the input
/// whenever a line holds more than two numbers per device (a
/// vocabulary-parallel head's logits).
std::optional<OpSharding> splitAxisSoftmax(Operation *op,
                                           ArrayRef<TensorSharding> in) {
  const DimSharding *d = splitSoftmaxAxis(op, in[0]);
  if (!d || d->groups != 1 || !in[0].partial.empty())
    return std::nullopt;
  OpSharding out;
  out.operands.push_back(in[0]);
  out.results.push_back(in[0]);
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
  // A float conversion commutes with a sum up to rounding: a 16-bit
  // gradient becomes its f32 master's before it is summed (as data
  // parallelism sums mixed-precision gradients, in f32).
  if (auto c = dyn_cast<CastOp>(op))
    if (isa<FloatType>(c.getTo()) &&
        isa<FloatType>(typeOf(c.getInput()).getElementType()))
      return Linearity::Unary;
  // A product is linear in each factor (gemm's C would be added once per
  // device). A gradient's one-hot product then joins its weight's bucket.
  if (isa<MatMulOp>(op) || (isa<GemmOp>(op) && op->getNumOperands() == 2))
    return Linearity::Product;
  return Linearity::None;
}

} // namespace

const DimSharding *splitSoftmaxAxis(Operation *op, const TensorSharding &in) {
  auto axis = op->getAttrOfType<IntegerAttr>("axis");
  if (!isa<SoftmaxOp, LogSoftmaxOp>(op) || !axis ||
      axis.getInt() >= int64_t(in.dims.size()) ||
      !in.dims[axis.getInt()].isSplit())
    return nullptr;
  return &in.dims[axis.getInt()];
}

std::optional<std::pair<int64_t, int64_t>> summaAxes(Operation *op,
                                                     const OpSharding &s) {
  if (!isa<MatMulOp, GemmOp>(op) || s.operands.size() < 2 ||
      s.operands[1].dims.size() != 2)
    return std::nullopt;
  auto g = dyn_cast<GemmOp>(op);
  ArrayRef<DimSharding> x = s.operands[0].dims;
  const DimSharding &xk = x[g && g.getTransA() ? x.size() - 2 : x.size() - 1];
  const DimSharding &wk = s.operands[1].dims[g && g.getTransB() ? 1 : 0];
  if (!xk.isSplit() || !wk.isSplit() || xk.axes == wk.axes)
    return std::nullopt;
  return std::make_pair(wk.axes[0], xk.axes[0]);
}

bool broadcastsRows(Value c) {
  ArrayRef<int64_t> shape = shapeOf(c);
  return llvm::all_of(shape.drop_back(), [](int64_t d) { return d == 1; });
}

TensorSharding productBeforeBias(const OpSharding &s) {
  TensorSharding p = s.results[0];
  if (s.reduceBeforeBias.empty())
    return p;
  for (DimSharding &d : p.dims) {
    llvm::erase_if(d.axes, [&](int64_t a) {
      return llvm::is_contained(s.reduceBeforeBias, a);
    });
    if (!d.isSplit())
      d.groups = 1;
  }
  p.partial.assign(s.reduceBeforeBias.begin(), s.reduceBeforeBias.end());
  return p;
}

const DimSharding *cubeContraction(Operation *op, const OpSharding &s) {
  auto g = dyn_cast<GemmOp>(op);
  if (!isa<MatMulOp, GemmOp>(op) || (g && g.getTransA()) ||
      s.operands.size() < 2 || s.operands[1].dims.size() != 2 ||
      s.operands[0].dims.size() < 2 || !s.operands[0].partial.empty() ||
      s.results.empty())
    return nullptr;
  // C is added after the product is reduce-scattered onto the rows (not
  // all-reduced).
  TensorSharding product = productBeforeBias(s), summed = product;
  summed.partial.clear();
  if (g && g.getC() && summed == s.results[0])
    return nullptr;
  const DimSharding &xk = s.operands[0].dims.back();
  const DimSharding &wk = s.operands[1].dims[g && g.getTransB() ? 1 : 0];
  if (xk.axes.size() != 1 || xk != wk ||
      product.partial != ArrayRef<int64_t>(xk.axes))
    return nullptr;
  return &xk;
}

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
  // A stored value takes the layout its weight is stored in, whole sums
  // included (a gradient's partial sums are reduced here).
  if (auto assign = dyn_cast<AssignOp>(op)) {
    TensorSharding stored = shardingOf(assign.getTarget());
    stored.partial.clear();
    if (!divides(shapeOf(assign.getTarget()), stored, mesh))
      stored = TensorSharding::replicated(shapeOf(assign.getTarget()).size());
    OpSharding out;
    out.operands = {stored, stored};
    return out;
  }
  if (op->getNumResults() == 0 ||
      !llvm::all_of(op->getResultTypes(),
                    [](Type t) { return isa<RankedTensorType>(t); }))
    return replicatedSharding(op);

  if (auto r = dyn_cast<ReshapeOp>(op))
    return reshapeSharding(r, operands[0], mesh);
  if (auto t = dyn_cast<TransposeOp>(op))
    return transposeSharding(t, operands[0]);
  if (auto s = dyn_cast<SliceOp>(op))
    return sliceSharding(s, operands[0]);
  if (auto summa = summaSharding(op, operands, mesh))
    return *summa;
  if (auto ln = dyn_cast<LayerNormOp>(op))
    if (auto split = splitStatsSharding(ln, operands))
      return *split;
  if (auto split = splitAxisSoftmax(op, operands))
    return *split;
  auto ruled = dyn_cast<ShardingRuleOpInterface>(op);
  if (!ruled)
    return replicatedSharding(op);
  FactorRule rule = ruled.getFactorRule();
  OpSharding out = applyRule(op, rule, linearityOf(op), operands, mesh);
  // An operand added after the reduction (gemm's C) counts once: the
  // partial product is summed first.
  if (rule.sumBeforeLastOperand && !out.results[0].partial.empty()) {
    out.reduceBeforeBias = out.results[0].partial;
    out.results[0].partial.clear();
    // Reduce-scattered onto the rows (over one axis, C broadcast over
    // them: its layout stays as the rule gave it).
    // The rows: the first dimension but the last that is split.
    TensorSharding rows = out.results[0];
    auto lead = ArrayRef(rows.dims).drop_back();
    auto r = llvm::find_if(lead, [](const DimSharding &d) {
      return d.isSplit();
    });
    if (op->hasAttr(kScatterBeforeBiasAttr) &&
        out.reduceBeforeBias.size() == 1 && r != lead.end() &&
        r->groups == 1 && broadcastsRows(op->getOperands().back())) {
      rows.dims[r - lead.begin()].axes.push_back(out.reduceBeforeBias[0]);
      if (divides(shapeOf(op->getResult(0)), rows, mesh))
        out.results[0] = std::move(rows);
    }
  }
  if (auto attn = dyn_cast<AttentionOp>(op))
    allowRing(attn, operands, out);
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

int64_t fusedGroups(Value v) {
  int64_t cols = shapeOf(v).back();
  for (int hops = 0; hops < 3; ++hops) {
    int64_t rank = shapeOf(v).size();
    int64_t sliceSize = 0;
    bool slices = !v.use_empty();
    for (Operation *user : v.getUsers()) {
      if (auto sp = dyn_cast<SplitOp>(user)) {
        int64_t axis = normalizeAxis(sp.getAxis(), rank);
        if (axis == rank - 1 && llvm::all_equal(sp.getSizes()))
          return sp.getSizes().size();
      }
      // Slices of one size, each taking one aligned piece of the last axis.
      auto sl = dyn_cast<SliceOp>(user);
      if (!sl) {
        slices = false;
        continue;
      }
      int64_t start = sl.getStarts().back(), size = sl.getSizes().back();
      if (sl.getSteps().back() != 1 || (sliceSize && size != sliceSize) ||
          cols % size || start % size)
        slices = false;
      sliceSize = size;
    }
    if (slices && sliceSize && sliceSize < cols)
      return cols / sliceSize;
    if (v.use_empty())
      break;
    // One reader, or that reader and selective recompute's clones of it
    // (which keeps a product and remakes the ops after it).
    Operation *user = *v.getUsers().begin();
    if (!llvm::all_of(v.getUsers(), [&](Operation *u) {
          return u->getName() == user->getName() &&
                 u->getOperands() == user->getOperands() &&
                 u->getResultTypes() == user->getResultTypes();
        }))
      break;
    if (!isa<AddOp>(user) &&
        !(isa<ReshapeOp>(user) && shapeOf(user->getResult(0)).back() == cols))
      break;
    v = user->getResult(0);
  }
  return 1;
}

namespace {

/// Bytes one device sends and receives to run `op` as `s` on operands laid
/// out as `in`, its partial result summed over the axes `isTp` picks after,
/// and brought to `dest` where the result's destination is known (ring
/// collectives: an all-reduce moves twice its buffer). Partial sums over
/// other axes (dp: the gradient's bucket) cost every choice alike.
double movedBytes(Operation *op, ArrayRef<TensorSharding> in,
                  const OpSharding &s, const Mesh &mesh,
                  function_ref<bool(int64_t)> isTp,
                  const TensorSharding *dest, double operandShare) {
  double bytes = 0;
  auto add = [&](const TensorSharding &from, const TensorSharding &to,
                 Value v, double share) {
    bytes += stepsMovedBytes(planReshard(from, to),
                             double(tensorBytes(v)) * share, mesh);
  };
  for (auto [v, from, to] : llvm::zip(op->getOperands(), in, s.operands))
    add(from, to, v, operandShare);
  for (auto [v, r] : llvm::zip(op->getResults(), s.results)) {
    TensorSharding from = r, to = dest ? *dest : r;
    for (TensorSharding *t : {&from, &to})
      llvm::erase_if(t->partial, [&](int64_t a) { return !isTp(a); });
    to.partial.clear();
    add(from, to, v, 1.0);
  }
  return bytes;
}

} // namespace

SmallVector<TensorSharding>
cheaperGatheredOperands(Operation *op, ArrayRef<TensorSharding> in,
                        const Mesh &mesh, const TensorSharding *dest,
                        double operandShare) {
  SmallVector<TensorSharding> best(in.begin(), in.end());
  if (llvm::any_of(in,
                   [](const TensorSharding &t) { return !t.partial.empty(); }))
    return best;
  // The tensor axes that split features: 1D's, or a grid's (2.5D's depth
  // splits the batch: its weight gradients' sums are the bucket's).
  auto isTp = [&](int64_t a) { return splitsFeatures(mesh.axisNames[a]); };
  double bestBytes =
      movedBytes(op, in, inferOpSharding(op, in, mesh), mesh, isTp, dest,
                 operandShare);
  for (unsigned k = 0; k < in.size(); ++k)
    for (int64_t axis = 0; axis < int64_t(mesh.shape.size()); ++axis) {
      if (!isTp(axis))
        continue;
      SmallVector<TensorSharding> other(in.begin(), in.end());
      if (!other[k].gatherAxes([&](int64_t a) { return a == axis; }))
        continue;
      OpSharding s = inferOpSharding(op, other, mesh);
      // Moved from the operands as they are to what this choice reads.
      double bytes = movedBytes(op, in, s, mesh, isTp, dest, operandShare);
      if (bytes < bestBytes) {
        bestBytes = bytes;
        best = std::move(other);
      }
    }
  return best;
}

} // namespace pcc
