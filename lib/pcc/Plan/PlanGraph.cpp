//===- PlanGraph.cpp - compute nodes, work per op, repeated blocks --------===//

#include "pcc/Plan/PlanGraph.h"

#include "pcc/Dialect/PCC/IR/Fusion.h"
#include "pcc/Dialect/PCC/IR/GemmOperands.h"

#include "pcc/Dialect/PCC/Transforms/Passes.h"
#include "pcc/Dialect/PCC/Transforms/Precision.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "pcc/Dialect/PCC/IR/GpuKernels.h"
#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Sharding/ShardingRules.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"

#include <functional>
#include <map>
#include <tuple>

using namespace mlir;

namespace pcc {

namespace {

std::string nodeName(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (!fused.getLocations().empty())
      loc = fused.getLocations().front();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return op->getName().getStringRef().str();
}

/// Whether copies [begin, begin + period * count) are wired alike: copy j
/// of node k reads what copy 0 reads, shifted by j blocks (its own block or
/// the previous one), or the very same producer before the block (a mask
/// shared by all layers); nodes after the block read only the last copy or
/// earlier nodes outside it.
bool wiredAlike(const PlanGraph &g, RepeatedBlock b) {
  for (int j = 1; j < b.count; ++j)
    for (int k = 0; k < b.period; ++k) {
      const PlanNode &first = g.nodes[b.begin + k];
      const PlanNode &copy = g.nodes[b.begin + j * b.period + k];
      for (auto [p0, p] : llvm::zip(first.producers, copy.producers)) {
        bool shifted = p0 >= 0 && p == p0 + j * b.period &&
                       p0 >= b.begin - b.period;
        if (!(p == p0 || shifted))
          return false;
        if (p == p0 && p0 >= b.begin)
          return false;
      }
    }
  int lastBegin = b.end() - b.period;
  for (int i = b.end(); i < int(g.nodes.size()); ++i)
    for (int p : g.nodes[i].producers)
      if (p >= b.begin && p < lastBegin)
        return false;
  return true;
}

/// Whether the block looks like a layer: more than one op, one of which
/// reads a weight; not a run of weightless ops that happen to repeat (two
/// slices of a fused QKV) nor two norms in a row (a layer's last and the
/// stack's final one).
bool isLayer(const PlanGraph &g, const RepeatedBlock &b) {
  if (b.period < 2)
    return false;
  for (int i = b.begin; i < b.begin + b.period; ++i)
    if (g.nodes[i].params > 0 || !g.nodes[i].sharedWeights.empty())
      return true;
  return false;
}

/// Finds repeated blocks: back-to-back copies of a run of node signatures
/// that are wired alike and look like layers. The one covering the most nodes
/// first (ties: more copies, then the earliest), then, greedily, others
/// outside those (an encoder's layers beside a decoder's). A periodic
/// run can be entered at any of its `period` phases; only some start where
/// a layer starts (the others break the residual wiring), so each phase is
/// tried.
std::vector<RepeatedBlock> findRepeatedBlocks(const PlanGraph &g) {
  int n = g.nodes.size();
  std::vector<llvm::hash_code> sig(n);
  for (int i = 0; i < n; ++i) {
    Operation *op = g.nodes[i].op;
    // pcc's own discardable marks (a pipeline stage, planned layouts, a
    // layer number) and a dropout's random stream (one per dropout) differ
    // between copies of one layer: not compared.
    llvm::hash_code h = llvm::hash_value(op->getName().getAsOpaquePointer());
    for (NamedAttribute a : op->getAttrs())
      if (!a.getName().strref().starts_with("pcc.") &&
          !(isa<DropoutOp>(op) &&
            a.getName() == DropoutOp::getStreamAttrName(op->getName())))
        h = llvm::hash_combine(h, a.getName().getAsOpaquePointer(),
                               a.getValue().getAsOpaquePointer());
    for (Type t : op->getOperandTypes())
      h = llvm::hash_combine(h, t.getAsOpaquePointer());
    for (Type t : op->getResultTypes())
      h = llvm::hash_combine(h, t.getAsOpaquePointer());
    sig[i] = h;
  }
  // Maximal p-periodic runs [start, start + length) of at least 2 periods.
  struct Run {
    int start, period, length;
  };
  std::vector<Run> runs;
  for (int p = 1; p <= n / 2; ++p) {
    int run = 0;
    for (int i = 0; i + p <= n; ++i) {
      bool match = i + p < n && sig[i] == sig[i + p];
      if (match) {
        ++run;
        continue;
      }
      if (run >= p)
        runs.push_back({i - run, p, run + p});
      run = 0;
    }
  }
  std::vector<RepeatedBlock> candidates;
  for (const Run &r : runs)
    for (int phase = 0; phase < r.period; ++phase)
      if (int count = (r.length - phase) / r.period; count >= 2)
        candidates.push_back({r.start + phase, r.period, count});
  llvm::stable_sort(candidates, [](const RepeatedBlock &a,
                                   const RepeatedBlock &b) {
    return std::tuple(a.period * a.count, a.count, -a.begin) >
           std::tuple(b.period * b.count, b.count, -b.begin);
  });
  std::vector<RepeatedBlock> blocks;
  for (const RepeatedBlock &b : candidates) {
    bool overlaps = llvm::any_of(blocks, [&](const RepeatedBlock &o) {
      return b.begin < o.end() && o.begin < b.end();
    });
    if (overlaps || !isLayer(g, b) || !wiredAlike(g, b))
      continue;
    blocks.push_back(b);
  }
  llvm::sort(blocks, [](const RepeatedBlock &a, const RepeatedBlock &b) {
    return a.begin < b.begin;
  });
  int layer = 0;
  for (RepeatedBlock &b : blocks) {
    b.firstLayer = layer;
    layer += b.count;
  }
  return blocks;
}

/// The compute ops in the order the planner sees them: program order, but
/// a side value that several ops read goes first (with what it reads), and
/// one read once goes right before its reader. Side values do not depend on
/// the model's first input (the one whose batch and tokens flow through the
/// layers): ops computed from weights and constants alone (`derived`: a
/// causal mask, a folded weight transpose) and from constants and the other
/// inputs alone (BERT's padding mask, which nn.TransformerEncoder makes in
/// its first layer and every layer reads; not a decoder's embedded tokens,
/// which read weights). Exporters put such ops wherever tracing met them,
/// which would break the layer pattern.
std::vector<Operation *> planOrder(func::FuncOp fn,
                                   llvm::DenseSet<Operation *> &derived) {
  std::vector<Operation *> ops;
  llvm::DenseSet<Operation *> side, maskLike;
  Value mainInput = fn.getNumArguments() ? fn.getArgument(0) : Value();
  for (Operation &op : fn.getBody().front().without_terminator()) {
    if (isa<WeightOp, ConstantOp>(op))
      continue;
    ops.push_back(&op);
    if (op.getNumOperands() == 0)
      continue;
    bool fromParameters = true, fromOtherInputs = true;
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      fromParameters &=
          def && (isa<WeightOp, ConstantOp>(def) || derived.count(def));
      fromOtherInputs &=
          def ? isa<ConstantOp>(def) || maskLike.count(def) : v != mainInput;
    }
    if (fromParameters)
      derived.insert(&op);
    if (fromOtherInputs && !fromParameters)
      maskLike.insert(&op);
    if (fromParameters || fromOtherInputs)
      side.insert(&op);
  }
  std::vector<Operation *> order;
  llvm::DenseSet<Operation *> placed;
  std::function<void(Operation *)> place = [&](Operation *op) {
    if (!placed.insert(op).second)
      return;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && side.count(def))
        place(def);
    order.push_back(op);
  };
  for (Operation *op : ops) {
    if (!side.count(op))
      continue;
    llvm::SmallPtrSet<Operation *, 4> readers;
    for (Operation *user : op->getUsers())
      if (!side.count(user) && !isa<func::ReturnOp>(user))
        readers.insert(user);
    if (readers.size() >= 2)
      place(op);
  }
  for (Operation *op : ops)
    if (!side.count(op))
      place(op);
  for (Operation *op : ops)
    place(op); // side ops only the function's results read
  return order;
}

