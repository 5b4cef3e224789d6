//===- Strategy.cpp - forced data / tensor parallel strategies ------------===//
//
// The strategy only seeds layouts: the batch split of the model inputs (dp)
// and, on the tp axis, either Megatron's split of each linear layer's or
// embedding's weight or the layouts the planner chose per op. Everything
// else, including where partial sums are reduced, follows from the op
// sharding rules during propagation.
//
//===----------------------------------------------------------------------===//

#include "pcc/Partition/Strategy.h"
#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Dialect/PCC/IR/WeightViews.h"
#include "pcc/Partition/Passes.h"
#include "pcc/Partition/Propagation.h"
#include "pcc/Partition/Stages.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace pcc {

#define GEN_PASS_DEF_APPLYPLAN
#include "pcc/Partition/Passes.h.inc"

namespace {

/// A parameter matrix as a product reads it: a weight, or a 2-D weight
/// transposed (what exports without constant folding, such as training
/// exports, write for nn.Linear: MatMul(x, Transpose(W))).
bool isWeightMatrix(Value v) {
  if (weightBehind(v))
    return true;
  auto t = v.getDefiningOp<TransposeOp>();
  return t && weightBehind(t.getInput()) &&
         t.getPerm() == ArrayRef<int64_t>{1, 0};
}

/// Megatron-LM's layout of one tensor-parallel axis `tp` of size `n`; with
/// `sequence`, Megatron's sequence parallelism between its layers.
struct MegatronHook {
  int64_t tp, n;
  bool sequence = false;

  void operator()(Operation *op, SmallVectorImpl<TensorSharding> &in) const {
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      if (shapeOf(mm.getRhs()).size() == 2) {
        gatherSequence(mm.getRhs(), in[0]);
        linear(in[0], mm.getRhs(), in[1], /*nDim=*/1, mm.getResult());
      }
    } else if (auto g = dyn_cast<GemmOp>(op)) {
      gatherSequence(g.getB(), in[0]);
      linear(in[0], g.getB(), in[1], g.getTransB() ? 0 : 1, g.getResult());
    } else if (sequence && isBetweenLayers(op, in)) {
      splitSequence(op, in);
    } else if (isa<AddOp>(op)) {
      splitBias(op, in);
    } else if (auto g = dyn_cast<GatherOp>(op)) {
      // Vocabulary-parallel embedding: each device holds a block of rows.
      int64_t rank = shapeOf(g.getInput()).size();
      int64_t axis = normalizeAxis(g.getAxis(), rank);
      if (axis == 0 && weightBehind(g.getInput()) && in[0].isReplicated() &&
          !in[1].usesAxis(tp) && shapeOf(g.getInput())[0] % n == 0) {
        in[0].dims[0].axes = {tp};
        in[0].dims[0].groups = 1;
      }
    }
  }

  /// A bias added to a column-parallel product (MatMul then Add, as exports
  /// without constant folding write nn.Linear) is stored split like the
  /// product's columns: each device keeps and trains its part.
  void splitBias(Operation *op, SmallVectorImpl<TensorSharding> &in) const {
    for (int i = 0; i < 2; ++i) {
      Value b = op->getOperand(i), x = op->getOperand(1 - i);
      if (!weightBehind(b) || shapeOf(b).size() != 1 || !in[i].isReplicated() ||
          in[1 - i].dims.empty())
        continue;
      const DimSharding &cols = in[1 - i].dims.back();
      if (shapeOf(x).back() != shapeOf(b)[0] || cols.axes.size() != 1 ||
          cols.axes[0] != tp)
        continue;
      in[i].dims[0] = cols;
    }
  }

  /// The sequence dimension of a [..., S, H] activation: the one before the
  /// hidden dimension.
  static int64_t sequenceDim(Value v) { return int64_t(shapeOf(v).size()) - 2; }

