//===- RecurrentConverters.cpp - LSTM, GRU and RNN as unrolled cells ------===//
//
// ONNX's recurrent ops become their cell's formula repeated over the
// (static) sequence: the input projection X W^T + Wb for every step is one
// GEMM over the whole sequence; each step adds H R^T, applies the gates'
// activations and updates the state; the steps' states are concatenated
// into Y. Forward, reverse and bidirectional; initial states; batch-major
// layout; LSTM peepholes. Everything is matmuls, slices, concatenations and
// elementwise ops that every target runs and every strategy splits. Refused
// cleanly: sequence_lens other than the full length, clip, LSTM's
// input_forget, and activations other than Sigmoid, Tanh and Relu.
//
//===----------------------------------------------------------------------===//

#include "ExprBuilder.h"

#include <limits>

using namespace mlir;

namespace pcc::import {
namespace {

enum class Cell { Lstm, Gru, Rnn };

/// The cell's gate count and default activations (ONNX order).
int gatesOf(Cell cell) { return cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1; }
SmallVector<std::string> defaultActivations(Cell cell) {
  if (cell == Cell::Lstm)
    return {"Sigmoid", "Tanh", "Tanh"};
  if (cell == Cell::Gru)
    return {"Sigmoid", "Tanh"};
  return {"Tanh"};
}

/// What every step of one direction reads.
struct Direction {
  Value xw;        // [seq, batch, G*h]: X W^T + Wb (+ Rb where it may be)
  Value rT;        // [h, G*h]
  Value rb;        // [G*h] (GRU: added to H R^T), or null
  Value h0, c0;    // [batch, h]
  Value pi, po, pf; // LSTM peepholes [h], or null
  SmallVector<std::string> act;
};

class Unroller {
public:
  Unroller(NodeContext &c, Cell cell) : c(c), e(c), cell(cell) {}
  Results run();

private:
  Value slice(Value x, int64_t axis, int64_t start, int64_t size) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
    SmallVector<int64_t> starts(shape.size(), 0), sizes(shape),
        steps(shape.size(), 1);
    starts[axis] = start;
    sizes[axis] = size;
    return e.take(c.build1<SliceOp>(x, {c.i64s("starts", starts),
                                        c.i64s("sizes", sizes),
                                        c.i64s("steps", steps)}));
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return e.take(c.build1<ReshapeOp>(x, {c.i64s("shape", shape)}));
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    return e.take(c.build1<TransposeOp>(x, {c.i64s("perm", perm)}));
  }
  Value concat(ValueRange parts, int64_t axis) {
    if (parts.size() == 1)
      return parts[0];
    return e.take(c.build1<ConcatOp>(parts, {c.i64("axis", axis)}));
  }
  Value matmul(Value a, Value b) { return e.take(c.build1<MatMulOp>(ValueRange{a, b})); }
  Value activation(StringRef name, Value x) {
    if (name == "Sigmoid")
      return e.op<SigmoidOp>(x);
    if (name == "Tanh")
      return e.op<TanhOp>(x);
    return e.op<ReluOp>(x); // checked in run()
  }
  /// Gate `g` of `x` [batch, G*h].
  Value gate(Value x, int64_t g) { return slice(x, 1, g * hidden, hidden); }
  /// Input `i` of [dirs, ...] for direction `d`, its first axis dropped, or
  /// `fallback` when absent.
  Value perDirection(size_t i, int64_t d) {
    Value v = c.input(i);
    ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
    return reshape(slice(v, 0, d, 1), shape.drop_front());
  }
  LogicalResult prepare(Direction &dir, int64_t d, Value x);
  /// One step: the new hidden state (and, for LSTM, cell state).
  std::pair<Value, Value> step(const Direction &dir, Value xt, Value h,
                               Value cs);