/// Follows the batch split of the inputs through the sharding rules (as
/// data parallelism lays it out) and records which operand dimensions carry
/// the batch.
void markBatchDims(PlanGraph &g) {
  Mesh mesh;
  mesh.shape = {2};
  mesh.axisNames = {"dp"};
  llvm::DenseMap<Value, TensorSharding> layout;
  for (BlockArgument arg : g.fn.getArguments()) {
    auto t = cast<RankedTensorType>(arg.getType());
    TensorSharding s = TensorSharding::replicated(t.getRank());
    if (t.getRank() && t.getDimSize(0) % 2 == 0)
      s.dims[0].axes = {0};
    layout[arg] = s;
  }
  for (PlanNode &node : g.nodes) {
    SmallVector<TensorSharding> in;
    for (Value v : node.op->getOperands()) {
      auto it = layout.find(v);
      in.push_back(it != layout.end()
                       ? it->second
                       : TensorSharding::replicated(
                             cast<RankedTensorType>(v.getType()).getRank()));
    }
    OpSharding s = inferOpSharding(node.op, in, mesh);
    for (const TensorSharding &t : s.operands) {
      node.batchDims.emplace_back();
      for (const DimSharding &d : t.dims)
        node.batchDims.back().push_back(d.isSplit());
    }
    for (auto [r, t] : llvm::zip(node.op->getResults(), s.results)) {
      // pcc-partition keeps a split axis' sum partial: summed by one
      // all-reduce (the node's own, not passed on to its readers here).
      if (!t.partial.empty())
        g.batchSums.push_back(
            {int(&node - g.nodes.data()),
             double(typeOf(r).getNumElements()) * double(g.elementBytes),
             false});
      TensorSharding whole = t;
      whole.partial.clear();
      layout[r] = whole;
    }
  }
  // Coupled: what the sum feeds, through ops of batch-free values, meets
  // the batch again.
  std::vector<SmallVector<int, 2>> consumers(g.nodes.size());
  for (auto [i, node] : llvm::enumerate(g.nodes))
    for (int p : node.producers)
      if (p >= 0)
        consumers[p].push_back(i);
  auto carriesBatch = [&](const PlanNode &node) {
    return llvm::any_of(node.batchDims, [](ArrayRef<bool> d) {
      return llvm::is_contained(d, true);
    });
  };
  for (PlanGraph::BatchSum &sum : g.batchSums) {
    SmallVector<int> work(consumers[sum.node].begin(),
                          consumers[sum.node].end());
    llvm::DenseSet<int> seen;
    while (!work.empty() && !sum.coupled) {
      int i = work.pop_back_val();
      if (!seen.insert(i).second)
        continue;
      if (carriesBatch(g.nodes[i]))
        sum.coupled = true;
      else
        llvm::append_range(work, consumers[i]);
    }
  }
}

} // namespace