  /// Norms, residual adds and other pointwise ops on activations that are
  /// whole (or partial sums) on the tp axis: what Megatron-SP runs on the
  /// sequence split. Only [B, S, H] activations: an image's [N, C, H, W]
  /// (a ViT's patches before they become tokens) has no sequence.
  bool isBetweenLayers(Operation *op,
                       ArrayRef<TensorSharding> in) const {
    if (!isa<LayerNormOp>(op) && !op->hasTrait<pcc::OpTrait::Pointwise>())
      return false;
    if (op->getNumResults() != 1 || shapeOf(op->getResult(0)).size() != 3)
      return false;
    int64_t seq = sequenceDim(op->getResult(0));
    if (shapeOf(op->getResult(0))[seq] % n)
      return false;
    // Partial sums added (a backward's gradients from several products of
    // one input): summed once, after, not each scattered.
    if (isa<AddOp, SubOp>(op) &&
        llvm::all_of(in, [&](const TensorSharding &s) {
          return llvm::is_contained(s.partial, tp);
        }))
      return false;
    for (auto [v, s] : llvm::zip(op->getOperands(), in))
      for (auto [d, ds] : llvm::enumerate(s.dims))
        if (llvm::is_contained(ds.axes, tp) &&
            !(shapeOf(v).size() == shapeOf(op->getResult(0)).size() &&
              int64_t(d) == seq))
          return false; // split on tp inside a layer (heads, hidden)
    return true;
  }

  /// Operands of the op's full shape take the sequence split; the partial
  /// sums on tp reach it by a reduce-scatter.
  void splitSequence(Operation *op, SmallVectorImpl<TensorSharding> &in) const {
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    int64_t seq = sequenceDim(op->getResult(0));
    for (auto [v, s] : llvm::zip(op->getOperands(), in)) {
      DimSharding &d = s.dims[seq];
      // Already on the sequence split, or a grouped split tp cannot join.
      if (shapeOf(v) != shape || llvm::is_contained(d.axes, tp) ||
          (d.isSplit() && d.groups != 1))
        continue;
      llvm::erase(s.partial, tp);
      d.axes.push_back(tp);
      d.groups = 1;
    }
  }

  /// Megatron-SP: a linear layer's input arrives with the sequence split;
  /// the column-parallel layer all-gathers it first.
  void gatherSequence(Value w, TensorSharding &x) const {
    if (!sequence || !isWeightMatrix(w) || x.dims.size() < 2)
      return;
    DimSharding &seq = x.dims[x.dims.size() - 2];
    if (!llvm::is_contained(seq.axes, tp))
      return;
    llvm::erase(seq.axes, tp);
    if (!seq.isSplit())
      seq.groups = 1;
  }

  /// A linear layer y = x W: row-parallel when x arrives split on its
  /// contracted dimension (the rule does that by itself), column-parallel
  /// when x is whole on the tp axis.
  void linear(const TensorSharding &x, Value w, TensorSharding &wLayout,
              int64_t nDim, Value y) const {
    if (!isWeightMatrix(w) || !wLayout.isReplicated())
      return;
    if (x.usesAxis(tp)) {
      // Row-parallel: the rule would split the weight's rows after x's
      // columns by itself; asked for explicitly, the weight is stored split
      // from its first use on (a training step's update then runs on the
      // part), not sliced at each use.
      if (!x.dims.empty() &&
          x.dims.back().axes == SmallVector<int64_t, 2>{tp} &&
          x.dims.back().groups == 1 && x.partial.empty())
        wLayout.dims[1 - nDim].axes = {tp};
      return;
    }
    int64_t cols = shapeOf(w)[nDim];
    int64_t groups = fusedGroups(y);
    if (cols % groups || (cols / groups) % n)
      groups = 1;
    if ((cols / groups) % n || cols / groups < n)
      return;
    wLayout.dims[nDim].axes = {tp};
    wLayout.dims[nDim].groups = groups;
  }
};

/// `s` with grid axis `axis` removed from its splits and partial sums.
TensorSharding withoutAxis(TensorSharding s, int64_t axis) {
  for (DimSharding &d : s.dims) {
    llvm::erase(d.axes, axis);
    if (!d.isSplit())
      d.groups = 1;
  }
  llvm::erase(s.partial, axis);
  return s;
}

/// The planner's layouts (kPlannedShardingAttr, axis 0 standing for the tp
/// axis `tp`), merged with the data-parallel splits that reach each op.
struct PlannedHook {
  int64_t tp;
  const Mesh &mesh;

  void operator()(Operation *op, SmallVectorImpl<TensorSharding> &in) const {
    auto planned = operandShardings(op, kPlannedShardingAttr);
    if (!planned)
      return;
    SmallVector<TensorSharding> merged;
    for (auto [v, cur, want] : llvm::zip(op->getOperands(), in, *planned)) {
      TensorSharding m = withoutAxis(cur, tp);
      for (auto [d, w] : llvm::zip(m.dims, want.dims)) {
        if (!w.isSplit())
          continue;
        if (d.isSplit() && w.groups != d.groups)
          return; // cannot stack both splits: keep what propagation gives
        d.groups = w.groups;
        d.axes.push_back(tp); // dp major, tp minor
      }
      if (!want.partial.empty())
        m.partial.push_back(tp);
      if (!divides(shapeOf(v), m, mesh))
        return;
      merged.push_back(std::move(m));
    }
    in.assign(merged.begin(), merged.end());
  }
};

