//===- Partition.cpp - global program to per-device (SPMD) program --------===//
//
// Invariants:
// - Every global value v maps to a local value whose type is v's type cut by
//   `layout[v]` (Sharding.h); `layout[v]` is v's annotation after v's op.
// - Each op runs on the layouts inferOpSharding gives for its operands'
//   annotations; operands are resharded to them right before the op, so a
//   collective appears exactly where two layouts meet.
// - Weights are never resharded: each use loads its own shard (the weights
//   file holds every shard contiguously), so no device reads more than it
//   uses. Constants are small and start whole on every device.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Partition/Passes.h"
#include "pcc/Partition/Stages.h"
#include "pcc/Sharding/ParallelPlan.h"
#include "pcc/Sharding/Reshard.h"
#include "pcc/Sharding/ShardingRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace pcc {

#define GEN_PASS_DEF_PARTITION
#include "pcc/Partition/Passes.h.inc"

namespace {

/// A weight a training step stores into: every device reads it in the one
/// layout it is stored in, so the step updates the only copy there is.
bool isAssigned(Value weight) {
  return llvm::any_of(weight.getUsers(), [&](Operation *u) {
    auto a = dyn_cast<AssignOp>(u);
    return a && a.getTarget() == weight;
  });
}

/// Whether backward op `user` reads forward value `v` (stored as `from`)
/// gathered into `to`.
bool readsForwardGather(Operation *user, Value v, const TensorSharding &from,
                        const TensorSharding &to) {
  Operation *def = v.getDefiningOp();
  if (!user->hasAttr(kGradientOfAttr) ||
      (def && (def->hasAttr(kGradientOfAttr) || def->hasAttr(kOptimizerAttr))))
    return false;
  return llvm::any_of(planReshard(from, to), [](const ReshardStep &step) {
    return step.kind == ReshardKind::AllGather;
  });
}

SmallVector<int16_t> gridAxes(ArrayRef<int64_t> axes) {
  return SmallVector<int16_t>(axes.begin(), axes.end());
}

class Partitioner {
public:
  Partitioner(func::FuncOp fn, const Mesh &mesh)
      : fn(fn), mesh(mesh), b(fn.getContext()) {}
  LogicalResult run();

private:
  LogicalResult partitionOp(Operation *op);
  FailureOr<Value> operandFor(Operation *user, Value global,
                              const TensorSharding &required);
  Value reshard(Location loc, Value v, const TensorSharding &from,
                const TensorSharding &to);
  Value reshape(Location loc, Value v, ArrayRef<int64_t> shape);
  /// Runs `collective` on dim `d` of local `v` viewed as [groups, rest]
  /// (on the rest, at the index it is given), where it scales the dim by
  /// mul / div.
  Value alongDim(Location loc, Value v, int64_t d, int64_t groups,
                 int64_t mul, int64_t div,
                 function_ref<Value(Value, RankedTensorType, int64_t)> collective);
  Operation *buildLocal(Operation *op, ValueRange operands,
                        const OpSharding &s);