const RepeatedBlock *PlanGraph::blockOf(int i) const {
  for (const RepeatedBlock &b : blocks)
    if (b.contains(i))
      return &b;
  return nullptr;
}

int PlanGraph::layerOf(int i) const {
  const RepeatedBlock *b = blockOf(i);
  return b ? b->firstLayer + (i - b->begin) / b->period : -1;
}

int PlanGraph::layers() const {
  return blocks.empty() ? 0 : blocks.back().firstLayer + blocks.back().count;
}

int PlanGraph::representative(int i) const {
  const RepeatedBlock *b = blockOf(i);
  return b ? b->begin + (i - b->begin) % b->period : i;
}

double PlanGraph::resultBytes(int p, int r, double scale) const {
  const PlanNode &node = nodes[p];
  return double(tensorBytes(node.op->getResult(r))) * resultShare(node, scale);
}

double backwardWork(const PlanNode &node) {
  if (node.derived)
    return 0;
  if (isa<AttentionOp>(node.op))
    return 2.5;
  if (isa<ContractionOpInterface>(node.op))
    return 2;
  return 1.5;
}

int markRepeatedLayers(func::FuncOp fn) {
  PlanGraph g = buildPlanGraph(fn);
  Builder b(fn.getContext());
  for (const RepeatedBlock &blk : g.blocks)
    for (int i = blk.begin; i < blk.end(); ++i)
      g.nodes[i].op->setAttr(kLayerAttr, b.getI64IntegerAttr(g.layerOf(i)));
  return g.layers();
}