/// A linear layer's weight operand: a weight, or its 2-D transpose (nn.Linear
/// exported without constant folding, MatMul(x, Transpose(W)); propagation
/// stores W so that the transpose comes out in the layout asked for).
bool isLinearWeight(Value w) {
  if (auto t = w.getDefiningOp<TransposeOp>();
      t && t.getPerm() == ArrayRef<int64_t>{1, 0})
    w = t.getInput();
  return bool(weightBehind(w));
}

/// Colossal-AI's 2D (and, with the batch also split over a depth axis,
/// 2.5D Tesseract) layouts on a q x q grid of axes `row` x `col`:
/// activations hold their rows (the batch) split over `row` and their
/// hidden dimension over `col`; a linear layer's weight is split q x q
/// (contraction over `row`, outputs over `col`) and its product runs as
/// SUMMA (kSummaAttr); layer norms all-reduce their statistics over `col`
/// (kSplitStatsAttr); embedding tables split their hidden dimension over
/// `col`. Attention works on the heads the hidden split gives.
struct GridHook {
  int64_t row, col, q;
  const Mesh &mesh;

  void operator()(Operation *op, SmallVectorImpl<TensorSharding> &in) const {
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      if (shapeOf(mm.getRhs()).size() == 2)
        summa(op, in, /*transB=*/false);
    } else if (auto g = dyn_cast<GemmOp>(op)) {
      if (!g.getTransA())
        summa(op, in, g.getTransB());
    } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
      // Activations between layers hold the hidden split: a whole one is
      // sliced (free), so every norm of a repeated block runs alike.
      int64_t rank = shapeOf(ln.getInput()).size();
      DimSharding &last = in[0].dims.back();
      if (normalizeAxis(ln.getAxis(), rank) != rank - 1 ||
          !in[0].partial.empty() || shapeOf(ln.getInput()).back() % q)
        return;
      if (!last.isSplit()) {
        if (in[0].usesAxis(col))
          return;
        last.axes = {col};
        last.groups = 1;
      }
      if (last.axes == ArrayRef<int64_t>{col} && last.groups == 1)
        ln->setAttr(kSplitStatsAttr, UnitAttr::get(op->getContext()));
    } else if (auto g = dyn_cast<GatherOp>(op)) {
      ArrayRef<int64_t> table = shapeOf(g.getInput());
      if (weightBehind(g.getInput()) && table.size() == 2 &&
          normalizeAxis(g.getAxis(), 2) == 0 && in[0].isReplicated() &&
          table[1] % q == 0)
        in[0].dims[1].axes = {col};
    }
  }

  void summa(Operation *op, SmallVectorImpl<TensorSharding> &in,
             bool transB) const {
    Value w = op->getOperand(1);
    if (!isLinearWeight(w))
      return;
    TensorSharding x = in[0];
    if (!x.partial.empty() || x.dims.size() < 2)
      return;
    // SUMMA's rows are the grid rows' blocks of the batch.
    if (!llvm::any_of(ArrayRef(x.dims).drop_back(), [&](const DimSharding &d) {
          return llvm::is_contained(d.axes, row);
        }))
      return;
    DimSharding &k = x.dims.back();
    if (k.isSplit() && (k.axes != ArrayRef<int64_t>{col} || k.groups != 1))
      return;
    // The columns may split only the contraction (torch MHA's [S*B, E]
    // after a head split merged into the batch would use them twice).
    TensorSharding rest = x;
    rest.dims.back() = DimSharding();
    if (rest.usesAxis(col))
      return;
    k.axes = {col};
    k.groups = 1;
    int64_t kDim = transB ? 1 : 0, nDim = 1 - kDim;
    int64_t kSize = shapeOf(w)[kDim], nSize = shapeOf(w)[nDim];
    int64_t groups = fusedGroups(op->getResult(0));
    if (nSize % groups || (nSize / groups) % q)
      groups = 1;
    if (kSize % q || (nSize / groups) % q ||
        !divides(shapeOf(op->getOperand(0)), x, mesh))
      return;
    TensorSharding ws = TensorSharding::replicated(2);
    ws.dims[kDim].axes = {row};
    ws.dims[nDim].axes = {col};
    ws.dims[nDim].groups = groups;
    // A weight shared with an earlier layer has its layout already.
    if (!in[1].isReplicated() && in[1] != ws)
      return;
    in[0] = std::move(x);
    in[1] = std::move(ws);
    op->setAttr(kSummaAttr, UnitAttr::get(op->getContext()));
  }
};

