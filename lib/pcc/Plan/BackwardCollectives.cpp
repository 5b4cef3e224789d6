//===- BackwardCollectives.cpp - what a layout's backward pass exchanges --===//
//
// The backward pass runs each op's gradient on the op's own blocks: an
// operand's gradient comes out in the operand's layout, a partial sum over
// each axis the op's results are split or summed over that the operand
// does not carry (Megatron's f: a column-parallel layer's input gradient).
// The gradients reaching a value are summed, then resharded to the layout
// its producer made it in, whole: the steps of planReshard, as the
// partitioner emits them for the training step.
//
//===----------------------------------------------------------------------===//

#include "pcc/Plan/ShardingSearch.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include <map>

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

} // namespace

BackwardCollectives backwardCollectives(const PlanGraph &g, const Mesh &mesh,
                                        const CostModel &cost, double scale,
                                        bool crossNode,
                                        ArrayRef<NodeLayout> layouts) {
  BackwardCollectives out;
  int n = g.nodes.size();
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
  // The gradients reaching each (producer, result), by layout.
  std::map<std::pair<int, unsigned>, std::vector<TensorSharding>> reaching;
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
    for (auto [k, p] : llvm::enumerate(node.producers)) {
      Value v = op->getOperand(k);
      if (!isFloat(v))
        continue;
      TensorSharding grad = gradientLayout(s, k);
      if (p < 0) {
        // A weight's partial gradient joins the step's gradient sums.
        if (isTrainedWeight(k) && !grad.partial.empty()) {
          out.partialGradientBytes += tensorBytes(v);
          if (!llvm::is_contained(out.partialGradientNodes, i))
            out.partialGradientNodes.push_back(i);
        }
        continue;
      }
      if (!trained[p])
        continue;
      unsigned r = cast<OpResult>(v).getResultNumber();
      std::vector<TensorSharding> &to = reaching[{p, r}];
      if (!llvm::is_contained(to, grad))
        to.push_back(grad);
    }
  }
  for (auto &[where, grads] : reaching) {
    auto [p, r] = where;
    const OpSharding &s = layoutOf(p);
    if (r >= s.results.size())
      continue;
    TensorSharding whole = s.results[r];
    whole.partial.clear();
    double bytes = tensorBytes(g.nodes[p].op->getResult(r)) * scale;
    SmallVector<PlannedCollective, 2> steps;
    for (const TensorSharding &grad : grads)
      reshardTime(grad, whole, bytes, mesh, crossNode, cost, &steps);
    for (PlannedCollective &pc : steps) {
      pc.node = p;
      out.collectives.push_back(pc);
    }
  }
  return out;
}

} // namespace pcc