OpWork opWork(Operation *op, ArrayRef<SmallVector<int64_t>> operandShapes,
              ArrayRef<SmallVector<int64_t>> resultShapes,
              double activationScale, const PlanNode *fusion) {
  OpWork w;
  if (isa<ReshapeOp>(op))
    return w; // a view: no data moves
  for (auto [k, v, shape] :
       llvm::enumerate(op->getOperands(), operandShapes)) {
    if (fusion && k < fusion->fusedOperands.size() && fusion->fusedOperands[k])
      continue;
    double bytes = shapeBytes(shape, elementTypeOf(v));
    w.bytes += v.getDefiningOp<WeightOp>() ? bytes : bytes * activationScale;
  }
  // A GEMM that runs an add in its epilogue writes the add's result (the
  // same shape) and reads the add's other operand.
  if (!(fusion && fusion->fusedResult) || (fusion && fusion->epilogueAdds))
    for (auto [v, shape] : llvm::zip(op->getResults(), resultShapes))
      w.bytes += shapeBytes(shape, elementTypeOf(v)) * activationScale;
  if (fusion && fusion->epilogueAdds)
    w.bytes += fusion->epilogueReadBytes * activationScale;
  double out = resultShapes.empty() ? 0 : double(numElements(resultShapes.front()));
  if (auto contraction = dyn_cast<ContractionOpInterface>(op)) {
    GemmShape s = contraction.gemmShapeFor(operandShapes, resultShapes.front());
    w.flops = s.flops();
    if (auto gemm = dyn_cast<GemmOp>(op);
        gemm && gemm.getC() && !(fusion && fusion->epilogueBias)) {
      // Both back ends broadcast C into the result, then accumulate the
      // product onto it (beta): one more kernel, the result written twice
      // and read once more, as a separate bias add would cost.
      w.flops += out;
      if (!resultShapes.empty()) {
        w.bytes += 2 * shapeBytes(resultShapes.front(),
                                  elementTypeOf(op->getResult(0))) *
                   activationScale;
        w.launches = 2;
      }
    }
    // A GEMM's efficiency follows its smallest dimension; the rows shrink
    // with the activation share.
    if (!isa<ConvOp>(op) && !resultShapes.front().empty())
      w.gemmMinDim = std::min({double(s.m) * activationScale, double(s.n),
                               double(s.k)});
    // A causal attention's kernels skip the pairs its band hides.
    if (isa<AttentionOp>(op)) {
      w.flops *= fusion ? fusion->visibleScores : visibleScoreFraction(op);
      w.viaBlas = false;
    }
  } else if (auto work = dyn_cast<WorkOpInterface>(op)) {
    w.flops = out * work.getFlopsPerElement();
  } else {
    w.flops = out;
  }
  w.flops *= activationScale;
  return w;
}