/// Colossal-AI's 3D layouts on a q x q x q grid of axes x, y, z (Bian et
/// al. 2021): an activation [M, K] holds its rows over [x, a] and its
/// features over b, {a, b} = {y, z}. A linear layer all-gathers the rows
/// over a and its weight (stored [K over b, N over [a, x]], 1/q^3 each)
/// over x, multiplies into a partial sum over b, and its users take the
/// result reduce-scattered over b onto the rows: [M over [x, b], N over a],
/// so y and z swap roles from one layer to the next. Layer norms
/// all-reduce their statistics over the feature axis; embedding tables
/// split their features over z.
struct CubeHook {
  int64_t x, y, z, q;
  const Mesh &mesh;

  void operator()(Operation *op, SmallVectorImpl<TensorSharding> &in) const {
    for (auto [v, s] : llvm::zip(op->getOperands(), in))
      scatterPartial(v, s);
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      if (shapeOf(mm.getRhs()).size() == 2)
        linear(op, in, /*transB=*/false);
    } else if (auto g = dyn_cast<GemmOp>(op)) {
      // A bias (Hugging Face's Conv1D, addmm) is added once the product
      // is reduce-scattered onto the rows, as a MatMul's users take it.
      if (!g.getTransA() && (!g.getC() || broadcastsRows(g.getC())))
        linear(op, in, g.getTransB());
    } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
      // As on a 2D grid: a whole hidden dimension is sliced (over z, the
      // features' axis at a block's start), so every norm runs alike.
      int64_t rank = shapeOf(ln.getInput()).size();
      DimSharding &last = in[0].dims.back();
      if (normalizeAxis(ln.getAxis(), rank) != rank - 1 ||
          !in[0].partial.empty() || shapeOf(ln.getInput()).back() % q)
        return;
      if (!last.isSplit()) {
        // The features' axis is the one of y, z the rows do not use.
        int64_t feature = in[0].usesAxis(z) ? y : z;
        if (in[0].usesAxis(feature))
          return;
        last.axes = {feature};
        last.groups = 1;
      }
      if (last.groups == 1 && (last.axes == ArrayRef<int64_t>{y} ||
                               last.axes == ArrayRef<int64_t>{z}))
        ln->setAttr(kSplitStatsAttr, UnitAttr::get(op->getContext()));
    } else if (auto g = dyn_cast<GatherOp>(op)) {
      ArrayRef<int64_t> table = shapeOf(g.getInput());
      if (weightBehind(g.getInput()) && table.size() == 2 &&
          normalizeAxis(g.getAxis(), 2) == 0 && in[0].isReplicated() &&
          table[1] % q == 0)
        in[0].dims[1].axes = {z};
    }
  }

  /// The rows dimension of `s`: the first but the last that x splits
  /// (after the batch axes, microbatches' and dp's, where those split it).
  static int64_t rowsDim(const TensorSharding &s, int64_t x) {
    for (size_t d = 0; d + 1 < s.dims.size(); ++d)
      if (llvm::is_contained(s.dims[d].axes, x))
        return d;
    return -1;
  }

  /// A linear layer's partial sum over y or z reaches its users
  /// reduce-scattered onto the rows.
  void scatterPartial(Value v, TensorSharding &s) const {
    if (s.partial.size() != 1 || (s.partial[0] != y && s.partial[0] != z))
      return;
    int64_t r = rowsDim(s, x);
    if (r < 0 || s.dims[r].axes.back() != x || s.dims[r].groups != 1)
      return;
    TensorSharding next = s;
    next.dims[r].axes.push_back(s.partial[0]);
    next.partial.clear();
    if (divides(shapeOf(v), next, mesh))
      s = std::move(next);
  }

  void linear(Operation *op, SmallVectorImpl<TensorSharding> &in,
              bool transB) const {
    Value w = op->getOperand(1);
    if (!isLinearWeight(w))
      return;
    TensorSharding a = in[0];
    if (!a.partial.empty() || a.dims.size() < 2)
      return;
    DimSharding &k = a.dims.back();
    int64_t b = a.usesAxis(z) ? y : z;
    if (k.isSplit()) {
      if (k.axes.size() != 1 || k.groups != 1 ||
          (k.axes[0] != y && k.axes[0] != z))
        return;
      b = k.axes[0];
    }
    int64_t other = b == y ? z : y;
    int64_t r = rowsDim(a, x);
    if (r < 0)
      return;
    llvm::erase(a.dims[r].axes, other);
    k.axes = {b};
    k.groups = 1;
    int64_t kDim = transB ? 1 : 0, nDim = 1 - kDim;
    int64_t nSize = shapeOf(w)[nDim];
    int64_t groups = fusedGroups(op->getResult(0));
    if (nSize % groups || (nSize / groups) % (q * q))
      groups = 1;
    TensorSharding use = TensorSharding::replicated(2);
    use.dims[kDim].axes = {b};
    use.dims[nDim].axes = {other};
    use.dims[nDim].groups = groups;
    TensorSharding stored = use;
    stored.dims[nDim].axes = {other, x};
    if (!divides(shapeOf(op->getOperand(0)), a, mesh) ||
        !divides(shapeOf(w), stored, mesh))
      return;
    // A weight shared with an earlier layer is stored already.
    if (!in[1].isReplicated() && in[1] != stored)
      return;
    // The weight behind a view (a training export's Transpose(W)) is
    // stored so too: each device keeps and updates its 1/q^3 part.
    if (!storeThrough(w, stored, mesh))
      setSharding(w, mesh, stored);
    in[0] = std::move(a);
    in[1] = std::move(use);
    if (op->getNumOperands() > 2)
      op->setAttr(kScatterBeforeBiasAttr, UnitAttr::get(op->getContext()));
  }
};

