//===- BackwardCollectives.cpp - what a layout's backward pass exchanges --===//
//
// The backward pass runs each op's gradient on the op's own blocks: an
// operand's gradient comes out in the operand's layout, a partial sum over
// each axis the op's results are split or summed over that the operand
// does not carry (Megatron's f: a column-parallel layer's input gradient).
// The gradients reaching a value are summed, then resharded to the layout
// its producer made it in, whole: the steps of planReshard, as the
// partitioner emits them for the training step. A weight's gradient reads
// the product's input again: gathered again where the forward gathered it
// (weightGradientGather).
//
//===----------------------------------------------------------------------===//

#include "pcc/Plan/ShardingSearch.h"

#include "GradientProducts.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Sharding/ParallelPlan.h"
#include "pcc/Sharding/Reshard.h"
#include "pcc/Sharding/ShardingRules.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <functional>
#include <map>
#include <set>
#include <tuple>

using namespace mlir;

namespace pcc {
namespace {

bool isFloat(Value v) {
  auto t = dyn_cast<ShapedType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

/// The gradient of operand `k` of an op laid out as `s`.
TensorSharding gradientLayout(const OpSharding &s, unsigned k) {
  TensorSharding grad = s.operands[k];
  grad.partial.clear();
  SmallVector<int64_t, 2> resultAxes;
  for (const TensorSharding &r : s.results) {
    llvm::append_range(resultAxes, r.partial);
    for (const DimSharding &d : r.dims)
      llvm::append_range(resultAxes, d.axes);
  }
  for (int64_t a : resultAxes)
    if (!s.operands[k].usesAxis(a) && !llvm::is_contained(grad.partial, a))
      grad.partial.push_back(a);
  return grad;
}

/// Whether `to` is `from`'s blocks cut further (each dimension split over
/// `from`'s axes and maybe more after them): reached by slicing alone.
bool slicesTo(const TensorSharding &from, const TensorSharding &to) {
  if (from.dims.size() != to.dims.size())
    return false;
  for (auto [f, t] : llvm::zip(from.dims, to.dims))
    if (f.isSplit() &&
        (f.groups != t.groups || t.axes.size() < f.axes.size() ||
         !llvm::equal(f.axes, ArrayRef(t.axes).take_front(f.axes.size()))))
      return false;
  return true;
}

/// Runs the unattached gradient product `prod` (destroyed here) on
/// operands held as `in`: laid out as its rule infers it (on the factor
/// gathered that moves fewest bytes where `weight`, the forward weight's
/// layout, is given: cheaperGatheredOperands), with the reshards of the
/// operands it reads otherwise appended to `steps` (a weight's bytes whole,
/// an activation's times `scale`; those `counts(k, layout)` declines are
/// left out: a panel another product gathered). Returns what it makes.
TensorSharding
runGradientProduct(Operation *prod, ArrayRef<TensorSharding> in,
                   const TensorSharding *weight, Value weightValue,
                   const Mesh &mesh, const CostModel &cost, double scale,
                   bool crossNode, SmallVectorImpl<PlannedCollective> &steps,
                   llvm::function_ref<bool(unsigned, const TensorSharding &)>
                       counts = nullptr) {
  OpSharding run = inferOpSharding(
      prod,
      weight ? cheaperGatheredOperands(prod, in, mesh, weight, scale)
             : SmallVector<TensorSharding>(in.begin(), in.end()),
      mesh);
  for (auto [k, v] : llvm::enumerate(prod->getOperands()))
    if (in[k] != run.operands[k] && (!counts || counts(k, run.operands[k])))
      reshardTime(in[k], run.operands[k],
                  v == weightValue ? double(tensorBytes(v))
                                   : tensorBytes(v) * scale,
                  mesh, crossNode, cost, &steps);
  TensorSharding made = run.results[0];
  prod->destroy();
  return made;
}

/// Whether dX = dY W^T of linear layer `op`, run on its output gradient as
/// it `arrived`, would gather the weight (held as `w`) by more bytes than
/// moving the gradient (a `scale` share of it a device) to the result's
/// layout `made` moves: the partitioner then moves the gradient
/// (TrainingPropagation's OutputGradients).
bool inputGradientGathersMore(Operation *op, const TensorSharding &w,
                              const TensorSharding &arrived,
                              const TensorSharding &made, const Mesh &mesh,
                              double scale) {
  Operation *prod = inputGradientProduct(op);
  if (!prod)
    return false;
  Value weight = op->getOperand(1);
  bool yFirst = prod->getOperand(0) == op->getResult(0);
  SmallVector<TensorSharding, 2> in = {yFirst ? arrived : w,
                                       yFirst ? w : arrived};
  OpSharding run = inferOpSharding(prod, in, mesh);
  unsigned wAt = yFirst ? 1 : 0;
  double gathered =
      run.operands.size() == 2
          ? stepsMovedBytes(planReshard(in[wAt], run.operands[wAt]),
                            double(tensorBytes(weight)), mesh)
          : 0;
  prod->destroy();
  double moved =
      stepsMovedBytes(planReshard(arrived, made),
                      double(tensorBytes(op->getResult(0))) * scale, mesh);
  return gathered > 0 && moved < gathered;
}

} // namespace

BackwardCollectives backwardCollectives(const PlanGraph &g, const Mesh &mesh,
                                        const CostModel &cost, double scale,
                                        bool crossNode, bool batchSplit,
                                        bool oneAxis,
                                        ArrayRef<NodeLayout> layouts) {
  BackwardCollectives out;
  int n = g.nodes.size();
  // A weight's partial gradient (of `bytes` on each device, made by node
  // i, partial over `axes`) joins the step's gradient sums: one bucket per
  // set of axes, each weight in it once (a table two lookups read).
  llvm::DenseMap<Value, double> partialWeights;
  auto sumWithGradients = [&](int i, Value w, double bytes,
                              ArrayRef<int64_t> axes) {
    double &held = partialWeights[w];
    held = std::max(held, bytes);
    if (!llvm::is_contained(out.partialGradientNodes, i))
      out.partialGradientNodes.push_back(i);
    SmallVector<int64_t, 2> set(axes.begin(), axes.end());
    llvm::sort(set);
    if (!llvm::is_contained(out.gradientSumAxes, set))
      out.gradientSumAxes.push_back(set);
  };
  // Copies after the second carry their first copy's layout.
  auto layoutOf = [&](int i) -> const OpSharding & {
    const OpSharding &own = layouts[i].sharding;
    return own.operands.size() == g.nodes[i].op->getNumOperands()
               ? own
               : layouts[g.representative(i)].sharding;
  };
  // Which nodes' results carry a gradient: those computed from a trained
  // weight.
  std::vector<bool> trained(n, false);
  // Which carry their gradient to weights alone, through ops that keep its
  // split (a ViT's patch embedding, class token and positions).
  std::vector<bool> toWeights(n, false);
  // The gradients reaching each (producer, result), by layout.
  std::map<std::pair<int, unsigned>, std::vector<TensorSharding>> reaching;
  // Who sent each of those, and in which layout (node, layout).
  std::map<std::pair<int, unsigned>,
           std::vector<std::pair<int, TensorSharding>>>
      pushed;
  // Products' operands read again by the backward: (node, operand,
  // producer, result).
  struct Reread {
    int node;
    unsigned operand;
    int producer;
    unsigned result;
  };
  SmallVector<Reread> rereads;
  // How each trained weight's gradient comes out of its readers.
  struct WeightGradient {
    bool partial = false, split = false;
  };
  llvm::MapVector<Value, WeightGradient> weightGradients;
  // SUMMA products' panels of their first operand, gathered or summed
  // (value, grid column axis, summed).
  llvm::DenseSet<std::tuple<Value, int64_t, int>> summaShared;
  // Weight-gradient products' gathered inputs (value, layout read).
  std::set<std::pair<const void *, std::string>> panels;
  for (int i = 0; i < n; ++i) {
    const PlanNode &node = g.nodes[i];
    Operation *op = node.op;
    const OpSharding &s = layoutOf(i);
    if (s.operands.size() != op->getNumOperands() ||
        !llvm::any_of(op->getResults(), isFloat))
      continue;
    auto isTrainedWeight = [&](unsigned k) {
      return op->getOperand(k).getDefiningOp<WeightOp>() &&
             isFloat(op->getOperand(k)) &&
             !llvm::is_contained(node.frozenWeights, k);
    };
    for (auto [k, p] : llvm::enumerate(node.producers))
      trained[i] =
          trained[i] || (p >= 0 ? bool(trained[p]) : isTrainedWeight(k));
    if (!trained[i])
      continue;
    // Ops that pass a gradient down in whatever split it comes (views and
    // sums) or turn it into weight gradients alone (a product or
    // convolution of a model input), down to weights only.
    bool passes = isa<ReshapeOp, TransposeOp, ExpandOp, ConcatOp, AddOp>(op);
    if (passes || isa<ConvOp, GemmOp, MatMulOp>(op))
      toWeights[i] = llvm::all_of(node.producers, [&](int p) {
        return p < 0 || !trained[p] || (passes && toWeights[p]);
      });
    if (auto attn = dyn_cast<AttentionOp>(op)) {
      SmallVector<PlannedCollective, 5> ring;
      ringAttentionBackward(attn, s, mesh, cost, scale, crossNode, &ring);
      for (PlannedCollective &pc : ring) {
        pc.node = i;
        out.collectives.push_back(pc);
      }
    }
    // Where operand k is kept: as stored (a weight, its view or a model
    // input stored apart from this op's read), or in its maker's layout.
    auto kept = [&](unsigned k) -> const TensorSharding & {
      if (k < s.storedOperands.size() && !s.storedOperands[k].dims.empty())
        return s.storedOperands[k];
      int q = node.producers[k];
      return q >= 0 ? layoutOf(q).results[cast<OpResult>(op->getOperand(k))
                                              .getResultNumber()]
                    : s.operands[k];
    };
    // A product run as SUMMA: its gradients' products run on gathered
    // panels: dX = dY W^T reads W gathered over the grid's rows and
    // reduce-scatters dX over its columns; dW = X^T dY runs on the factor
    // gathered that moves fewest bytes, as the partitioner chooses it
    // (cheaperGatheredOperands: X gathered over the columns and dW
    // reduce-scattered over the rows, or, where blocks hold few rows, both
    // factors' rows gathered and dW made whole).
    if (auto axes = summaAxes(op, s)) {
      auto [rows, cols] = *axes;
      // (dW's sum into the weight's layout runs once a step, on the
      // gradient the microbatches accumulated: weightSteps.)
      SmallVector<PlannedCollective, 4> steps, weightSteps;
      auto move = [&](const TensorSharding &layout, int64_t axis, bool sum,
                      double bytes, bool weight = false) {
        TensorSharding other = layout;
        other.gatherAxes([&](int64_t a) { return a == axis; });
        if (sum)
          other.partial.push_back(axis);
        reshardTime(sum ? other : layout, sum ? layout : other, bytes, mesh,
                    crossNode, cost, weight ? &weightSteps : &steps);
      };
      double x = tensorBytes(op->getOperand(0)) * scale,
             w = tensorBytes(op->getOperand(1));
      int p = node.producers[0];
      // Products that read one value (two decoder layers' cross-attention
      // keys and values of the encoder's output) share its gathered panel,
      // and sum their partial gradients of it before one reduce-scatter.
      auto first = [&](bool sum) {
        return summaShared.insert({op->getOperand(0), cols, int(sum)}).second;
      };
      if (p >= 0 && trained[p]) {
        move(s.operands[1], rows, false, w);
        if (first(true))
          move(s.operands[0], cols, true, x);
      }
      if (node.producers[1] >= 0 ? trained[node.producers[1]]
                                 : isTrainedWeight(1)) {
        Operation *dw = weightGradientProduct(op);
        if (!dw) {
          // (A model input stored whole is read whole: nothing gathered.)
          if ((p >= 0 || kept(0).usesAxis(cols)) && first(false))
            move(s.operands[0], cols, false, x);
          move(s.operands[1], rows, true, w, /*weight=*/true);
        } else {
          // Its operands as the backward holds them: x as made (a model
          // input as stored), the output gradient as the result.
          TensorSharding dy = s.results[0];
          dy.partial.clear();
          bool xFirst = dw->getOperand(0) == op->getOperand(0);
          SmallVector<TensorSharding, 2> in = {xFirst ? kept(0) : dy,
                                               xFirst ? dy : kept(0)};
          // A gathered x is shared by the products that read it.
          Value x = op->getOperand(0);
          unsigned xAt = xFirst ? 0 : 1;
          TensorSharding made = runGradientProduct(
              dw, in, &s.operands[1], Value(), mesh, cost, scale, crossNode,
              steps, [&](unsigned k, const TensorSharding &read) {
                return k != xAt ||
                       panels
                           .insert({x.getAsOpaquePointer(),
                                    describe(read, mesh)})
                           .second;
              });
          // The product's partial sum over the grid's feature axes (over
          // the depth it joins the gradients' bucket), into the weight's
          // layout.
          llvm::erase_if(made.partial, [&](int64_t a) {
            return !splitsFeatures(mesh.axisNames[a]);
          });
          reshardTime(made, s.operands[1], w, mesh, crossNode, cost,
                      &weightSteps);
        }
      }
      for (PlannedCollective &pc : steps) {
        pc.node = i;
        out.collectives.push_back(pc);
      }
      for (PlannedCollective &pc : weightSteps) {
        pc.node = i;
        out.perStep.push_back(pc);
      }
    }
    // A 3D product (x's contraction and the weight's split over one axis b,
    // the product a partial sum over it, the weight gathered from its
    // stored split): its gradient products read what the forward read
    // (TrainingPropagation's CubeGradients): the weight gathered again for
    // dX, x gathered again for dW. The output gradient comes back to the
    // product's rows, dX's partial sum reaches x's maker and dW's the
    // weight below, as every op's.
    bool cube = cubeContraction(op, s) && s.storedOperands.size() > 1 &&
                !s.storedOperands[1].dims.empty();
    if (cube) {
      SmallVector<PlannedCollective, 4> steps;
      int p = node.producers[0];
      if (p >= 0 && trained[p])
        reshardTime(kept(1), s.operands[1], tensorBytes(op->getOperand(1)),
                    mesh, crossNode, cost, &steps);
      if (p >= 0)
        reshardTime(kept(0), s.operands[0],
                    tensorBytes(op->getOperand(0)) * scale, mesh, crossNode,
                    cost, &steps);
      for (PlannedCollective &pc : steps) {
        pc.node = i;
        out.collectives.push_back(pc);
      }
    }
    // A weight the search stores split and gathers at use (1D): dX = dY W^T
    // gathers it again; its gradient is below.
    auto gatheredAtUse = [&](unsigned k) {
      return !cube && k < s.storedOperands.size() &&
             !s.storedOperands[k].dims.empty() && isTrainedWeight(k);
    };
    if (llvm::any_of(node.producers, [&](int p) { return p >= 0 && trained[p]; }))
      for (unsigned k = 0; k < op->getNumOperands(); ++k)
        if (gatheredAtUse(k)) {
          SmallVector<PlannedCollective, 1> steps;
          reshardTime(kept(k), s.operands[k], tensorBytes(op->getOperand(k)),
                      mesh, crossNode, cost, &steps);
          for (PlannedCollective &pc : steps) {
            pc.node = i;
            out.collectives.push_back(pc);
          }
        }
    // A layer norm over a split hidden dimension: its backward all-reduces
    // the statistics it recomputes (two; none where its input is kept
    // whole, as a ViT's first norm's sum of embeddings is, and sliced) and
    // its two sums over a row.
    if (auto ln = dyn_cast<LayerNormOp>(op);
        ln && s.operands[0].dims.back().isSplit()) {
      int sums = kept(0).dims.back().isSplit() ? 4 : 2;
      int64_t n = mesh.size(s.operands[0].dims.back().axes);
      TensorSharding lines = s.operands[0];
      lines.dims.back() = DimSharding();
      double bytes = tensorBytes(ln.getInput()) /
                     double(shapeOf(ln.getInput()).back()) * scale;
      double t = cost.collectiveTime(CollectiveKind::AllReduce,
                                     bytes / double(splitFactor(lines, mesh)),
                                     n, crossNode);
      for (int k = 0; k < sums; ++k)
        out.collectives.push_back({CollectiveKind::AllReduce, i, bytes, t});
    }
    // A softmax over a split axis: its gradient's sum along the axis
    // (of dy, or of dy * y) is all-reduced, one number a line.
    if (const DimSharding *d = splitSoftmaxAxis(op, s.results[0])) {
      int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
      int64_t n = mesh.size(d->axes);
      TensorSharding lines = s.results[0];
      lines.dims[axis] = DimSharding();
      double bytes = tensorBytes(op->getResult(0)) /
                     double(shapeOf(op->getResult(0))[axis]) * scale;
      double t = cost.collectiveTime(CollectiveKind::AllReduce,
                                     bytes / double(splitFactor(lines, mesh)),
                                     n, crossNode);
      out.collectives.push_back({CollectiveKind::AllReduce, i, bytes, t});
    }
    for (auto [k, p] : llvm::enumerate(node.producers)) {
      Value v = op->getOperand(k);
      if (!isFloat(v))
        continue;
      TensorSharding grad = gradientLayout(s, k);
      if (p < 0) {
        // A weight stored split: its partial gradient is reduce-scattered
        // into the split once a step, before the update (and summed over
        // dp there, on its part).
        // So is a 3D product's weight, stored split over x too: its
        // gradient product, run as the forward read it, is partial over x.
        bool storedCube = cube && k == 1 && isTrainedWeight(k);
        if ((gatheredAtUse(k) || storedCube) && !grad.partial.empty()) {
          SmallVector<PlannedCollective, 1> steps;
          reshardTime(grad, kept(k), tensorBytes(v), mesh, crossNode, cost,
                      &steps);
          for (PlannedCollective &pc : steps) {
            pc.node = i;
            out.storedScatters.push_back(pc);
          }
        } else if (isTrainedWeight(k) && !grad.partial.empty())
          sumWithGradients(i, v,
                           tensorBytes(v) / double(splitFactor(grad, mesh)),
                           grad.partial);
        if (isTrainedWeight(k)) {
          WeightGradient &w = weightGradients[v];
          w.partial |= !grad.partial.empty();
          w.split |= !grad.isReplicated();
        }
        continue;
      }
      unsigned r = cast<OpResult>(v).getResultNumber();
      // The input gathered again for the weight's gradient (below, once
      // the output gradient's layout is known; a 3D product's above).
      if (r < layoutOf(p).results.size() && !cube)
        rereads.push_back({i, unsigned(k), p, r});
      if (!trained[p])
        continue;
      std::vector<TensorSharding> &to = reaching[{p, r}];
      if (!llvm::is_contained(to, grad))
        to.push_back(grad);
      pushed[{p, r}].push_back({i, grad});
    }
  }
  // A linear layer whose output gradient arrives split, but not as its
  // result was made (a tied head's logits gradient split by vocabulary
  // from the loss, while the forward split the sequence), runs its two
  // gradient products on what arrives, as the partitioner lays them out by
  // their rules: dX = dY W^T on that split (a partial sum where it splits
  // the contraction, reduced where x is made), dW on the factor gathered
  // that moves fewest bytes (cheaperGatheredOperands). Rather than one
  // reshard of the gradient to the result's layout first.
  std::vector<bool> onArrival(n, false);
  for (int p = 0; p < n; ++p) {
    Operation *op = g.nodes[p].op;
    auto it = reaching.find({p, 0});
    if (!trained[p] || !linearLayer(op) || it == reaching.end() ||
        it->second.size() != 1 || summaAxes(op, layoutOf(p)) ||
        cubeContraction(op, layoutOf(p)))
      continue;
    const TensorSharding &arrived = it->second.front();
    TensorSharding made = layoutOf(p).results[0];
    made.partial.clear();
    onArrival[p] =
        arrived.partial.empty() && !arrived.isReplicated() && arrived != made &&
        !inputGradientGathersMore(op, layoutOf(p).operands[1], arrived, made,
                                  mesh, scale);
  }
  // Node `from`'s gradient for (q, r) is `layout` instead of what it sent.
  auto resend = [&](int from, int q, unsigned r, const TensorSharding &layout) {
    std::vector<std::pair<int, TensorSharding>> &list = pushed[{q, r}];
    std::vector<TensorSharding> &to = reaching[{q, r}];
    for (auto e = list.begin(); e != list.end();) {
      if (e->first != from) {
        ++e;
        continue;
      }
      TensorSharding old = e->second;
      e = list.erase(e);
      if (llvm::none_of(list, [&](auto &o) { return o.second == old; }))
        llvm::erase(to, old);
    }
    list.push_back({from, layout});
    if (!llvm::is_contained(to, layout))
      to.push_back(layout);
  };
  // Readers of each node's results: (node, operand).
  std::vector<SmallVector<std::pair<int, unsigned>, 2>> readers(n);
  for (int i = 0; i < n; ++i)
    for (auto [k, p] : llvm::enumerate(g.nodes[i].producers))
      if (p >= 0)
        readers[p].push_back({i, unsigned(k)});
  // Whether every reader of node i's result reads it without the axes its
  // layout splits it over, directly or through views that keep them: its
  // gradient then comes back whole (a loss reading logits gathered).
  std::function<bool(int, const TensorSharding &)> readWhole =
      [&](int i, const TensorSharding &split) {
        if (readers[i].empty())
          return false;
        for (auto [c, k] : readers[i]) {
          const OpSharding &sc = layoutOf(c);
          if (k >= sc.operands.size())
            return false;
          bool keeps = llvm::any_of(split.dims, [&](const DimSharding &d) {
            return llvm::any_of(d.axes, [&](int64_t a) {
              return sc.operands[k].usesAxis(a);
            });
          });
          if (keeps && !(g.nodes[c].view && readWhole(c, sc.results.front())))
            return false;
        }
        return true;
      };
  // The trained weights a value of weights alone is made from.
  std::function<SmallVector<Value>(int)> weightsBehind = [&](int i) {
    SmallVector<Value> out;
    for (auto [k, q] : llvm::enumerate(g.nodes[i].producers)) {
      Value v = g.nodes[i].op->getOperand(k);
      if (q >= 0)
        llvm::append_range(out, weightsBehind(q));
      else if (v.getDefiningOp<WeightOp>())
        out.push_back(v);
    }
    return out;
  };
  llvm::DenseSet<Value> gatheredOnce;
  std::set<std::pair<int, unsigned>> regathered;
  for (const Reread &rr : rereads) {
    if (onArrival[rr.node])
      continue;
    const OpSharding &s = layoutOf(rr.node);
    TensorSharding whole =
        TensorSharding::replicated(s.results.front().dims.size());
    SmallVector<PlannedCollective, 1> again;
    weightGradientGather(
        g, rr.node, rr.operand, s, layoutOf(rr.producer).results[rr.result],
        mesh, cost, scale, crossNode, &again,
        readWhole(rr.node, s.results.front()) ? &whole : nullptr);
    // Readers of one value gathering it again share the gather (the
    // partitioner reshards a value once per layout in the backward too).
    bool gathers = llvm::all_of(again, [](const PlannedCollective &pc) {
      return pc.kind == CollectiveKind::AllGather;
    });
    if (gathers && !again.empty() &&
        !regathered.insert({rr.producer, rr.result}).second)
      continue;
    for (PlannedCollective &pc : again) {
      pc.node = rr.node;
      out.collectives.push_back(pc);
    }
  }
  // A lookup's gradient arriving with its indices' dimensions split where
  // the forward read them whole (a position table looked up before the
  // sequence is split): GatherOp's rule contracts a one-hot of the indices
  // with it. The one-hot of token ids follows their split, and so does a
  // constant one-hot (positions) where the gradient is partial over the
  // data-parallel batch (a position table broadcast over it), the product
  // then running on what it reads: each device makes a partial gradient
  // of the whole table, reduce-scattered into the table's split over the
  // axes that split it, once a step as the update reads it
  // (TrainingLayouts::sumGradients), and summed with the gradients over the
  // others. Otherwise the partitioner gathers the gradient to the lookup's
  // layout, which moves fewer bytes (gatherCheaperFactor): false.
  auto lookupGradientAsArrived = [&](int p, GatherOp gather,
                                     const TensorSharding &kept,
                                     const TensorSharding &arrived) {
    Value table = gather.getInput(), indices = gather.getIndices();
    size_t rows = shapeOf(indices).size();
    size_t features = shapeOf(table).size();
    if (!arrived.partial.empty() || arrived.dims.size() != rows + features - 1)
      return false;
    TensorSharding grad = TensorSharding::replicated(features);
    for (size_t d = 1; d < features; ++d)
      grad.dims[d] = arrived.dims[rows + d - 1];
    for (size_t d = 0; d < rows; ++d)
      for (int64_t a : arrived.dims[d].axes)
        grad.partial.push_back(a);
    int q = g.nodes[p].producers[1];
    bool constant = q >= 0 ? g.nodes[q].madeOfConstants
                           : !isa<BlockArgument>(indices);
    if (!oneAxis || grad.partial.empty() || (constant && !batchSplit))
      return false;
    SmallVector<int64_t, 2> summed;
    for (int64_t a : grad.partial)
      if (!kept.usesAxis(a))
        summed.push_back(a);
    if (!summed.empty())
      sumWithGradients(p, table,
                       tensorBytes(table) / double(splitFactor(grad, mesh)),
                       summed);
    if (summed.size() == grad.partial.size())
      return true;
    TensorSharding into = kept;
    into.partial.assign(summed.begin(), summed.end());
    SmallVector<PlannedCollective, 1> steps;
    reshardTime(grad, into, tensorBytes(table), mesh, crossNode, cost, &steps);
    for (PlannedCollective &pc : steps) {
      pc.node = p;
      out.lookupScatters.push_back(pc);
    }
    return true;
  };
  // Last node first, so a sum's gradients reach its operands' makers
  // before those are resharded.
  for (auto it = reaching.rbegin(); it != reaching.rend(); ++it) {
    auto [p, r] = it->first;
    const std::vector<TensorSharding> &grads = it->second;
    const OpSharding &s = layoutOf(p);
    if (r >= s.results.size())
      continue;
    if (onArrival[p]) {
      Operation *op = g.nodes[p].op;
      SmallVector<PlannedCollective, 4> steps;
      const TensorSharding &dy = grads.front();
      TensorSharding w = s.operands[1];
      for (unsigned k = 0; k < 2; ++k) {
        int q = g.nodes[p].producers[k];
        bool carries = q >= 0 ? bool(trained[q]) : false;
        if (k == 0 && !carries)
          continue;
        Operation *prod =
            k == 0 ? inputGradientProduct(op) : weightGradientProduct(op);
        if (!prod)
          continue;
        bool yFirst = prod->getOperand(0) == op->getResult(0);
        // x as made (a model input as the op reads it).
        int q0 = g.nodes[p].producers[0];
        TensorSharding other =
            k == 0    ? w
            : q0 >= 0 ? layoutOf(q0).results[cast<OpResult>(op->getOperand(0))
                                                 .getResultNumber()]
                      : s.operands[0];
        other.partial.clear();
        // Operand k's gradient product as its rule lays it out on what
        // arrives, a weight's on the cheaper factor gathered.
        TensorSharding made = runGradientProduct(
            prod, {yFirst ? dy : other, yFirst ? other : dy},
            k == 1 ? &s.operands[1] : nullptr, op->getOperand(1), mesh, cost,
            scale, crossNode, steps);
        if (!carries)
          continue; // a weight's own partial sum: the gradients' bucket
        unsigned qr = cast<OpResult>(op->getOperand(k)).getResultNumber();
        resend(p, q, qr, made);
      }
      for (PlannedCollective &pc : steps) {
        pc.node = p;
        out.collectives.push_back(pc);
      }
      continue;
    }
    // A value of weights alone (a transposed weight) whose gradient comes
    // laid out as the value, or less split, but partial over axes the value
    // does not split (its readers' work split over axes the weight is
    // not): the weight's partial gradient, summed in the step's gradient
    // sums. (Partial over an axis the value splits further, as a 3D
    // weight's over x, it is reduce-scattered below.)
    if (g.nodes[p].derived && llvm::all_of(grads, [&](const TensorSharding &t) {
          return !t.partial.empty() && slicesTo(t, s.results[r]) &&
                 llvm::none_of(t.partial, [&](int64_t a) {
                   return s.results[r].usesAxis(a);
                 });
        })) {
      for (Value w : weightsBehind(p))
        if (weightGradients.count(w))
          sumWithGradients(
              p, w, tensorBytes(w) / double(splitFactor(grads.front(), mesh)),
              grads.front().partial);
      continue;
    }
    // A lookup in a table not split by rows (a position embedding under
    // sequence parallelism): each device's tokens give a partial gradient
    // of the whole table, summed in the step's gradient sums; a table
    // split by rows gathers the gradient instead (TableGradients in the
    // partitioner), the reshard below.
    if (auto gather = dyn_cast<GatherOp>(g.nodes[p].op);
        gather && g.nodes[p].producers[0] < 0 && !s.operands.empty() &&
        !s.operands[0].dims.front().isSplit() &&
        gather.getInput().getDefiningOp<WeightOp>()) {
      // (Only where the tokens are split: otherwise every device's
      // gradient is the whole one.)
      Value table = gather.getInput();
      if (TensorSharding grad = gradientLayout(s, 0); !grad.partial.empty()) {
        sumWithGradients(p, table,
                         tensorBytes(table) /
                             double(splitFactor(s.operands[0], mesh)),
                         grad.partial);
        continue;
      }
      if (!oneAxis || llvm::all_of(grads, [&](const TensorSharding &t) {
            return lookupGradientAsArrived(p, gather, s.operands[0], t);
          }))
        continue;
      // Otherwise the gradient is moved to the lookup's layout (below).
    }
    // A view whose forward gathered what it reads (a Conv1D layer's
    // flattening Reshape of a sequence-split norm output): a whole partial
    // gradient passes through it (the backward's view keeps the sum
    // partial) and is summed where its operand is made, in that layout (a
    // reduce-scatter onto the split, not an all-reduce here).
    if (isa<ReshapeOp, TransposeOp>(g.nodes[p].op) &&
        !g.nodes[p].producers.empty())
      if (int q = g.nodes[p].producers[0]; q >= 0 && trained[q]) {
        Value v = g.nodes[p].op->getOperand(0);
        auto wholePartial = [&](const TensorSharding &t) {
          return !t.partial.empty() && t == grads.front() &&
                 llvm::none_of(t.dims,
                               [](const DimSharding &d) { return d.isSplit(); });
        };
        unsigned qr = cast<OpResult>(v).getResultNumber();
        TensorSharding made = layoutOf(q).results[qr], read = s.operands[0];
        made.partial.clear();
        read.partial.clear();
        if (isFloat(v) && !grads.empty() && made != read &&
            llvm::all_of(grads, wholePartial)) {
          TensorSharding passed =
              TensorSharding::replicated(shapeOf(v).size());
          passed.partial = grads.front().partial;
          resend(p, q, qr, passed);
          continue;
        }
      }
    // A sum's gradient is each operand's, in the layout it arrives in
    // (reduced over a broadcast operand's dimensions first), resharded
    // where that operand is made; nothing here. So for a sum run on partial
    // operands (two vocabulary-parallel lookups added, summed once after),
    // and where gradients arrive whole and split (a residual stream that a
    // norm reads whole and an add reads on the sequence split): an add
    // reads nothing the forward saved, so the partitioner's rules sum them
    // on the most split, the others sliced to it, and pass that on.
    Operation *op = g.nodes[p].op;
    // (A gemm reduce-scattering its product before C takes the gradient
    // back onto the product's rows.)
    TensorSharding whole = r == 0 ? productBeforeBias(s) : s.results[r];
    whole.partial.clear();
    const TensorSharding *finest = nullptr;
    if (oneAxis && isa<AddOp, SubOp>(op) && s.results[r].partial.empty())
      for (const TensorSharding &t : grads)
        if (t.partial.empty() && t != whole &&
            llvm::all_of(grads, [&](const TensorSharding &o) {
              return slicesTo(o, t);
            }))
          finest = &t;
    if (finest || (isa<AddOp, SubOp>(op) && !s.results[r].partial.empty())) {
      ArrayRef<TensorSharding> passed =
          finest ? ArrayRef<TensorSharding>(*finest) : ArrayRef(grads);
      for (auto [k, q] : llvm::enumerate(g.nodes[p].producers)) {
        Value v = op->getOperand(k);
        if (q < 0 || !trained[q] || !isFloat(v))
          continue;
        ArrayRef<int64_t> shape = shapeOf(v);
        std::vector<TensorSharding> &to =
            reaching[{q, cast<OpResult>(v).getResultNumber()}];
        for (const TensorSharding &grad : passed) {
          // Right-aligned; a broadcast (size-1 or missing) dimension is
          // summed away whole.
          TensorSharding mine = TensorSharding::replicated(shape.size());
          size_t off = grad.dims.size() - shape.size();
          for (size_t d = 0; d < shape.size(); ++d)
            if (shape[d] == shapeOf(op->getResult(r))[d + off])
              mine.dims[d] = grad.dims[d + off];
          // (Summed on the finest, it replaces what the forward's layout
          // sent.)
          if (finest)
            resend(p, q, cast<OpResult>(v).getResultNumber(), mine);
          else if (!llvm::is_contained(to, mine))
            to.push_back(mine);
        }
      }
      continue;
    }
    // A value of weights alone (a relative-position bias looked up from
    // its table), or one whose gradient reaches weights alone through ops
    // that keep its split (toWeights: a ViT's embeddings, kept whole in the
    // forward), whose gradient comes split another way than it was made
    // (by heads, under Ulysses; by features, under a grid): its gradient
    // ops run on the split down to the weights, whose gradients are
    // gathered once before their update (and summed over the other axes
    // on their own).
    if ((g.nodes[p].derived || toWeights[p]) &&
        llvm::all_of(grads, [&](const TensorSharding &t) {
          return t.partial.empty() && t != whole;
        })) {
      SmallVector<int64_t, 2> axes;
      for (const TensorSharding &t : grads)
        for (const DimSharding &d : t.dims)
          for (int64_t a : d.axes)
            if (!whole.usesAxis(a) && !llvm::is_contained(axes, a))
              axes.push_back(a);
      for (Value w : weightsBehind(p)) {
        if (!weightGradients.count(w))
          continue;
        weightGradients[w].split = true;
        if (!gatheredOnce.insert(w).second || axes.empty())
          continue;
        // Its partial gradient is summed on the split too.
        if (auto it = partialWeights.find(w); it != partialWeights.end())
          it->second /= double(mesh.size(axes));
        out.perStep.push_back(
            {CollectiveKind::AllGather, p, double(tensorBytes(w)),
             cost.collectiveTime(CollectiveKind::AllGather,
                                 double(tensorBytes(w)), mesh.size(axes),
                                 crossNode)});
      }
      continue;
    }
    double bytes = g.resultBytes(p, r, scale);
    SmallVector<PlannedCollective, 2> steps;
    for (const TensorSharding &grad : grads)
      reshardTime(grad, whole, bytes, mesh, crossNode, cost, &steps);
    for (PlannedCollective &pc : steps) {
      pc.node = p;
      out.collectives.push_back(pc);
    }
  }
  for (auto &[w, bytes] : partialWeights)
    out.partialGradientBytes += bytes;
  for (auto &[w, how] : weightGradients)
    out.unsummedWeights += !partialWeights.count(w);
  for (auto &[w, how] : weightGradients)
    if (how.split && !how.partial)
      out.splitGradientBytes += tensorBytes(w);
  return out;
}

} // namespace pcc