namespace {

/// A bias along the columns of a [..., n] result, or a tensor of its shape:
/// what a GEMM epilogue adds.
bool addsToProduct(Value other, ArrayRef<int64_t> shape) {
  return shapeOf(other) == shape ||
         (!shape.empty() && isColumnBias(shapeOf(other), shape.back()));
}

/// What GPU ranks compile a 16-bit program to, beyond pointwise fusion
/// (Codegen/Cpu: FoldHeadTransposes.cpp, EmitContraction.cpp): a GEMM's
/// bias and residual adds run in its epilogue (the product is never
/// written, nor read back); an attention of 64- or 128-feature heads
/// reads them in place, so the head transposes around it, and a split of
/// the projection feeding them, move nothing. Priced on the global graph:
/// under tensor parallelism a collective between a GEMM and its add keeps
/// them apart, which this does not see.
void gpuFusions(PlanGraph &g, const llvm::DenseMap<Operation *, int> &index) {
  auto nodeOf = [&](Operation *op) -> PlanNode * {
    auto it = op ? index.find(op) : index.end();
    return it == index.end() ? nullptr : &g.nodes[it->second];
  };
  for (PlanNode &node : g.nodes) {
    if (auto gemm = dyn_cast<GemmOp>(node.op); gemm && gemm.getC())
      node.epilogueBias =
          gemm.getBeta().convertToDouble() == 1.0 &&
          isColumnBias(shapeOf(gemm.getC()), gemm.getType().getShape().back());
    if (auto add = dyn_cast<AddOp>(node.op)) {
      ArrayRef<int64_t> shape = add.getType().getShape();
      for (auto [k, p] : llvm::enumerate(node.producers)) {
        if (p < 0 || k > 1)
          continue;
        PlanNode &prod = g.nodes[p];
        Value other = add->getOperand(1 - k);
        if (isa<MatMulOp, GemmOp>(prod.op) && add->getOperand(k).hasOneUse() &&
            cast<RankedTensorType>(add->getOperand(k).getType()).getShape() ==
                shape &&
            addsToProduct(other, shape) && !prod.epilogueAdds) {
          prod.fusedResult = true;
          prod.epilogueAdds = true;
          prod.epilogueReadBytes = tensorBytes(other);
          node.fusedOperands[k] = true;
          node.epilogue = true;
          // The GEMM writes the add's result: a pointwise reader reads it.
          if (node.fusedResult)
            if (PlanNode *reader = nodeOf(*add->user_begin())) {
              node.fusedResult = false;
              for (auto [j, q] : llvm::enumerate(reader->producers))
                if (q >= 0 && &g.nodes[q] == &node)
                  reader->fusedOperands[j] = false;
            }
          break;
        }
      }
    }
    auto attn = dyn_cast<AttentionOp>(node.op);
    if (!attn || !hasTensorCoreAttention(attn))
      continue;
    Operation *user = attn->hasOneUse() ? *attn->user_begin() : nullptr;
    auto merge = user && user->getNumResults() == 1
                     ? headSwap(user->getResult(0))
                     : TransposeOp();
    TransposeOp qkv[] = {headSwap(attn.getQuery()), headSwap(attn.getKey()),
                         headSwap(attn.getValue())};
    if (!merge || llvm::any_of(qkv, [](TransposeOp t) { return !t; }))
      continue;
    for (Operation *t : {qkv[0].getOperation(), qkv[1].getOperation(),
                         qkv[2].getOperation(), merge.getOperation()})
      if (PlanNode *n = nodeOf(t))
        n->view = true;
    // A split of [B, S, F] along F whose every block feeds these.
    auto reshape = qkv[0].getInput().getDefiningOp<ReshapeOp>();
    auto split =
        reshape ? reshape.getInput().getDefiningOp<SplitOp>() : SplitOp();
    if (!split || split.getAxis() != 2 ||
        split.getInput().getType().getRank() != 3)
      continue;
    bool allRead = llvm::all_of(split.getResults(), [&](Value part) {
      return llvm::all_of(part.getUsers(), [&](Operation *u) {
        return isa<ReshapeOp>(u) &&
               llvm::all_of(u->getUsers(), [&](Operation *t) {
                 return llvm::is_contained(qkv, dyn_cast<TransposeOp>(t));
               });
      });
    });
    if (PlanNode *n = nodeOf(split); n && allRead)
      n->view = true;
  }
}

} // namespace