/// Sequence parallelism on grid axis `sp`: the sequence split seeded on the
/// first input reaches every op that keeps it (pointwise ops, norms, linear
/// layers: they work token by token). Attention needs every key: Ulysses
/// moves the split from the sequence to the heads for it (an all-to-all of
/// Q, K and V) and back for its users (one more); ring attention keeps the
/// split (kRingAttentionAttr) and passes the key blocks around.
struct SequenceHook {
  int64_t sp;
  SequenceMode mode;
  const Mesh &mesh;

  void operator()(Operation *op, SmallVectorImpl<TensorSharding> &in) const {
    if (auto attn = dyn_cast<AttentionOp>(op))
      return attention(attn, in);
    if (mode == SequenceMode::Ulysses)
      for (auto [v, s] : llvm::zip(op->getOperands(), in))
        if (v.getDefiningOp<AttentionOp>())
          moveSplit(v, s, /*toHeads=*/false);
  }

  void attention(AttentionOp op, SmallVectorImpl<TensorSharding> &in) const {
    int64_t rows = shapeOf(op.getQuery()).size() - 2;
    if (!llvm::is_contained(in[0].dims[rows].axes, sp))
      return;
    if (mode == SequenceMode::Ring) {
      op->setAttr(kRingAttentionAttr, UnitAttr::get(op.getContext()));
      return;
    }
    SmallVector<TensorSharding, 3> moved(in.begin(), in.begin() + 3);
    for (auto [i, s] : llvm::enumerate(moved))
      if (!moveSplit(op->getOperand(i), s, /*toHeads=*/true))
        return; // no head dimension that divides: K and V are gathered
    std::copy(moved.begin(), moved.end(), in.begin());
  }

  /// Moves the sp split of a [..., heads, S, D] value between its sequence
  /// and its heads dimension; false if the target cannot take it.
  bool moveSplit(Value v, TensorSharding &s, bool toHeads) const {
    int64_t rank = shapeOf(v).size();
    if (rank < 3)
      return false;
    DimSharding &from = s.dims[toHeads ? rank - 2 : rank - 3];
    DimSharding &to = s.dims[toHeads ? rank - 3 : rank - 2];
    if (!llvm::is_contained(from.axes, sp) || (to.isSplit() && to.groups != 1))
      return false;
    TensorSharding next = s;
    DimSharding &f = next.dims[toHeads ? rank - 2 : rank - 3];
    DimSharding &t = next.dims[toHeads ? rank - 3 : rank - 2];
    llvm::erase(f.axes, sp);
    if (!f.isSplit())
      f.groups = 1;
    t.axes.push_back(sp);
    t.groups = 1;
    if (!divides(shapeOf(v), next, mesh))
      return false;
    s = std::move(next);
    return true;
  }
};