  func::FuncOp fn;
  const Mesh &mesh;
  OpBuilder b;
  llvm::DenseMap<Value, Value> local;
  llvm::DenseMap<Value, TensorSharding> layout;
  std::map<std::pair<Operation *, std::string>, Value> weightShards;
  std::map<std::pair<void *, std::string>, Value> resharded;
  /// The summed copies made of each partial value, with their layouts.
  llvm::DenseMap<Value, SmallVector<std::pair<TensorSharding, Value>, 1>>
      summed;
};

Value Partitioner::reshape(Location loc, Value v, ArrayRef<int64_t> shape) {
  if (typeOf(v).getShape() == shape)
    return v;
  return ReshapeOp::create(b, loc, typeOf(v).clone(shape), v,
                           b.getDenseI64ArrayAttr(shape));
}

Value Partitioner::alongDim(
    Location loc, Value v, int64_t d, int64_t groups, int64_t mul,
    int64_t div,
    function_ref<Value(Value, RankedTensorType, int64_t)> collective) {
  SmallVector<int64_t> shape(typeOf(v).getShape());
  // View dim d as [groups, rest] so the collective acts on each group.
  SmallVector<int64_t> grouped(shape);
  int64_t at = d;
  if (groups != 1) {
    grouped[d] /= groups;
    grouped.insert(grouped.begin() + d, groups);
    at = d + 1;
  }
  Value in = reshape(loc, v, grouped);
  grouped[at] = grouped[at] * mul / div;
  Value out = collective(in, typeOf(in).clone(grouped), at);
  shape[d] = shape[d] * mul / div;
  return reshape(loc, out, shape);
}

/// Emits the steps of planReshard (Reshard.h) as shard collectives: the
/// planner prices exactly these.
Value Partitioner::reshard(Location loc, Value v, const TensorSharding &from,
                           const TensorSharding &to) {
  // A sum over microbatches accumulates each run's block: before the
  // scatters, so that they run once a step.
  SmallVector<int64_t, 1> accumulated;
  if (int64_t mb = mesh.axisNamed(kMicrobatchAxis); mb >= 0)
    accumulated.push_back(mb);
  for (const ReshardStep &step : planReshard(from, to, accumulated)) {
    int64_t n = mesh.size(step.axes);
    auto axes = gridAxes(step.axes);
    switch (step.kind) {
    case ReshardKind::AllReduce:
      v = shard::AllReduceOp::create(b, loc, v.getType(), mesh.name, axes, v);
      break;
    case ReshardKind::ReduceScatter:
      v = alongDim(loc, v, step.dim, step.groups, 1, n,
                   [&](Value in, RankedTensorType type, int64_t at) -> Value {
                     return shard::ReduceScatterOp::create(
                         b, loc, type, mesh.name, axes, in,
                         shard::ReductionKind::Sum, APInt(64, at));
                   });
      break;
    case ReshardKind::AllGather:
      v = alongDim(loc, v, step.dim, step.groups, n, 1,
                   [&](Value in, RankedTensorType type, int64_t at) -> Value {
                     return shard::AllGatherOp::create(
                         b, loc, type, mesh.name, axes, in, APInt(64, at));
                   });
      break;
    case ReshardKind::AllToAll: {
      SmallVector<int64_t> shape(typeOf(v).getShape());
      shape[step.dim] *= n;
      shape[step.toDim] /= n;
      auto type = RankedTensorType::get(shape, typeOf(v).getElementType());
      v = shard::AllToAllOp::create(b, loc, type, mesh.name, axes, v,
                                    APInt(64, step.toDim), APInt(64, step.dim));
      break;
    }
    case ReshardKind::AllSlice:
      v = alongDim(loc, v, step.dim, step.groups, 1, n,
                   [&](Value in, RankedTensorType type, int64_t at) -> Value {
                     return shard::AllSliceOp::create(b, loc, type, in,
                                                      mesh.name, axes, at);
                   });
      break;
    }
  }
  return v;
}

FailureOr<Value> Partitioner::operandFor(Operation *user, Value global,
                                         const TensorSharding &required) {
  Location loc = user->getLoc();
  Operation *def = global.getDefiningOp();
  if (auto w = dyn_cast_or_null<WeightOp>(def)) {
    TensorSharding want = required;
    want.partial.clear();
    // A device reads its block of the layout its user needs, unless the
    // strategy stored the weight split further (3D): then it reads that
    // block and gathers at use.
    TensorSharding stored = shardingOf(global);
    if (gathersStoredWeight(stored, want) || isAssigned(global))
      want = stored;
    std::string key = describe(want, mesh);
    Value &shard = weightShards[{def, key}];
    if (!shard) {
      auto type = localType(typeOf(global), want, mesh);
      auto shardOp = WeightOp::create(
          b, w.getLoc(), type, w.getNameAttr(),
          /*external=*/nullptr, w.getSourceTypeAttr(), w.getZerosAttr(),
          w.getUnpaddedAttr(), w.getPartsAttr(), w.getPartsAxisAttr(),
          w.getPartSizesAttr());
      if (!want.isReplicated())
        shardOp->setAttr(kShardingAttr,
                         b.getArrayAttr({toAttr(b.getContext(), mesh, want)}));
      shard = shardOp.getResult();
    }
    // A stored weight is gathered for each user (as the planner prices it),
    // but a recomputed 3D product's gathered weight is the one its gradient
    // products read: gathered once for both (PlanReport lists it so).
    if (want == required)
      return shard;
    if (mesh.axisNamed("tp_x") < 0)
      return reshard(loc, shard, want, required);
    bool clone = user->hasAttr(kRecomputeOfAttr);
    auto product = dyn_cast_or_null<IntegerAttr>(
        user->getAttr(clone ? kRecomputeOfAttr : kGradientOfAttr));
    if (!product)
      return reshard(loc, shard, want, required);
    std::pair<void *, std::string> sharedKey = {
        shard.getAsOpaquePointer(), describe(required, mesh) + " for " +
                                        std::to_string(product.getInt())};
    auto done = resharded.find(sharedKey);
    if (done != resharded.end() &&
        done->second.getParentBlock() == b.getInsertionBlock())
      return done->second;
    Value v = reshard(loc, shard, want, required);
    if (clone)
      resharded[sharedKey] = v;
    return v;
  }
  if (auto c = dyn_cast_or_null<ConstantOp>(def)) {
    auto it = local.find(global);
    if (it == local.end()) {
      Operation *copy = b.clone(*def);
      copy->removeAttr(kShardingAttr);
      local[global] = copy->getResult(0);
      layout[global] = TensorSharding::replicated(typeOf(global).getRank());
    }
  }
  auto it = local.find(global);
  if (it == local.end())
    return emitError(loc, "internal error: value used before partitioning");
  if (layout[global] == required)
    return it->second;
  // One reshard per value and layout, however many users need it; but a
  // forward value gathered for the forward is gathered again for the
  // backward, as Megatron-LM's sequence parallelism does: the backward
  // keeps the split copy, not the whole one from forward to backward.
  std::string layoutKey = describe(required, mesh);
  if (readsForwardGather(user, global, layout[global], required))
    layoutKey += " (backward)";
  std::pair<void *, std::string> key = {global.getAsOpaquePointer(),
                                       layoutKey};
  auto done = resharded.find(key);
  if (done != resharded.end())
    return done->second;
  // A partial sum another reader took summed: cut from that copy (free)
  // where it can be, rather than summed a second time.
  if (!layout[global].partial.empty())
    for (auto &[was, copy] : summed.lookup(global))
      if (copy.getParentBlock() == b.getInsertionBlock() &&
          llvm::all_of(planReshard(was, required), [](const ReshardStep &s) {
            return s.kind == ReshardKind::AllSlice;
          })) {
        Value v = reshard(loc, copy, was, required);
        resharded[key] = v;
        return v;
      }
  Value v = reshard(loc, it->second, layout[global], required);
  resharded[key] = v;
  if (!layout[global].partial.empty() && required.partial.empty())
    summed[global].push_back({required, v});
  return v;
}

Operation *Partitioner::buildLocal(Operation *op, ValueRange operands,
                                   const OpSharding &s) {
  SmallVector<Type> types;
  for (auto [r, l] : llvm::zip(op->getResults(), s.results))
    types.push_back(localType(typeOf(r), l, mesh));
  if (!s.reduceBeforeBias.empty())
    types[0] = localType(typeOf(op->getResult(0)), productBeforeBias(s), mesh);

  if (auto g = dyn_cast<GatherOp>(op)) {
    int64_t rank = typeOf(g.getInput()).getRank();
    int64_t axis = normalizeAxis(g.getAxis(), rank);
    const DimSharding &table = s.operands[0].dims[axis];
    if (table.isSplit()) {
      Operation *local = ShardGatherOp::create(
          b, op->getLoc(), types[0], operands[0], operands[1], axis,
          mesh.name, table.axes);
      if (Attribute stage = op->getAttr(kStageAttr))
        local->setAttr(kStageAttr, stage);
      return local;
    }
  }

  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  state.addTypes(types);
  for (NamedAttribute a : op->getAttrs())
    if (!llvm::is_contained({kShardingAttr, kOperandShardingAttr,
                             kPlannedShardingAttr, kPlannedStoreAttr,
                             kRingAttentionAttr,
                             kSummaAttr, kSplitStatsAttr, kScatterBeforeBiasAttr},
                            a.getName().strref()))
      state.addAttribute(a.getName(), a.getValue());
  auto local = [&](unsigned i) { return cast<RankedTensorType>(types[i]); };
  if (isa<ReshapeOp, ExpandOp>(op))
    state.attributes.set("shape",
                         b.getDenseI64ArrayAttr(local(0).getShape()));
  if (auto sl = dyn_cast<SliceOp>(op)) {
    state.attributes.set("sizes",
                         b.getDenseI64ArrayAttr(local(0).getShape()));
    // A split dim sliced by whole groups starts at the same group locally.
    SmallVector<int64_t> starts(sl.getStarts());
    ArrayRef<int64_t> shape = typeOf(sl.getInput()).getShape();
    for (auto [d, ds] : llvm::enumerate(s.operands[0].dims))
      if (ds.isSplit() && sl.getSizes()[d] != shape[d])
        starts[d] /= mesh.size(ds.axes);
    state.attributes.set("starts", b.getDenseI64ArrayAttr(starts));
  }
  if (auto sp = dyn_cast<SplitOp>(op)) {
    int64_t rank = local(0).getRank();
    int64_t axis = normalizeAxis(sp.getAxis(), rank);
    SmallVector<int64_t> sizes;
    for (unsigned i = 0; i < types.size(); ++i)
      sizes.push_back(local(i).getDimSize(axis));
    state.attributes.set("sizes", b.getDenseI64ArrayAttr(sizes));
  }
  // Keys split like the query rows: the keys pass around those axes.
  if (auto attn = dyn_cast<AttentionOp>(op)) {
    size_t rows = typeOf(attn.getKey()).getRank() - 2;
    const DimSharding &keys = s.operands[1].dims[rows];
    if (keys.isSplit())
      state.attributes.set("ring_axes", b.getDenseI64ArrayAttr(keys.axes));
  }
  // SUMMA: the left operand's contraction split over the grid's columns,
  // the weight's over its rows.
  // (Only where the strategy marked it: an unmarked product's rule never
  // splits its two contraction dimensions differently.)
  if (op->hasAttr(kSummaAttr))
    if (auto axes = summaAxes(op, s))
      state.attributes.set("summa_axes",
                           b.getDenseI64ArrayAttr({axes->first, axes->second}));
  // A depthwise convolution split over its channels convolves whole
  // groups: as many as it holds input channels.
  if (auto conv = dyn_cast<ConvOp>(op);
      conv && conv.getGroup() > 1 && s.operands[0].dims[1].isSplit())
    state.attributes.set(
        "group",
        b.getI64IntegerAttr(
            cast<RankedTensorType>(operands[0].getType()).getDimSize(1)));
  // A dropout draws each element's mask from its index in the whole
  // tensor: it keeps the layout that places its block.
  if (isa<DropoutOp>(op) && !s.results[0].isReplicated())
    state.attributes.set(
        kShardingAttr,
        b.getArrayAttr({toAttr(b.getContext(), mesh, s.results[0])}));
  if (isa<LayerNormOp>(op) && s.operands[0].dims.back().isSplit())
    state.attributes.set(
        "stat_axes", b.getDenseI64ArrayAttr(s.operands[0].dims.back().axes));
  if (const DimSharding *d = s.operands.empty()
                                 ? nullptr
                                 : splitSoftmaxAxis(op, s.operands[0]))
    state.attributes.set("stat_axes", b.getDenseI64ArrayAttr(d->axes));
  if (isa<GemmOp>(op) && !s.reduceBeforeBias.empty()) {
    // C is added after the sum (in partitionOp).
    state.operands.resize(2);
  }
  // A mean over a split axis: each device sums its block and divides by the
  // whole count, so the partial results add up to the mean.
  if (auto mean = dyn_cast<ReduceMeanOp>(op)) {
    int64_t count = 1;
    bool split = false;
    for (int64_t axis : mean.getAxes()) {
      count *= typeOf(mean.getInput()).getDimSize(axis);
      split |= s.operands[0].dims[axis].isSplit();
    }
    if (split) {
      state.name =
          OperationName(ReduceSumOp::getOperationName(), b.getContext());
      Operation *sum = b.create(state);
      Type elem = local(0).getElementType();
      auto scalar = RankedTensorType::get({}, elem);
      Value n = ConstantOp::create(
          b, op->getLoc(),
          DenseElementsAttr::get(scalar, b.getFloatAttr(elem, double(count))));
      OperationState div(op->getLoc(), DivOp::getOperationName());
      div.addOperands({sum->getResult(0), n});
      div.addTypes(types[0]);
      for (NamedAttribute a : sum->getDiscardableAttrs())
        div.addAttribute(a.getName(), a.getValue());
      if (Attribute stage = op->getAttr(kStageAttr))
        n.getDefiningOp()->setAttr(kStageAttr, stage);
      return b.create(div);
    }
  }
  return b.create(state);
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  OpSharding s = annotatedOpSharding(op, mesh);
  SmallVector<Value> operands;
  for (auto [v, req] : llvm::zip(op->getOperands(), s.operands)) {
    auto l = operandFor(op, v, req);
    if (failed(l))
      return failure();
    operands.push_back(*l);
  }
  Operation *newOp = buildLocal(op, operands, s);
  if (failed(verify(newOp)))
    return op->emitError("internal error: the per-device form of this op "
                         "does not verify");
  SmallVector<Value> results(newOp->getResults());
  SmallVector<TensorSharding> resultLayouts = s.results;
  if (!s.reduceBeforeBias.empty()) {
    auto g = cast<GemmOp>(op);
    Location loc = op->getLoc();
    TensorSharding product = productBeforeBias(s);
    TensorSharding summed = product;
    summed.partial.clear();
    // All-reduced, or reduce-scattered onto the rows (3D).
    Value sum = summed == s.results[0]
                    ? shard::AllReduceOp::create(
                          b, loc, results[0].getType(), mesh.name,
                          gridAxes(s.reduceBeforeBias), results[0])
                          .getResult()
                    : reshard(loc, results[0], product, s.results[0]);
    Value c = operands[2];
    float beta = g.getBeta().convertToFloat();
    if (beta != 1.0f) {
      auto ct = typeOf(c);
      Value betaV = ConstantOp::create(
          b, loc, DenseElementsAttr::get(RankedTensorType::get({}, ct.getElementType()),
                                         b.getFloatAttr(ct.getElementType(), beta)));
      c = MulOp::create(b, loc, ct, c, betaV);
    }
    results[0] = AddOp::create(b, loc, sum.getType(), sum, c);
  }
  for (auto [i, r] : llvm::enumerate(op->getResults())) {
    TensorSharding want = shardingOf(r);
    Value l = results[i];
    if (want != resultLayouts[i] && divides(typeOf(r).getShape(), want, mesh))
      l = reshard(op->getLoc(), l, resultLayouts[i], want);
    else
      want = resultLayouts[i];
    local[r] = l;
    layout[r] = want;
  }
  return success();
}

LogicalResult Partitioner::run() {
  Block &body = fn.getBody().front();
  SmallVector<BlockArgument> globalArgs(body.getArguments());
  for (BlockArgument arg : globalArgs) {
    TensorSharding s = shardingOf(arg);
    if (!s.partial.empty() || !divides(typeOf(arg).getShape(), s, mesh))
      return fn.emitError() << "argument " << arg.getArgNumber()
                            << " has a sharding that does not fit its type";
    // The global argument stays until the end: sharding rules read global
    // shapes from the ops they partition.
    layout[arg] = s;
    local[arg] = body.addArgument(localType(typeOf(arg), s, mesh), arg.getLoc());
  }
  unsigned numArgs = fn.getNumArguments();
  SmallVector<Operation *> old;
  for (Operation &op : body.without_terminator())
    old.push_back(&op);
  for (Operation *op : old) {
    b.setInsertionPoint(op);
    if (isa<WeightOp, ConstantOp>(op))
      continue;
    if (failed(partitionOp(op)))
      return failure();
  }
  Operation *ret = body.getTerminator();
  b.setInsertionPoint(ret);
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    TensorSharding want = TensorSharding::replicated(typeOf(v).getRank());
    if (auto attr = fn.getResultAttrOfType<ShardingAttr>(i, kShardingAttr))
      want = fromAttr(attr);
    want.partial.clear();
    if (!divides(typeOf(v).getShape(), want, mesh))
      want = TensorSharding::replicated(typeOf(v).getRank());
    auto l = operandFor(ret, v, want);
    if (failed(l))
      return failure();
    results.push_back(*l);
    resultTypes.push_back(l->getType());
    fn.setResultAttr(i, kShardingAttr, toAttr(fn.getContext(), mesh, want));
  }
  func::ReturnOp::create(b, ret->getLoc(), results);
  ret->erase();
  for (Operation *op : llvm::reverse(old)) {
    op->dropAllUses();
    op->erase();
  }
  for (unsigned i = 0; i < numArgs; ++i)
    fn.setArgAttr(i, kShardingAttr,
                  toAttr(fn.getContext(), mesh,
                         layout[body.getArgument(i)]));
  body.eraseArguments(0, numArgs);
  fn.setType(FunctionType::get(fn.getContext(), body.getArgumentTypes(),
                               resultTypes));
  return success();
}

struct PartitionPass : impl::PartitionBase<PartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Mesh> mesh = readMesh(module);
    if (!mesh) {
      module.emitError("partitioning needs a shard.grid in the module");
      return signalPassFailure();
    }
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      Partitioner p(fn, *mesh);
      if (failed(p.run()))
        return signalPassFailure();
    }
    module->setAttr("pcc.partitioned", UnitAttr::get(module.getContext()));
  }
};

} // namespace
} // namespace pcc