PlanGraph buildPlanGraph(func::FuncOp fn, bool gpuKernels,
                         ArrayRef<std::string> frozen) {
  llvm::StringSet<> frozenNames;
  for (const std::string &n : frozen)
    frozenNames.insert(n);
  // Values the outputs depend on other than through a boolean (a mask): a
  // float initializer outside them (a causal tril buffer compared with 0)
  // is a buffer, held but never trained, as PyTorch counts it and as the
  // training step finds no gradient for it.
  llvm::DenseSet<Value> feedsOutputs;
  Block &body = fn.getBody().front();
  for (Value v : body.getTerminator()->getOperands())
    feedsOutputs.insert(v);
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (llvm::any_of(op.getResults(), [&](Value r) {
          return feedsOutputs.contains(r) &&
                 !cast<ShapedType>(r.getType()).getElementType().isInteger(1);
        }))
      for (Value v : op.getOperands())
        feedsOutputs.insert(v);
  PlanGraph g;
  g.fn = fn;
  llvm::DenseMap<Operation *, int> index;
  llvm::DenseMap<Operation *, int> firstReader;
  bool dtypeSet = false;
  llvm::DenseSet<Operation *> derived;
  std::vector<bool> weightDerived;
  // The mask analysis reads mask constants (millions of elements at long
  // sequences), and every layer's attention reads the same masks: each
  // (masks, shapes, fill, band, ring) is analysed once.
  std::map<std::tuple<const void *, const void *, const void *, const void *,
                      const void *, const void *, const void *>,
           double>
      visibleByMasks;
  auto visibleScores = [&](AttentionOp a) {
    auto ptr = [](auto x) { return x ? x.getAsOpaquePointer() : nullptr; };
    auto key =
        std::make_tuple(ptr(a.getMask()), ptr(a.getHide()),
                        a.getQuery().getType().getAsOpaquePointer(),
                        a.getKey().getType().getAsOpaquePointer(),
                        a.getFillAttr().getAsOpaquePointer(),
                        ptr(a.getHideFromAttr()), ptr(a.getRingAxesAttr()));
    auto [it, fresh] = visibleByMasks.try_emplace(key, 1.0);
    if (fresh)
      it->second = visibleScoreFraction(a);
    return it->second;
  };
  for (Operation *opPtr : planOrder(fn, derived)) {
    Operation &op = *opPtr;
    PlanNode node;
    node.op = &op;
    node.name = nodeName(&op);
    node.derived = derived.count(&op);
    node.backwardPasses = backwardWork(node);
    // A reshape, or a transpose its GEMMs read through their flags.
    node.view = isa<ReshapeOp>(op) || isFoldedTranspose(&op);
    // Fused Q|K|V columns: of what the op reads or makes, and what its
    // readers make (a transposed weight feeding the fused product).
    auto addFused = [&](Value v) {
      if (shapeOf(v).empty())
        return;
      std::pair<int64_t, int64_t> f{shapeOf(v).back(), fusedGroups(v)};
      if (f.second > 1 && !llvm::is_contained(node.fusedColumns, f))
        node.fusedColumns.push_back(f);
    };
    for (Value v : op.getOperands())
      addFused(v);
    for (Value v : op.getResults()) {
      addFused(v);
      for (Operation *user : v.getUsers())
        for (Value r : user->getResults())
          addFused(r);
    }
    if (auto attn = dyn_cast<AttentionOp>(op))
      node.visibleScores = visibleScores(attn);
    bool weightOperand = false, activationOperands = true;
    for (Value v : op.getOperands()) {
      auto type = cast<RankedTensorType>(v.getType());
      Operation *def = v.getDefiningOp();
      auto it = def ? index.find(def) : index.end();
      node.producers.push_back(it == index.end() ? -1 : it->second);
      if (def && isa<WeightOp>(def)) {
        weightOperand = true;
        activationOperands = false;
        // Parameters are what training updates: float initializers (bool
        // and integer ones are masks and tables, never trained).
        if (frozenNames.contains(cast<WeightOp>(def).getName()) ||
            !feedsOutputs.contains(v)) {
          node.frozenWeights.push_back(unsigned(node.producers.size() - 1));
        } else if (isa<FloatType>(type.getElementType())) {
          auto [reader, first] =
              firstReader.try_emplace(def, int(g.nodes.size()));
          // A 16-bit weight trains as an f32 master that the forward reads
          // through one cast (TrainStep.cpp keepMaster): one read.
          if (first || type.getElementType().isF32())
            ++node.forwardParameterReads;
          if (first) {
            node.params += double(type.getNumElements());
            ++node.weightTensors;
          } else if (reader->second != int(g.nodes.size())) {
            node.sharedWeights.push_back(
                {unsigned(node.producers.size() - 1), reader->second});
          }
        }
      } else if (def && isa<ConstantOp>(def)) {
        activationOperands = false;
      } else if (it != index.end() && weightDerived[it->second] &&
                 isa<FloatType>(type.getElementType())) {
        // A weight through ops of weights alone (a training export's
        // transposed Linear weight): still a linear layer.
        weightOperand = true;
        node.derivedWeights.push_back(unsigned(node.producers.size() - 1));
        activationOperands = false;
      }
    }
    bool contraction = isa<ContractionOpInterface>(op);
    node.linear = contraction && weightOperand;
    node.activationMatmul = contraction && activationOperands;
    if (contraction && !dtypeSet) {
      Type e = cast<ShapedType>(op.getResult(0).getType()).getElementType();
      g.elementBytes = elementBytes(e);
      g.dtype = e.isBF16() ? "bf16" : e.isF16() ? "fp16" : "fp32";
      dtypeSet = true;
    }
    g.totalParams += node.params;
    // Made from a weight by ops of weights and constants alone.
    weightDerived.push_back(
        node.derived && llvm::any_of(op.getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          auto it = def ? index.find(def) : index.end();
          return (def && isa<WeightOp>(def)) ||
                 (it != index.end() && weightDerived[it->second]);
        }));
    node.madeOfConstants = node.derived && !weightDerived.back();
    index[&op] = g.nodes.size();
    g.nodes.push_back(std::move(node));
  }
  for (Value v : fn.getBody().front().getTerminator()->getOperands())
    if (Operation *def = v.getDefiningOp())
      if (auto it = index.find(def); it != index.end())
        g.outputs.push_back(
            {it->second, int(cast<OpResult>(v).getResultNumber())});
  // tf32 stores f32 but runs GEMMs at tf32 rates (pcc-convert-precision).
  if (auto module = fn->getParentOfType<ModuleOp>())
    if (auto p = module->getAttrOfType<StringAttr>(kPrecisionAttr);
        p && p.getValue() == "tf32" && g.dtype == "fp32")
      g.dtype = "tf32";
  if (auto v = fn->getAttrOfType<DenseI64ArrayAttr>(kPaddedVocabularyAttr);
      v && v.size() == 3)
    g.vocabulary = {v[0], v[1], v[2]};
  if (fn.getNumArguments()) {
    auto first = cast<RankedTensorType>(fn.getArgumentTypes().front());
    if (first.getRank() >= 1)
      g.batch = first.getDimSize(0);
    if (first.getRank() >= 2)
      g.sequence = first.getDimSize(1);
  }
  // Pointwise chains run as one loop, as the code generator fuses them
  // (Fusion.h): a result read only by the next pointwise op of its shape
  // is never written, nor read back.
  for (PlanNode &node : g.nodes) {
    node.fusedOperands.assign(node.producers.size(), false);
    for (auto [k, p] : llvm::enumerate(node.producers)) {
      if (p < 0 || fusedUser(g.nodes[p].op) != node.op)
        continue;
      g.nodes[p].fusedResult = true;
      node.fusedOperands[k] = true;
    }
  }
  if (gpuKernels && (g.dtype == "bf16" || g.dtype == "fp16"))
    gpuFusions(g, index);
  for (PlanNode &node : g.nodes) {
    SmallVector<SmallVector<int64_t>> in, out;
    for (Value v : node.op->getOperands())
      in.emplace_back(cast<RankedTensorType>(v.getType()).getShape());
    for (Type t : node.op->getResultTypes())
      out.emplace_back(cast<RankedTensorType>(t).getShape());
    // Work once fusion is known (it changes the bytes, not the FLOPs).
    OpWork w = opWork(node.op, in, out, 1, &node);
    node.flops = w.flops;
    node.bytes = w.bytes;
    node.launches = w.launches;
    node.viaBlas = w.viaBlas;
    g.totalFlops += node.flops;
  }
  markBatchDims(g);
  g.blocks = findRepeatedBlocks(g);
  g.selectiveAgain = recomputedNodes(g, /*selective=*/true);
  return g;
}

std::vector<bool> recomputedNodes(const PlanGraph &g, bool selective) {
  int n = g.nodes.size();
  std::vector<bool> again(n, false);
  if (g.blocks.empty())
    return again;
  std::vector<llvm::SmallVector<int, 2>> consumers(n);
  for (int i = 0; i < n; ++i)
    for (int p : g.nodes[i].producers)
      if (p >= 0)
        consumers[p].push_back(i);
  for (const RepeatedBlock &b : g.blocks)
    for (int copy = 0; copy < b.count; ++copy) {
      int begin = b.begin + copy * b.period, end = begin + b.period;
      for (int i = end - 1; i >= begin; --i) {
        // The layer's output is the next layer's input: kept.
        if (llvm::any_of(consumers[i], [&](int c) { return c >= end; }))
          continue;
        if (selective && isa<ContractionOpInterface>(g.nodes[i].op))
          continue;
        again[i] = g.nodes[i].savedForBackward ||
                   llvm::any_of(consumers[i], [&](int c) { return again[c]; });
      }
    }
  return again;
}

} // namespace pcc