/// Splits the sequence (dimension 1) of the first input with a batch over
/// grid axis `sp`: token ids [batch, sequence] or embeddings [batch,
/// sequence, features]; and of the later token inputs of that batch whose
/// sequence divides.
LogicalResult splitSequence(func::FuncOp fn, const Mesh &mesh, int64_t sp) {
  // Without attention a sequence split is tensor parallelism in disguise.
  if (fn.walk([](AttentionOp) { return WalkResult::interrupt(); })
          .wasInterrupted() == false)
    return fn.emitError("sequence parallelism splits what attention reads, "
                        "and the model has no attention (Q Kt, softmax, V "
                        "raised to pcc.attention)");
  for (BlockArgument arg : fn.getArguments()) {
    ArrayRef<int64_t> shape = shapeOf(arg);
    if (shape.empty())
      continue;
    StringRef name = "input";
    if (auto n = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                 "pcc.name"))
      name = n.getValue();
    if (shape.size() != 2 && shape.size() != 3)
      return fn.emitError() << "sequence parallelism splits dimension 1 of "
                               "the first input, a [batch, sequence] or "
                               "[batch, sequence, features] tensor; input '"
                            << name << "' has rank " << shape.size();
    if (shape[1] % mesh.shape[sp])
      return fn.emitError() << "sequence length " << shape[1] << " of input '"
                            << name << "' does not divide into "
                            << mesh.shape[sp]
                            << " sequence-parallel parts; use an --sp that "
                               "divides it";
    auto splitDim1 = [&](Value v) {
      TensorSharding s = shardingOf(v);
      s.dims[1].axes = {sp};
      setSharding(v, mesh, s);
    };
    splitDim1(arg);
    // Later token inputs of the same batch (an encoder-decoder's decoder
    // tokens: indices of an embedding lookup) split too where their
    // sequence divides, so the decoder runs on sequence blocks, not whole
    // on every device. Labels and masks are sliced where read (free).
    auto isTokens = [](Value v) {
      return llvm::any_of(v.getUsers(), [&](Operation *user) {
        auto lookup = dyn_cast<GatherOp>(user);
        return lookup && lookup.getIndices() == v &&
               lookup.getInput().getDefiningOp<WeightOp>();
      });
    };
    for (BlockArgument other :
         fn.getArguments().drop_front(arg.getArgNumber() + 1)) {
      ArrayRef<int64_t> s = shapeOf(other);
      if (s.size() == 2 && s[0] == shape[0] && s[1] % mesh.shape[sp] == 0 &&
          isTokens(other))
        splitDim1(other);
    }
    return success();
  }
  return fn.emitError("sequence parallelism needs an input with a sequence "
                      "dimension");
}

/// Splits every input whose leading dimension is the batch (that of the
/// first input with one) over the batch axes: the microbatch axis, then dp.
LogicalResult splitBatch(func::FuncOp fn, const Mesh &mesh) {
  SmallVector<int64_t> axes;
  // 2D / 2.5D tensor grids split the batch too: over the depth and the
  // grid rows.
  for (StringRef role : {StringRef(kMicrobatchAxis), StringRef("dp"),
                         StringRef("tp_dep"), StringRef("tp_row"),
                         StringRef("tp_x"), StringRef("tp_y")})
    if (int64_t a = mesh.axisNamed(role); a >= 0 && mesh.shape[a] > 1)
      axes.push_back(a);
  if (axes.empty())
    return success();
  int64_t parts = mesh.size(axes);
  std::optional<int64_t> batch;
  for (BlockArgument arg : fn.getArguments()) {
    ArrayRef<int64_t> shape = shapeOf(arg);
    if (shape.empty())
      continue;
    if (!batch) {
      batch = shape[0];
      if (*batch % parts) {
        StringRef name = "input";
        if (auto n = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                     "pcc.name"))
          name = n.getValue();
        InFlightDiagnostic d = fn.emitError()
                               << "batch size " << *batch << " of input '"
                               << name << "' does not divide into ";
        int64_t mb = mesh.axisNamed(kMicrobatchAxis);
        if (mesh.axisNamed("tp_row") >= 0 || mesh.axisNamed("tp_x") >= 0)
          return d << parts << " parts (data-parallel groups x the tensor "
                               "grid's rows and depth); use a --dp and --tp "
                               "whose split divides it";
        if (mb < 0)
          return d << parts << " data-parallel groups; use a --dp that "
                               "divides it";
        return d << parts << " parts (" << parts / mesh.shape[mb]
                 << " data-parallel groups x " << mesh.shape[mb]
                 << " microbatches); use a --dp and --microbatches whose "
                    "product divides it";
      }
    }
    if (shape[0] != *batch)
      continue;
    TensorSharding s = TensorSharding::replicated(shape.size());
    s.dims[0].axes.assign(axes.begin(), axes.end());
    setSharding(arg, mesh, s);
  }
  if (!batch)
    return fn.emitError("data parallelism and microbatches need an input "
                        "with a batch dimension");
  return success();
}

