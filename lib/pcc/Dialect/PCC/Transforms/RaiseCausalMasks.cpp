//===- RaiseCausalMasks.cpp - hide masks of attention as index bands ------===//
//
// Exporters build a causal mask from constants: torch.tril(ones) folded to a
// constant, Trilu of a ones tensor, a tril buffer sliced to the sequence,
// then Not, `== 0` or a cast to bool. Each is a band over the last two
// dimensions: element (r, c) is non-zero exactly where c - r >= k (upper)
// or c - r <= k (lower). Following the hide operand's definition through
// those ops gives its band, which replaces the operand by `hide_from`.
//
//===----------------------------------------------------------------------===//

#include "MatchUtils.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Dialect/PCC/Transforms/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pcc {
#define GEN_PASS_DEF_RAISECAUSALMASKS
#include "pcc/Dialect/PCC/Transforms/Passes.h.inc"
} // namespace pcc

using namespace mlir;

namespace pcc {
namespace {

/// Beyond any index difference of a real tensor: bounds of "everywhere" and
/// "nowhere".
constexpr int64_t kFar = int64_t(1) << 48;

/// Where a tensor is non-zero over its last two dimensions (row r, column
/// c), the same for every leading index: c - r >= k (upper) or c - r <= k.
/// `unit`: its non-zero elements are exactly 1 (booleans always are).
struct Band {
  bool upper = true;
  int64_t k = -kFar;
  bool unit = true;

