//===- SplitMergedHeads.cpp - keep batch and heads apart ------------------===//
//
// nn.MultiheadAttention (and so nn.TransformerEncoderLayer, torchvision's
// ViT) views its [S, B, E] projections as [S, B*H, D]: one axis holds the
// batch and the heads. A batch split over dp and a head split over tp then
// give each device a strided set of that axis, which no layout of it
// describes, so the partitioner gathered the heads before every attention.
// Splitting the merged axis back into [B, H] keeps both splits. Hugging
// Face's Conv1D views [B, S, d] as [B*S, d] rows of a GEMM the same way: a
// GEMM reads rows in place, so [B, S] stays two axes (a sequence split
// through the MLP, as other exports of the same model keep it).
//
// Invariants: row-major element order never changes (an axis becomes two
// adjacent ones), so every reshape that reads the split value stays valid;
// a group of connected values is rewritten only when every op that reads
// one of them is one this pass knows (transposes, pointwise ops whose other
// operands do not reach the axis, attention and matmuls whose batch axes
// all split alike, softmaxes over another axis, GEMMs reading it as rows,
// reshapes), and it ends in
// reshapes, so function results keep their shapes.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"

namespace pcc {
#define GEN_PASS_DEF_SPLITMERGEDHEADS
#include "pcc/Dialect/PCC/Transforms/Passes.h.inc"
} // namespace pcc

using namespace mlir;
using namespace pcc;

namespace {

/// Axis `axis` of a value is to become the axes `factors` (product: its
/// size).
struct Split {
  int64_t axis = -1;
  SmallVector<int64_t, 2> factors;
  bool operator==(const Split &o) const {
    return axis == o.axis && factors == o.factors;
  }
};

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// A reshape's output axis whose elements span two or more input axes (the
/// first such), as its parts in each: [S, B, H*D] -> [S, B*H, D] merges B
/// and the H of H*D, factors [B, H].
std::optional<Split> mergedAxis(ReshapeOp r) {
  ArrayRef<int64_t> in = shapeOf(r.getInput()), out = shapeOf(r.getResult());
  SmallVector<int64_t> bounds; // elements before each input axis, and all
  int64_t n = 1;
  for (int64_t s : in) {
    bounds.push_back(n);
    n *= s;
  }
  bounds.push_back(n);
  int64_t before = 1;
  for (auto [m, size] : llvm::enumerate(out)) {
    int64_t end = before * size;
    // The input bounds inside the axis cut it into parts, each a whole
    // input axis or a leading or trailing part of one.
    SmallVector<int64_t> cuts = {before};
    for (int64_t b : bounds)
      if (b > before && b < end)
        cuts.push_back(b);
    cuts.push_back(end);
    auto next = llvm::find_if(bounds, [&](int64_t b) { return b >= end; });
    auto prev = llvm::find_if(llvm::reverse(bounds),
                              [&](int64_t b) { return b <= before; });
    bool aligned =
        next != bounds.end() && *next % end == 0 && before % *prev == 0;
    Split s{int64_t(m), {}};
    for (size_t i = 0; aligned && i + 1 < cuts.size(); ++i) {
      aligned = cuts[i + 1] % cuts[i] == 0;
      s.factors.push_back(cuts[i + 1] / std::max<int64_t>(cuts[i], 1));
    }
    if (aligned && cuts.size() > 2 &&
        llvm::count_if(s.factors, [](int64_t f) { return f > 1; }) >= 2 &&
        llvm::all_of(s.factors, [](int64_t f) { return f > 1; }))
      return s;
    before = end;
  }
  return std::nullopt;
}

RankedTensorType splitType(Value v, const Split &s) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape().take_front(s.axis));
  shape.append(s.factors.begin(), s.factors.end());
  llvm::append_range(shape, t.getShape().drop_front(s.axis + 1));
  return RankedTensorType::get(shape, t.getElementType());
}

class Rewriter {
public:
  void run(func::FuncOp fn);

private:
  void propagate(Value v, const Split &s);
  bool valid(Operation *op) const;
  void rewrite(Operation *op, OpBuilder &b);
  bool accepted(Value v) const {
    return splits.contains(v) && !rejected.contains(groups.getLeaderValue(v));
  }

  llvm::MapVector<Value, Split> splits;
  /// Values joined by the ops that read them: split together or not at all.
  llvm::EquivalenceClasses<Value> groups;
  llvm::DenseSet<Value> rejected;
  llvm::SetVector<Operation *> readers;
  SmallVector<Value> worklist;
};

void Rewriter::propagate(Value v, const Split &s) {
  auto [it, inserted] = splits.insert({v, s});
  groups.insert(v);
  if (inserted)
    worklist.push_back(v);
  else if (!(it->second == s))
    it->second.axis = -1; // two ways to split one value: not rewritten
}