/// Annotates `fn` on the plan's program mesh: the batch split over the
/// microbatch and dp axes, the sequence split over sp, and on the tp axis
/// the plan's layouts (Megatron's, with or without sequence parallelism,
/// or the planner's).
LogicalResult shardByStrategy(func::FuncOp fn, const ParallelPlan &plan,
                              const Mesh &mesh) {
  if (failed(splitBatch(fn, mesh)))
    return failure();
  int64_t spAxis = mesh.axisNamed("sp");
  bool sequence = spAxis >= 0 && mesh.shape[spAxis] > 1;
  if (sequence && failed(splitSequence(fn, mesh, spAxis)))
    return failure();
  int64_t tpAxis = mesh.axisNamed("tp");
  int64_t rowAxis = mesh.axisNamed("tp_row"), colAxis = mesh.axisNamed("tp_col");
  std::function<void(Operation *, SmallVectorImpl<TensorSharding> &)> tensor;
  int64_t xAxis = mesh.axisNamed("tp_x");
  if (rowAxis >= 0 && colAxis >= 0)
    tensor = GridHook{rowAxis, colAxis, mesh.shape[colAxis], mesh};
  else if (xAxis >= 0)
    tensor = CubeHook{xAxis, mesh.axisNamed("tp_y"), mesh.axisNamed("tp_z"),
                      mesh.shape[xAxis], mesh};
  else if (tpAxis >= 0 && plan.tensorLayouts == TensorLayouts::Planned)
    tensor = PlannedHook{tpAxis, mesh};
  else if (tpAxis >= 0)
    tensor = MegatronHook{tpAxis, plan.degree("tp"),
                          plan.tensorLayouts ==
                              TensorLayouts::MegatronSequence};
  SequenceHook seq{spAxis, plan.sequenceMode, mesh};
  auto both = [&](Operation *op, SmallVectorImpl<TensorSharding> &in) {
    if (tensor)
      tensor(op, in);
    if (sequence)
      seq(op, in);
  };
  if (tensor || sequence)
    propagateShardings(fn, mesh, both);
  else
    propagateShardings(fn, mesh);
  return success();
}

struct ApplyPlanPass : impl::ApplyPlanBase<ApplyPlanPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<ParallelPlan> plan = readPlan(module);
    if (!plan) {
      module.emitError() << "module has no plan (" << kPlanAttr
                         << " = #pcc.plan<...>)";
      return signalPassFailure();
    }
    if (auto why = whyPlanCannotBeApplied(*plan)) {
      module.emitError() << "plan " << plan->describe()
                         << " cannot run yet: " << *why;
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      module.emitError("module has no func.func @main");
      return signalPassFailure();
    }
    Mesh mesh = programMesh(*plan);
    writeMesh(module, mesh);
    if (failed(shardByStrategy(fn, *plan, mesh)))
      return signalPassFailure();
    // Interleaved 1F1B cuts pp x virtual stages (device d runs stages d,
    // d + pp, ...).
    if (plan->degree("pp") > 1 &&
        failed(assignStages(fn, plan->degree("pp") * plan->virtualStages,
                            plan->degree("pp"))))
      return signalPassFailure();
  }
};

/// Grid axes on the axes `keep` alone: the others dropped, keep[i]
/// renumbered to i.
void onAxes(SmallVectorImpl<int64_t> &axes, ArrayRef<int64_t> keep) {
  llvm::erase_if(axes, [&](int64_t a) { return !llvm::is_contained(keep, a); });
  for (int64_t &a : axes)
    a = llvm::find(keep, a) - keep.begin();
}

TensorSharding onAxes(TensorSharding s, ArrayRef<int64_t> keep) {
  for (DimSharding &d : s.dims) {
    onAxes(d.axes, keep);
    if (!d.isSplit())
      d.groups = 1;
  }
  onAxes(s.partial, keep);
  return s;
}