  NodeContext &c;
  Expr e;
  Cell cell;
  int64_t seq = 0, batch = 0, hidden = 0;
  bool linearBeforeReset = false;
};

LogicalResult Unroller::prepare(Direction &dir, int64_t d, Value x) {
  int64_t g = gatesOf(cell);
  Value w = perDirection(1, d); // [G*h, input]
  Value r = perDirection(2, d); // [G*h, h]
  dir.xw = matmul(x, transpose(w, {1, 0}));
  dir.rT = transpose(r, {1, 0});
  if (c.input(3) && cast<RankedTensorType>(c.input(3).getType()).getNumElements()) {
    Value b = perDirection(3, d); // [2*G*h]: Wb then Rb
    Value wb = slice(b, 0, 0, g * hidden), rb = slice(b, 0, g * hidden, g * hidden);
    if (cell == Cell::Gru) {
      // GRU's Rbh sits inside the reset gate's product.
      dir.xw = e.op<AddOp>(dir.xw, wb);
      dir.rb = rb;
    } else {
      dir.xw = e.op<AddOp>(dir.xw, e.op<AddOp>(wb, rb));
    }
  }
  auto state = [&](size_t i) {
    if (c.input(i) && cast<RankedTensorType>(c.input(i).getType()).getNumElements())
      return perDirection(i, d);
    auto type = RankedTensorType::get({batch, hidden}, e.elem);
    return c.constant(DenseElementsAttr::get(
        type, APFloat::getZero(cast<FloatType>(e.elem).getFloatSemantics())));
  };
  dir.h0 = state(5);
  if (cell == Cell::Lstm)
    dir.c0 = state(6);
  if (cell == Cell::Lstm && c.input(7) &&
      cast<RankedTensorType>(c.input(7).getType()).getNumElements()) {
    Value p = perDirection(7, d); // [3*h]: i, o, f
    dir.pi = slice(p, 0, 0, hidden);
    dir.po = slice(p, 0, hidden, hidden);
    dir.pf = slice(p, 0, 2 * hidden, hidden);
  }
  return failure(e.anyFailed());
}

std::pair<Value, Value> Unroller::step(const Direction &dir, Value xt, Value h,
                                       Value cs) {
  Value hr = matmul(h, dir.rT); // [batch, G*h]
  if (cell == Cell::Rnn)
    return {activation(dir.act[0], e.op<AddOp>(xt, hr)), Value()};
  if (cell == Cell::Lstm) {
    Value sum = e.op<AddOp>(xt, hr);
    auto peep = [&](Value pre, Value p, Value state) {
      return p ? e.op<AddOp>(pre, e.op<MulOp>(p, state)) : pre;
    };
    Value i = activation(dir.act[0], peep(gate(sum, 0), dir.pi, cs));
    Value f = activation(dir.act[0], peep(gate(sum, 2), dir.pf, cs));
    Value cand = activation(dir.act[1], gate(sum, 3));
    Value next = e.op<AddOp>(e.op<MulOp>(f, cs), e.op<MulOp>(i, cand));
    Value o = activation(dir.act[0], peep(gate(sum, 1), dir.po, next));
    return {e.op<MulOp>(o, activation(dir.act[2], next)), next};
  }
  if (dir.rb)
    hr = e.op<AddOp>(hr, dir.rb);
  Value z = activation(dir.act[0], e.op<AddOp>(gate(xt, 0), gate(hr, 0)));
  Value r = activation(dir.act[0], e.op<AddOp>(gate(xt, 1), gate(hr, 1)));
  Value hPart;
  if (linearBeforeReset) {
    hPart = e.op<MulOp>(r, gate(hr, 2));
  } else {
    // (r * H) R_h^T + Rb_h
    Value rh = slice(dir.rT, 1, 2 * hidden, hidden);
    hPart = matmul(e.op<MulOp>(r, h), rh);
    if (dir.rb)
      hPart = e.op<AddOp>(hPart, slice(dir.rb, 0, 2 * hidden, hidden));
  }
  Value cand = activation(dir.act[1], e.op<AddOp>(gate(xt, 2), hPart));
  // (1 - z) * cand + z * H = cand + z * (H - cand)
  return {e.op<AddOp>(cand, e.op<MulOp>(z, e.op<SubOp>(h, cand))), Value()};
}

Results Unroller::run() {
  if (c.node.input_size() < 3 || !c.input(0) || !c.input(1) || !c.input(2))
    return c.error() << c.node.op_type() << " needs X, W and R";
  auto xType = c.inputType(0);
  e.elem = xType.getElementType();
  if (!isa<FloatType>(e.elem) || xType.getRank() != 3)
    return c.error() << c.node.op_type()
                     << " needs a 3-D floating-point X";
  auto refuse = [&](StringRef what) -> Results {
    return c.error() << c.node.op_type() << " with " << what
                     << " is not supported";
  };
  if (c.attr("clip"))
    return refuse("clip");
  if (c.intAttr("input_forget", 0))
    return refuse("input_forget");
  bool batchMajor = c.intAttr("layout", 0) == 1;
  Value x = c.input(0);
  if (batchMajor)
    x = transpose(x, {1, 0, 2});
  ArrayRef<int64_t> xs = cast<RankedTensorType>(x.getType()).getShape();
  seq = xs[0], batch = xs[1];
  hidden = c.intAttr("hidden_size", 0);
  if (hidden <= 0 || hidden > std::numeric_limits<int32_t>::max())
    return c.error() << c.node.op_type()
                     << " needs a hidden_size from 1 to 2^31-1";
  if (c.node.input_size() > 4 && !c.node.input(4).empty()) {
    auto lens = c.constInts(4, "sequence_lens");
    if (failed(lens))
      return failure();
    for (int64_t l : *lens)
      if (l != seq)
        return refuse("sequence_lens shorter than the sequence");
  }
  linearBeforeReset = c.intAttr("linear_before_reset", 0) != 0;
  std::string direction = c.stringAttr("direction", "forward");
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return c.error() << "unknown direction '" << direction << "'";
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  SmallVector<std::string> acts;
  if (const onnx::AttributeProto *a = c.attr("activations"))
    for (const std::string &name : a->strings())
      acts.push_back(name);
  SmallVector<std::string> defaults = defaultActivations(cell);
  if (acts.empty())
    for (int64_t d = 0; d < dirs; ++d)
      acts.append(defaults.begin(), defaults.end());
  if (acts.size() != defaults.size() * dirs)
    return c.error() << c.node.op_type() << " needs " << defaults.size() * dirs
                     << " activations, has " << acts.size();
  for (const std::string &a : acts)
    if (a != "Sigmoid" && a != "Tanh" && a != "Relu")
      return refuse("activation " + a);

  // The weights and states ONNX's shapes say, before anything is sliced.
  int64_t gates = gatesOf(cell) * hidden, inputSize = xs[2];
  auto expect = [&](size_t i, StringRef name,
                    ArrayRef<int64_t> want) -> LogicalResult {
    if (c.node.input_size() <= int(i) || !c.input(i))
      return success();
    auto type = cast<RankedTensorType>(c.input(i).getType());
    if (i != 1 && i != 2 && type.getNumElements() == 0)
      return success(); // an empty optional input: absent
    if (type.getShape() == want)
      return success();
    auto diag = c.error();
    diag << c.node.op_type() << " input " << name << " has shape [";
    llvm::interleaveComma(type.getShape(), diag);
    diag << "], expected [";
    llvm::interleaveComma(want, diag);
    return diag << "]";
  };
  if (failed(expect(1, "W", {dirs, gates, inputSize})) ||
      failed(expect(2, "R", {dirs, gates, hidden})) ||
      failed(expect(3, "B", {dirs, 2 * gates})) ||
      failed(expect(5, "initial_h", {dirs, batch, hidden})) ||
      (cell == Cell::Lstm &&
       (failed(expect(6, "initial_c", {dirs, batch, hidden})) ||
        failed(expect(7, "P", {dirs, 3 * hidden})))))
    return failure();
  // Each time step unrolls into ~20 ops: as If/Loop, a bounded import.
  if (seq * dirs > kMaxUnrolledNodes / 20)
    return c.error() << c.node.op_type() << " over " << seq << " steps"
                     << (dirs > 1 ? " in both directions" : "")
                     << " is too long to unroll at import (at most "
                     << kMaxUnrolledNodes / 20 << " steps)";

  SmallVector<Value> ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    Direction dir;
    dir.act.assign(acts.begin() + d * defaults.size(),
                   acts.begin() + (d + 1) * defaults.size());
    if (failed(prepare(dir, d, x)))
      return failure();
    bool backwards = direction == "reverse" || d == 1;
    SmallVector<Value> steps(seq);
    Value h = dir.h0, cstate = dir.c0;
    for (int64_t k = 0; k < seq; ++k) {
      int64_t t = backwards ? seq - 1 - k : k;
      Value xt = reshape(slice(dir.xw, 0, t, 1),
                         {batch, gatesOf(cell) * hidden});
      std::tie(h, cstate) = step(dir, xt, h, cstate);
      steps[t] = reshape(h, {1, 1, batch, hidden});
    }
    ys.push_back(concat(steps, 0));
    hs.push_back(reshape(h, {1, batch, hidden}));
    if (cstate)
      cs.push_back(reshape(cstate, {1, batch, hidden}));
  }
  Value y = concat(ys, 1);         // [seq, dirs, batch, h]
  Value yh = concat(hs, 0);        // [dirs, batch, h]
  Value yc = cs.empty() ? Value() : concat(cs, 0);
  if (batchMajor) {
    y = transpose(y, {2, 0, 1, 3}); // [batch, seq, dirs, h]
    yh = transpose(yh, {1, 0, 2});
    if (yc)
      yc = transpose(yc, {1, 0, 2});
  }
  if (e.anyFailed())
    return failure();
  SmallVector<Value> results{y, yh};
  if (cell == Cell::Lstm)
    results.push_back(yc);
  return results;
}

} // namespace

void addRecurrentConverters(llvm::StringMap<Converter> &t) {
  t["LSTM"] = [](NodeContext &c) { return Unroller(c, Cell::Lstm).run(); };
  t["GRU"] = [](NodeContext &c) { return Unroller(c, Cell::Gru).run(); };
  t["RNN"] = [](NodeContext &c) { return Unroller(c, Cell::Rnn).run(); };
}

} // namespace pcc::import