void Rewriter::run(func::FuncOp fn) {
  for (auto r : fn.getOps<ReshapeOp>())
    if (std::optional<Split> s = mergedAxis(r))
      propagate(r.getResult(), *s);
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    Split s = splits.lookup(v);
    for (Operation *user : v.getUsers()) {
      readers.insert(user);
      // A reshape reads the split value as it is; its result is its own.
      if (isa<ReshapeOp>(user))
        continue;
      if (auto t = dyn_cast<TransposeOp>(user)) {
        auto perm = t.getPerm();
        int64_t at = llvm::find(perm, s.axis) - perm.begin();
        propagate(t.getResult(), {at, s.factors});
      } else if (user->getNumResults() == 1 &&
                 (isa<AttentionOp, MatMulOp, SoftmaxOp, LogSoftmaxOp>(user) ||
                  user->hasTrait<pcc::OpTrait::Pointwise>())) {
        propagate(user->getResult(0), s);
      } else if (auto g = dyn_cast<GemmOp>(user); g && g.getA() == v) {
        // A product's rows (Hugging Face's Conv1D on a [B*S, d] view): the
        // result's rows are the same axis.
        propagate(g.getResult(), s);
      } else {
        continue;
      }
      groups.unionSets(v, user->getResult(0));
    }
  }
  // A group is rewritten when every reader of its values is valid and each
  // value splits one way.
  for (auto &[v, s] : splits)
    if (s.axis < 0)
      rejected.insert(groups.getLeaderValue(v));
  for (Operation *op : readers)
    if (!valid(op))
      for (Value v : op->getOperands())
        if (splits.contains(v))
          rejected.insert(groups.getLeaderValue(v));
  OpBuilder b(fn.getContext());
  for (Operation &op : fn.getBody().front())
    rewrite(&op, b);
}

/// Whether `op`, which reads a split value, reads it in a way that splitting
/// keeps.
bool Rewriter::valid(Operation *op) const {
  auto split = [&](Value v) -> const Split * {
    auto it = splits.find(v);
    return it == splits.end() ? nullptr : &it->second;
  };
  auto allSplit = [&](ValueRange vs, const Split &s) {
    return llvm::all_of(vs, [&](Value v) {
      const Split *o = split(v);
      return o && *o == s;
    });
  };
  if (isa<ReshapeOp>(op))
    return split(op->getOperand(0))->axis >= 0;
  if (auto t = dyn_cast<TransposeOp>(op))
    return split(t.getInput())->axis >= 0 && split(t.getResult())->axis >= 0;
  const Split *out =
      op->getNumResults() == 1 ? split(op->getResult(0)) : nullptr;
  if (!out || out->axis < 0)
    return false;
  int64_t rank = shapeOf(op->getResult(0)).size();
  if (auto a = dyn_cast<AttentionOp>(op))
    return out->axis < rank - 2 && !a.getMask() && !a.getHide() &&
           !a.getSeqFirst() &&
           allSplit({a.getQuery(), a.getKey(), a.getValue()}, *out);
  if (auto m = dyn_cast<MatMulOp>(op))
    return out->axis < rank - 2 && shapeOf(m.getLhs()).size() == size_t(rank) &&
           shapeOf(m.getRhs()).size() == size_t(rank) &&
           allSplit(op->getOperands(), *out);
  if (auto g = dyn_cast<GemmOp>(op)) {
    // The split axis is one of A's rows (not the contraction); the weight
    // and the bias do not reach it.
    // (A of rank > 2 takes a weight of rank 2 and a bias along n.)
    const Split *a = split(g.getA());
    return !g.getTransA() && a && *a == *out && out->axis < rank - 1 &&
           shapeOf(g.getB()).size() == 2 && !split(g.getB()) &&
           (!g.getC() || shapeOf(g.getC()).size() <= 1);
  }
  if (auto s = dyn_cast<SoftmaxOp>(op))
    return s.getAxis() != out->axis && allSplit(op->getOperands(), *out);
  if (auto s = dyn_cast<LogSoftmaxOp>(op))
    return s.getAxis() != out->axis && allSplit(op->getOperands(), *out);
  // Expand's shape attribute names the merged axis; broadcasting ops are
  // pointwise where the split operand is already the result's shape.
  if (!op->hasTrait<pcc::OpTrait::Pointwise>() || isa<ExpandOp>(op))
    return false;
  // Other operands broadcast from the right: they must not reach the axis.
  for (Value v : op->getOperands()) {
    if (const Split *o = split(v)) {
      if (!(*o == *out) || shapeOf(v) != shapeOf(op->getResult(0)))
        return false;
      continue;
    }
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() >= rank - out->axis)
      return false;
  }
  return true;
}

void Rewriter::rewrite(Operation *op, OpBuilder &b) {
  if (op->getNumResults() != 1 || !accepted(op->getResult(0)))
    return;
  Value result = op->getResult(0);
  const Split &out = splits.find(result)->second;
  if (auto r = dyn_cast<ReshapeOp>(op))
    r.setShapeAttr(b.getDenseI64ArrayAttr(splitType(result, out).getShape()));
  if (auto t = dyn_cast<TransposeOp>(op)) {
    const Split &in = splits.find(t.getInput())->second;
    // Input axis a becomes axes first(a) .. first(a) + width(a).
    auto width = [&](int64_t a) {
      return a == in.axis ? int64_t(in.factors.size()) : int64_t(1);
    };
    auto first = [&](int64_t a) {
      return a <= in.axis ? a : a + int64_t(in.factors.size()) - 1;
    };
    SmallVector<int64_t> perm;
    for (int64_t a : t.getPerm())
      for (int64_t k = 0; k < width(a); ++k)
        perm.push_back(first(a) + k);
    t.setPermAttr(b.getDenseI64ArrayAttr(perm));
  }
  int64_t more = int64_t(out.factors.size()) - 1;
  if (auto s = dyn_cast<SoftmaxOp>(op); s && s.getAxis() > out.axis)
    s.setAxis(s.getAxis() + more);
  if (auto s = dyn_cast<LogSoftmaxOp>(op); s && s.getAxis() > out.axis)
    s.setAxis(s.getAxis() + more);
  result.setType(splitType(result, out));
}

struct SplitMergedHeadsPass
    : pcc::impl::SplitMergedHeadsBase<SplitMergedHeadsPass> {
  void runOnOperation() override { Rewriter().run(getOperation()); }
};

} // namespace