  static Band everywhere(bool unit) { return {true, -kFar, unit}; }
  static Band nowhere() { return {true, kFar, true}; }
  bool isEverywhere() const { return upper ? k <= -kFar : k >= kFar; }
  bool isNowhere() const { return upper ? k >= kFar : k <= -kFar; }
  Band complement() const {
    if (isEverywhere())
      return nowhere();
    if (isNowhere())
      return everywhere(true);
    return upper ? Band{false, k - 1, true} : Band{true, k + 1, true};
  }
};

bool isNonZero(Attribute a) {
  if (auto f = dyn_cast<FloatAttr>(a))
    return !f.getValue().isZero();
  if (auto i = dyn_cast<IntegerAttr>(a))
    return !i.getValue().isZero();
  return false;
}

bool isOne(Attribute a) {
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValue().isExactlyValue(1.0);
  if (auto i = dyn_cast<IntegerAttr>(a))
    return i.getValue().isOne() ||
           (i.getType().isInteger(1) && !i.getValue().isZero());
  return false;
}

/// The band of a non-zero pattern `nz` over [..., rows, cols]: every row of
/// every leading index must be the same band.
std::optional<Band> patternBand(ArrayRef<bool> nz, int64_t rows, int64_t cols,
                                bool unit) {
  // Row 0 decides the direction and k: a suffix of non-zeros from column k
  // (upper) or a prefix up to column k (lower); an all-zero or all-non-zero
  // row 0 takes the direction row 1 shows.
  auto rowBand = [&](int64_t r, bool upper) -> std::optional<int64_t> {
    const bool *row = nz.data() + r * cols;
    int64_t first = llvm::find(ArrayRef(row, cols), true) - row;
    int64_t last = cols - 1 -
                   (llvm::find(llvm::reverse(ArrayRef(row, cols)), true) -
                    ArrayRef(row, cols).rbegin());
    if (first == cols)
      return std::nullopt; // no non-zero: the row fixes no k
    if (upper ? last != cols - 1 : first != 0)
      return std::nullopt;
    for (int64_t c = first; c <= last; ++c)
      if (!row[c])
        return std::nullopt;
    return upper ? first - r : last - r;
  };
  for (bool upper : {true, false}) {
    std::optional<int64_t> k;
    for (int64_t r = 0; r < rows && !k; ++r)
      k = rowBand(r, upper);
    if (!k)
      continue;
    Band band{upper, *k, unit};
    bool ok = true;
    for (int64_t i = 0, n = nz.size(); i < n && ok; ++i) {
      int64_t r = (i / cols) % rows, c = i % cols;
      ok = nz[i] == (upper ? c - r >= *k : c - r <= *k);
    }
    if (ok)
      return band;
  }
  return std::nullopt;
}

/// A constant's band: a splat is everywhere or nowhere; otherwise every
/// row of every leading index must be the same band.
std::optional<Band> constantBand(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  if (attr.isSplat()) {
    Attribute e = attr.getSplatValue<Attribute>();
    return isNonZero(e) ? Band::everywhere(isOne(e)) : Band::nowhere();
  }
  if (type.getRank() < 2)
    return std::nullopt;
  SmallVector<bool> nz;
  nz.reserve(type.getNumElements());
  bool unit = true;
  for (Attribute e : attr.getValues<Attribute>()) {
    nz.push_back(isNonZero(e));
    unit &= !nz.back() || isOne(e);
  }
  return patternBand(nz, type.getDimSize(type.getRank() - 2),
                     type.getDimSize(type.getRank() - 1), unit);
}

/// The band of `v` by its definition, if the ops defining it keep one.
std::optional<Band> bandOf(Value v, int depth = 0) {
  Operation *op = v.getDefiningOp();
  if (!op || depth > 16)
    return std::nullopt;
  ArrayRef<int64_t> shape = shapeOf(v);
  auto lastTwoKept = [&](Value in) {
    ArrayRef<int64_t> s = shapeOf(in);
    return s.size() >= 2 && shape.size() >= 2 &&
           s.take_back(2) == shape.take_back(2);
  };
  if (auto c = dyn_cast<ConstantOp>(op))
    return constantBand(c.getValue());
  if (auto n = dyn_cast<NotOp>(op)) {
    auto b = bandOf(n.getInput(), depth + 1);
    return b ? std::optional(b->complement()) : std::nullopt;
  }
  if (auto cast = dyn_cast<CastOp>(op)) {
    auto b = bandOf(cast.getInput(), depth + 1);
    // Non-zero stays non-zero into a boolean, or from values 0 and 1.
    if (!b || !(b->unit || cast.getTo().isInteger(1)))
      return std::nullopt;
    b->unit = true;
    return b;
  }
  if (auto eq = dyn_cast<EqualOp>(op)) {
    for (auto [x, c] : {std::pair{eq.getLhs(), eq.getRhs()},
                        std::pair{eq.getRhs(), eq.getLhs()}}) {
      ElementsAttr attr;
      if (shapeOf(x) != shape || numElements(shapeOf(c)) != 1 ||
          !matchPattern(c, m_Constant(&attr)))
        continue;
      auto b = bandOf(x, depth + 1);
      Attribute e = attr.getSplatValue<Attribute>();
      if (!b)
        return std::nullopt;
      if (!isNonZero(e))
        return b->complement();
      if (isOne(e) && b->unit)
        return b;
      return std::nullopt;
    }
    return std::nullopt;
  }
  if (auto t = dyn_cast<TriluOp>(op)) {
    auto b = bandOf(t.getInput(), depth + 1);
    if (!b)
      return std::nullopt;
    if (b->isNowhere())
      return b;
    Band kept{t.getUpper(), t.getK(), b->unit};
    if (b->isEverywhere())
      return kept;
    if (b->upper != kept.upper)
      return std::nullopt; // a diagonal strip, not a band
    kept.k = kept.upper ? std::max(kept.k, b->k) : std::min(kept.k, b->k);
    return kept;
  }
  if (auto s = dyn_cast<SliceOp>(op)) {
    ArrayRef<int64_t> starts = s.getStarts(), steps = s.getSteps();
    size_t rank = starts.size();
    if (rank < 2 || steps[rank - 1] != 1 || steps[rank - 2] != 1)
      return std::nullopt;
    auto b = bandOf(s.getInput(), depth + 1);
    if (!b || b->isEverywhere() || b->isNowhere())
      return b;
    // (r, c) of the slice is (r + sr, c + sc) of the input.
    b->k -= starts[rank - 1] - starts[rank - 2];
    return b;
  }
  if (isa<ReshapeOp, ExpandOp>(op)) {
    Value in = op->getOperand(0);
    auto b = bandOf(in, depth + 1);
    if (b && (b->isEverywhere() || b->isNowhere() || lastTwoKept(in)))
      return b;
    return std::nullopt;
  }
  return std::nullopt;
}

/// Whether `mask`'s last two dimensions are `op`'s score rows and key
/// columns, not broadcast: a band over them is one over the scores.
bool spansScores(AttentionOp op, Value mask) {
  ArrayRef<int64_t> q = shapeOf(op.getQuery()), k = shapeOf(op.getKey()),
                    m = shapeOf(mask);
  return m.size() >= 2 && m[m.size() - 2] == q[q.size() - 2] &&
         m.back() == k[k.size() - 2];
}

/// The band `op`'s hide operand hides, where it is one the kernels compute
/// by index: c - r >= k (or nothing).
std::optional<Band> hideBand(AttentionOp op) {
  Value hide = op.getHide();
  if (!hide || op.getRingAxes() || !spansScores(op, hide))
    return std::nullopt;
  auto band = bandOf(hide);
  if (!band || (!band->upper && !band->isNowhere()) || band->isEverywhere())
    return std::nullopt;
  return band;
}

/// Whether `op`'s hidden scores drop out of its softmax as under an -inf
/// fill, for a band hiding c - r >= k: an -inf fill, or a finite fill far
/// below any score (torch.finfo.min, as Hugging Face exports write it)
/// when every row keeps a key (k >= 1), since exp of it underflows to 0.
bool fillHides(AttentionOp op, int64_t k) {
  double fill = op.getFill().convertToDouble();
  if (std::isinf(fill))
    return fill < 0;
  return fill <= -1e30 && k >= 1;
}

/// Mask values at or under this hide a key as the kernels skip it: they
/// bound a row's scores by |scale| ||q|| max ||k|| and skip a tile whose
/// bounded scores plus mask stay 104 under the row's maximum, which a mask
/// of -1000 or less does for scores under ~450 in magnitude (softmax inputs
/// of trained models are far smaller).
constexpr double kHidingAddend = -1000;

/// The band of an additive mask whose non-zero values are all at most
/// kHidingAddend: a constant holding them, or a band of ones times such a
/// scalar (torch's `triu(ones, 1) * -10000`, which the exporter leaves
/// unfolded).
std::optional<Band> hidingAddendBand(Value mask) {
  ArrayRef<int64_t> m = shapeOf(mask);
  if (m.size() < 2)
    return std::nullopt;
  ElementsAttr attr;
  if (matchPattern(mask, m_Constant(&attr))) {
    auto dense = dyn_cast<DenseElementsAttr>(attr);
    if (!dense || dense.isSplat())
      return std::nullopt;
    SmallVector<bool> nz;
    nz.reserve(dense.getNumElements());
    for (const APFloat &v : dense.getValues<APFloat>()) {
      nz.push_back(!v.isZero());
      if (nz.back() && !(v.convertToDouble() <= kHidingAddend))
        return std::nullopt;
    }
    return patternBand(nz, m[m.size() - 2], m.back(), /*unit=*/false);
  }
  auto mul = mask.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  for (auto [x, c] : {std::pair{mul.getLhs(), mul.getRhs()},
                      std::pair{mul.getRhs(), mul.getLhs()}}) {
    if (numElements(shapeOf(c)) != 1 || shapeOf(x) != m ||
        !matchPattern(c, m_Constant(&attr)))
      continue;
    auto value = dyn_cast<FloatAttr>(attr.getSplatValue<Attribute>());
    std::optional<Band> band = bandOf(x);
    if (value && value.getValueAsDouble() <= kHidingAddend && band &&
        band->unit)
      return band;
  }
  return std::nullopt;
}

/// The band c - r >= k (k >= 1: every row keeps a key) that an additive
/// mask hides by adding kHidingAddend or less: Megatron's -10000 triangle,
/// which the kernels skip as they skip a causal band.
std::optional<int64_t> additiveBand(AttentionOp op) {
  Value mask = op.getMask();
  if (!mask || op.getHide() || op.getHideFromAttr() || op.getRingAxes() ||
      !spansScores(op, mask))
    return std::nullopt;
  std::optional<Band> band = hidingAddendBand(mask);
  if (!band || !band->upper || band->isEverywhere() || band->isNowhere() ||
      band->k < 1)
    return std::nullopt;
  return band->k;
}

/// Replaces `op`'s hide operand by hide_from where it is a band; whether
/// it did. A fill that hides as -inf does becomes -inf: the kernels then
/// skip the hidden pairs.
bool raiseCausalMask(AttentionOp op) {
  std::optional<Band> band = hideBand(op);
  if (!band)
    return false;
  op.getHideMutable().clear();
  if (!band->isNowhere()) {
    op.setHideFromAttr(
        IntegerAttr::get(IntegerType::get(op.getContext(), 64), band->k));
    if (fillHides(op, band->k))
      op.setFillAttr(FloatAttr::get(Float64Type::get(op.getContext()),
                                    -std::numeric_limits<double>::infinity()));
  }
  return true;
}

/// Erases `op` and the ops feeding only it, while they are trivially dead.
void eraseDeadChain(Operation *op) {
  SmallVector<Operation *> work{op};
  while (!work.empty()) {
    Operation *o = work.pop_back_val();
    if (!o || !isOpTriviallyDead(o))
      continue;
    for (Value v : o->getOperands())
      work.push_back(v.getDefiningOp());
    o->erase();
  }
}

struct RaiseCausalMasksPass : impl::RaiseCausalMasksBase<RaiseCausalMasksPass> {
  void runOnOperation() override {
    if (failed(raiseCausalMasks(getOperation())))
      signalPassFailure();
  }
};

} // namespace

double visibleScoreFraction(Operation *attention) {
  auto op = dyn_cast<AttentionOp>(attention);
  if (!op)
    return 1;
  std::optional<int64_t> from;
  if (auto attr = op.getHideFromAttr())
    from = attr.getInt();
  else if (std::optional<Band> band = hideBand(op))
    from = band->isNowhere() ? kFar : band->k;
  // Hidden scores under another fill still count in the softmax: the
  // kernels skip them only when it hides as -inf (raiseCausalMask), or when
  // an additive mask puts them far under the rows' maxima.
  if (!from || !fillHides(op, *from))
    from = additiveBand(op);
  if (!from)
    return 1;
  // Row r sees the keys c < r + k: none for r < a, r + k for a <= r < b,
  // all of them from b on.
  int64_t rows = shapeOf(op.getQuery()).drop_back().back(),
          keys = shapeOf(op.getKey()).drop_back().back(), k = *from;
  if (!rows || !keys)
    return 1;
  int64_t a = std::clamp<int64_t>(1 - k, 0, rows),
          b = std::clamp<int64_t>(keys - k, a, rows);
  double seen = double(b - a) * double(a + b - 1) / 2 + double(k) * (b - a) +
                double(keys) * double(rows - b);
  return seen / (double(rows) * double(keys));
}

// A walk, not the greedy driver: that would also fold and hoist constants,
// moving them out of the pipeline stage that uses them.
LogicalResult raiseCausalMasks(func::FuncOp fn) {
  SmallVector<AttentionOp> attentions;
  fn.walk([&](AttentionOp op) { attentions.push_back(op); });
  for (AttentionOp op : attentions) {
    Operation *mask = op.getHide() ? op.getHide().getDefiningOp() : nullptr;
    if (raiseCausalMask(op) && mask)
      eraseDeadChain(mask);
  }
  return success();
}

} // namespace pcc