/// How each op of `fn` runs on the `roles` axes of `plan`'s program mesh
/// (the planner's view of them, renumbered from 0), keyed by op; `fn` is
/// not changed.
llvm::DenseMap<Operation *, OpSharding>
shardingsOnAxes(func::FuncOp fn, const ParallelPlan &plan,
                ArrayRef<StringRef> roles) {
  Mesh mesh = programMesh(plan);
  SmallVector<int64_t> keep;
  for (StringRef role : roles)
    if (int64_t a = mesh.axisNamed(role); a >= 0)
      keep.push_back(a);
  // Propagation annotates the IR: work on a copy.
  IRMapping map;
  func::FuncOp copy = fn.clone(map);
  llvm::DenseMap<Operation *, OpSharding> result;
  // Grown one op at a time, the map would move every sharding log(n) times.
  result.reserve(fn.getBody().front().getOperations().size());
  if (failed(shardByStrategy(copy, plan, mesh))) {
    copy.erase();
    return result;
  }
  fn.walk([&](Operation *op) {
    if (op == fn || isa<WeightOp, ConstantOp, func::ReturnOp>(op))
      return;
    Operation *c = map.lookupOrNull(op);
    if (!c)
      return;
    OpSharding s = annotatedOpSharding(c, mesh);
    for (auto [v, use] : llvm::zip(c->getOperands(), s.operands)) {
      // A model input arrives in its own layout (the strategy's seed); a
      // reader wanting another reshards it.
      // So does a weight's view (3D gathers a transposed weight's stored
      // split at use).
      bool input = (isa<BlockArgument>(v) || isLinearWeight(v)) &&
                   !v.getDefiningOp<WeightOp>() &&
                   onAxes(shardingOf(v), keep) != onAxes(use, keep);
      if (input || (v.getDefiningOp<WeightOp>() &&
                    gathersStoredWeight(shardingOf(v), use))) {
        s.storedOperands.resize(c->getNumOperands());
        s.storedOperands[&use - s.operands.begin()] =
            onAxes(shardingOf(v), keep);
      }
    }
    for (auto *list : {&s.operands, &s.results})
      for (TensorSharding &t : *list)
        t = onAxes(t, keep);
    onAxes(s.reduceBeforeBias, keep);
    result[op] = std::move(s);
  });
  copy.erase();
  return result;
}

} // namespace

std::optional<std::string> whyPlanCannotBeApplied(const ParallelPlan &plan) {
  if (plan.zeroBubble &&
      (!plan.train || plan.degree("pp") < 2 || plan.virtualStages != 1))
    return std::string("ZB-H1 schedules a training step's pipeline of one "
                       "chunk per device (--train, --pp 2 or more, no "
                       "--pp-virtual)");
  if (plan.degree("sp") > 1 &&
      plan.tensorLayouts == TensorLayouts::MegatronSequence)
    return std::string("--sp and --sequence-parallel both split the "
                       "sequence; choose one");
  if (plan.degree("tp") > 1 && plan.tensorMode != TensorMode::OneD) {
    ParallelPlan devicesOnly = plan;
    devicesOnly.microbatches = 1;
    if (programMesh(devicesOnly).numDevices() != plan.mesh.numDevices())
      return "tp " + std::to_string(plan.degree("tp")) +
             " is not a tensor grid of mode " +
             tensorModeName(plan.tensorMode).str() +
             " (2d: q x q, 2.5d: q x q x depth, 3d: q x q x q)";
    if (plan.degree("sp") > 1)
      return std::string("sequence parallelism runs with 1d tensor "
                         "parallelism only");
  }
  return std::nullopt;
}

llvm::DenseMap<Operation *, OpSharding>
megatronShardings(func::FuncOp fn, int64_t dp, int64_t tp, bool sequence) {
  ParallelPlan plan = ParallelPlan::withDegrees(1, dp, 1, tp);
  plan.tensorLayouts =
      sequence ? TensorLayouts::MegatronSequence : TensorLayouts::Megatron;
  return shardingsOnAxes(fn, plan, {"tp"});
}

llvm::DenseMap<Operation *, OpSharding>
sequenceShardings(func::FuncOp fn, int64_t dp, int64_t sp, SequenceMode mode) {
  ParallelPlan plan = ParallelPlan::withDegrees(1, dp, sp, 1);
  plan.sequenceMode = mode;
  return shardingsOnAxes(fn, plan, {"sp"});
}

llvm::DenseMap<Operation *, OpSharding>
gridShardings(func::FuncOp fn, int64_t dp, int64_t tp, TensorMode mode,
              int64_t depth) {
  ParallelPlan plan = ParallelPlan::withDegrees(1, dp, 1, tp);
  plan.tensorMode = mode;
  plan.tensorDepth = depth;
  SmallVector<StringRef> grid(std::begin(kGridAxisNames),
                              std::end(kGridAxisNames));
  return shardingsOnAxes(fn, plan, grid);
}

} // namespace pcc
