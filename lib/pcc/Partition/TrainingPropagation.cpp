//===- TrainingPropagation.cpp - a training step's layouts ----------------===//
//
// The parts of sharding propagation that a training step's own tensors
// need (TrainingPropagation.h). Nothing here acts on a program without
// gradient or optimizer ops.
//
//===----------------------------------------------------------------------===//

#include "TrainingPropagation.h"
#include "ProductGradients.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Partition/Propagation.h"
#include "pcc/Sharding/ParallelPlan.h"
#include "pcc/Sharding/Reshard.h"
#include "pcc/Sharding/ShardingRules.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

using namespace mlir;

namespace pcc {
namespace {

/// The layouts a training step stores its tensors in (pcc/Autodiff): the
/// optimizer states like their parameter, and under ZeRO (the plan's stage)
/// the states, and from stage 3 the parameters, split over dp as well, so
/// the update reads each device's part of them: the partial gradients reach
/// it by a reduce-scatter, and the new parameters their readers by
/// all-gathers. Nothing here acts on a program without optimizer ops.
class TrainingLayouts {
public:
  TrainingLayouts(func::FuncOp fn, const Mesh &mesh) : mesh(mesh) {
    for (auto w : fn.getOps<WeightOp>())
      if (!w.getZeros())
        parameters[w.getName()] = w.getResult();
    if (auto module = fn->getParentOfType<ModuleOp>())
      if (std::optional<ParallelPlan> plan = readPlan(module))
        zero = plan->zero;
    for (auto [i, name] : llvm::enumerate(mesh.axisNames)) {
      if (name == "dp" && mesh.shape[i] > 1)
        dpAxis = i;
      if (name == "tp" && mesh.shape[i] > 1)
        tpAxis = i;
    }
    findUpdatedParameters(fn);
  }

  /// ZeRO-3 holds a parameter whole only while an op reads it. A value made
  /// from parameters alone (nn.Linear's transposed weight, as exports
  /// without constant folding write it) that the backward pass reads again
  /// is made again before its first backward reader, from a gather of its
  /// own, rather than kept whole from the forward pass to the backward.
  /// `fromWeights`: valuesMadeOfWeights, to which the remade ones are
  /// added.
  void remakeWeightViews(func::FuncOp fn, llvm::DenseSet<Value> &fromWeights) {
    if (zero < 3 || !dpAxis)
      return;
    llvm::DenseMap<Value, Value> remade;
    // Remade ops belong to the backward op that first reads them.
    std::function<Value(Value, OpBuilder &, Attribute)> remake =
        [&](Value v, OpBuilder &b, Attribute gradientOf) {
          if (!fromWeights.contains(v))
            return v;
          if (Value again = remade.lookup(v))
            return again;
          Operation *def = v.getDefiningOp();
          IRMapping map;
          for (Value o : def->getOperands())
            map.map(o, remake(o, b, gradientOf));
          Operation *copy = b.clone(*def, map);
          copy->removeAttr(kForwardIdAttr);
          copy->setAttr(kGradientOfAttr, gradientOf);
          for (auto [from, to] :
               llvm::zip(def->getResults(), copy->getResults()))
            remade[from] = to;
          return remade.lookup(v);
        };
    for (Operation &op : fn.getBody().front().without_terminator()) {
      if (!op.hasAttr(kGradientOfAttr))
        continue;
      OpBuilder b(&op);
      for (OpOperand &use : op.getOpOperands())
        if (fromWeights.contains(use.get()))
          use.set(remake(use.get(), b, op.getAttr(kGradientOfAttr)));
    }
    for (auto &entry : remade)
      fromWeights.insert(entry.second);
  }

  /// Places the stored tensors `op` reads, before its layouts are chosen.
  void placeStored(Operation &op) {
    if (op.hasAttr(kOptimizerAttr) && !plannedStoresPlaced) {
      plannedStoresPlaced = true;
      placePlannedStores(&op);
    }
    for (Value v : op.getOperands()) {
      placeState(v);
      if (op.hasAttr(kOptimizerAttr))
        placeParameter(&op, v);
    }
  }

  /// The update reads a gradient once summed, into the layout of the
  /// parameter it updates (a reduce-scatter where that is split: a tied
  /// embedding's vocabulary over tp; under ZeRO, each device's part over
  /// dp), not a partial sum per formula. A gradient split where its
  /// parameter is not (a relative position bias's heads, under sequence
  /// parallelism on heads) is gathered once, rather than the update
  /// running on the split and gathering the parameter and each state.
  void sumGradients(Operation &op, SmallVectorImpl<TensorSharding> &in) {
    if (!op.hasAttr(kOptimizerAttr))
      return;
    bool summed = false;
    for (auto [v, s] : llvm::zip(op.getOperands(), in)) {
      Value param = updated.lookup(v);
      bool asParam = param && shapeOf(param) == shapeOf(v);
      bool splitOfWhole =
          asParam && !s.isReplicated() && shardingOf(param).isReplicated();
      if (s.partial.empty() && !splitOfWhole)
        continue;
      if (asParam)
        s = shardingOf(param);
      s = splitOverDp(v, s, asParam && storedOverTp(param));
      summed = true;
    }
    if (summed)
      setOperandShardings(&op, kOperandShardingAttr, mesh, in);
  }

private:
  /// Maps each gradient the update reads (a value from outside the
  /// optimizer's ops that an assignment to a parameter is computed from)
  /// to that parameter.
  void findUpdatedParameters(func::FuncOp fn) {
    for (auto assign : fn.getOps<AssignOp>()) {
      auto w = assign.getTarget().getDefiningOp<WeightOp>();
      if (!w || w.getZeros())
        continue;
      SmallVector<Value> work = {assign.getValue()};
      llvm::DenseSet<Value> seen;
      while (!work.empty()) {
        Value v = work.pop_back_val();
        Operation *def = v.getDefiningOp();
        if (!seen.insert(v).second || !def || isa<WeightOp, ConstantOp>(def))
          continue;
        if (!def->hasAttr(kOptimizerAttr)) {
          updated.try_emplace(v, assign.getTarget());
          continue;
        }
        llvm::append_range(work, def->getOperands());
      }
    }
  }

  /// Whether `param` is one the planner stores split over tp
  /// (placePlannedStores).
  bool storedOverTp(Value param) const {
    auto w = param.getDefiningOp<WeightOp>();
    return w && tpAxis && w->hasAttr(kPlannedStoreAttr) &&
           shardingOf(param).usesAxis(*tpAxis);
  }

  /// `s` (partial sums dropped) split over dp too, under ZeRO: a whole
  /// dimension first, else one already split, further; with `further`,
  /// the other way round (a parameter stored split over tp that its
  /// readers read whole: its gradient, partial over tp and dp, then
  /// reaches its part in one reduce-scatter over both).
  TensorSharding splitOverDp(Value v, TensorSharding s,
                             bool further = false) const {
    s.partial.clear();
    if (!zero || !dpAxis || s.usesAxis(*dpAxis))
      return s;
    int d = zeroSplitDim(shapeOf(v), s, mesh, mesh.shape[*dpAxis], further);
    if (d < 0)
      return s; // nothing divides: whole on dp
    s.dims[d].axes.push_back(*dpAxis);
    s.dims[d].groups = 1;
    return s;
  }

  /// An optimizer state ("<param>.exp_avg") is stored like its parameter,
  /// as the parameter stands when the update first reads it.
  void placeState(Value v) {
    auto w = v.getDefiningOp<WeightOp>();
    if (!w || !w.getZeros() || !placed.insert(v).second)
      return;
    StringRef name = w.getName();
    Value param = parameters.lookup(name.substr(0, name.rfind('.')));
    if (param && shapeOf(param) == shapeOf(v))
      setSharding(v, mesh,
                  splitOverDp(v, shardingOf(param), storedOverTp(param)));
  }

  /// The parameters the planner stores split over tp while their readers
  /// read them whole (kPlannedStoreAttr), stored so from the first update
  /// op on, before the update places their states and reads their
  /// gradients: the forward and backward readers keep the layouts they
  /// read them in and gather them there (as ZeRO-3's over dp), and the
  /// gradients reach the update by a reduce-scatter.
  void placePlannedStores(Operation *update) {
    if (!tpAxis)
      return;
    for (auto &entry : parameters) {
      Value v = entry.second;
      auto w = v.getDefiningOp<WeightOp>();
      auto attr = w->getAttrOfType<ShardingAttr>(kPlannedStoreAttr);
      if (!attr)
        continue;
      TensorSharding planned = fromAttr(attr);
      TensorSharding stored = shardingOf(v);
      if (stored.usesAxis(*tpAxis) ||
          planned.dims.size() != stored.dims.size())
        continue;
      for (auto [d, p] : llvm::zip(stored.dims, planned.dims))
        if (p.isSplit()) {
          d.axes.insert(d.axes.begin(), *tpAxis);
          d.groups = p.groups;
        }
      if (!divides(shapeOf(v), stored, mesh))
        continue;
      pinReaders(v, update);
      setSharding(v, mesh, stored);
    }
  }

  /// Pins the layouts the ops before `update` read `v` in (the partitioner
  /// then gathers a parameter stored split further at each of them).
  void pinReaders(Value v, Operation *update) {
    for (Operation *user : v.getUsers())
      if (user->isBeforeInBlock(update) &&
          !user->hasAttr(kOperandShardingAttr)) {
        SmallVector<TensorSharding> in;
        for (Value o : user->getOperands())
          in.push_back(shardingOf(o));
        setOperandShardings(user, kOperandShardingAttr, mesh, in);
      }
  }

  /// ZeRO-3: a parameter the update reads is stored split over dp from
  /// then on; the ops before (forward and backward) keep the layouts they
  /// read it in, and gather it there.
  void placeParameter(Operation *update, Value v) {
    auto w = v.getDefiningOp<WeightOp>();
    if (zero < 3 || !w || w.getZeros() || !placed.insert(v).second)
      return;
    pinReaders(v, update);
    setSharding(v, mesh, splitOverDp(v, shardingOf(v), storedOverTp(v)));
  }

  const Mesh &mesh;
  llvm::StringMap<Value> parameters;
  int64_t zero = 0;
  std::optional<int64_t> dpAxis, tpAxis;
  bool plannedStoresPlaced = false;
  llvm::DenseSet<Value> placed;
  /// Gradient -> the parameter its update assigns.
  llvm::DenseMap<Value, Value> updated;
};

/// A partial sum over tp (1D, or a grid's axes) that several ops read is
/// summed where it is first read, once (the partitioner reshards a value
/// once per layout), rather than carried through each reader's linear ops
/// and summed per branch:
/// Megatron's one all-reduce of a column-parallel layer's input gradient,
/// where a layer norm's backward would otherwise reduce four products.
/// Later readers take it summed as the first reader did (Megatron-SP's
/// reduce-scatter, not a second, all-reduced copy). The same holds over dp
/// for forward values (a batch norm's statistics, which its running
/// statistics read too); the backward's partial sums over dp and
/// microbatches are the gradients' own business (their bucket).
class SharedPartials {
public:
  explicit SharedPartials(const Mesh &mesh) : mesh(mesh) {}

  void sum(Operation &op, SmallVectorImpl<TensorSharding> &in) {
    if (op.hasAttr(kOptimizerAttr))
      return;
    bool summed = false;
    for (auto [v, s] : llvm::zip(op.getOperands(), in)) {
      auto shared = [&, v = v](int64_t axis) { return isShared(v, axis); };
      bool partial = llvm::any_of(shardingOf(v).partial, shared);
      if (!partial || v.hasOneUse())
        continue;
      if (llvm::none_of(s.partial, shared)) {
        // Summed for this reader already (a strategy's layout).
        first.try_emplace(v, s);
        continue;
      }
      auto [it, isFirst] = first.try_emplace(v, s);
      if (isFirst) {
        TensorSharding &t = it->second;
        // On a tensor grid an activation's gradient is summed onto its
        // features, as the grid holds activations (a reduce-scatter; whole
        // readers cut theirs from it), not whole on every device.
        SmallVector<int64_t, 2> grid;
        for (int64_t a : t.partial)
          if (shared(a) && isGridAxis(a))
            grid.push_back(a);
        llvm::erase_if(t.partial, shared);
        if (grid.size() == 1 && t.dims.size() >= 2 &&
            !t.dims.back().isSplit() && !t.usesAxis(grid[0])) {
          TensorSharding onFeatures = t;
          onFeatures.dims.back().axes = {grid[0]};
          if (divides(shapeOf(v), onFeatures, mesh))
            t = std::move(onFeatures);
        }
        firstReader[v] = &op;
      }
      s = it->second;
      summed = true;
    }
    if (summed)
      setOperandShardings(&op, kOperandShardingAttr, mesh, in);
  }

  /// Later readers take a shared partial sum in the layout its first reader
  /// ended up reading it in (the other placements may change it: a
  /// product's output gradient read split as its forward result was).
  void settle(Operation &op, ArrayRef<TensorSharding> in) {
    for (auto [v, s] : llvm::zip(op.getOperands(), in))
      if (firstReader.lookup(v) == &op &&
          llvm::none_of(s.partial,
                        [&, v = v](int64_t a) { return isShared(v, a); }))
        first[v] = s;
  }

private:
  /// A tensor grid's axis that splits features.
  bool isGridAxis(int64_t axis) const {
    StringRef name = mesh.axisNames[axis];
    return name != "tp" && splitsFeatures(name);
  }

  bool isShared(Value v, int64_t axis) const {
    StringRef name = mesh.axisNames[axis];
    if (isTensorAxis(name))
      return true;
    Operation *def = v.getDefiningOp();
    return name == "dp" && def && !def->hasAttr(kGradientOfAttr);
  }

  const Mesh &mesh;
  llvm::DenseMap<Value, TensorSharding> first;
  llvm::DenseMap<Value, Operation *> firstReader;
};

/// An embedding's gradient (GatherOp's rule: a one-hot [idx..., rows] of
/// the indices contracted with the gradient's rows) where the table is
/// stored split by rows, as Megatron-LM's vocabulary-parallel embedding
/// runs it: each device makes the one-hot of its own rows from every index
/// (integers, gathered) and contracts it with the whole gradient (gathered
/// once), so its rows' gradient needs no sum over the table's axes. Left to
/// their rules, the one-hot would follow the indices' split and every
/// device would sum a whole table's partial gradient.
class TableGradients {
public:
  explicit TableGradients(func::FuncOp fn) {
    llvm::DenseMap<Attribute, GatherOp> gathers;
    for (auto g : fn.getOps<GatherOp>())
      if (Attribute id = g->getAttr(kForwardIdAttr))
        gathers[id] = g;
    for (auto gemm : fn.getOps<GemmOp>()) {
      GatherOp gather = gathers.lookup(gemm->getAttr(kGradientOfAttr));
      auto cast = gemm.getA().getDefiningOp<CastOp>();
      auto eq = cast ? cast.getInput().getDefiningOp<EqualOp>() : nullptr;
      if (!gather || !eq || !gemm.getTransA() || gemm.getTransB() ||
          normalizeAxis(gather.getAxis(), shapeOf(gather.getInput()).size()) ||
          !eq.getLhs().getDefiningOp<ConstantOp>() || !cast->hasOneUse())
        continue;
      tableOf[gemm] = tableOf[eq] = gather.getInput();
      // The indices' own ops (wrapping negative ones) run on all of them,
      // as the forward lookup read them (a strategy would split them like
      // the activations between layers).
      SmallVector<Value> work = {eq.getRhs()};
      while (!work.empty()) {
        Operation *def = work.pop_back_val().getDefiningOp();
        if (!def || def->getAttr(kGradientOfAttr) != gemm->getAttr(kGradientOfAttr) ||
            isa<ConstantOp>(def) || !tableOf.try_emplace(def, gather.getInput()).second)
          continue;
        llvm::append_range(work, def->getOperands());
      }
    }
  }

  /// Pins `op`'s operands where it is part of such a gradient; whether it
  /// did.
  bool place(Operation &op, SmallVectorImpl<TensorSharding> &in,
             const Mesh &mesh) {
    Value table = tableOf.lookup(&op);
    if (!table)
      return false;
    const DimSharding rows = shardingOf(table).dims.front();
    int64_t classes = shapeOf(table).front();
    if (!rows.isSplit() || rows.groups != 1 ||
        classes % mesh.size(rows.axes))
      return false;
    auto whole = [&](TensorSharding &t) {
      t.gatherAxes([&](int64_t a) { return llvm::is_contained(rows.axes, a); });
    };
    if (isa<EqualOp>(op)) {
      // The table's rows of the classes; every index.
      if (in[0].usesAxis(rows.axes.front()))
        return false;
      in[0].dims.back() = rows;
      whole(in[1]);
    } else if (isa<GemmOp>(op)) {
      whole(in[1]);
    } else {
      for (TensorSharding &t : in)
        whole(t);
    }
    setOperandShardings(&op, kOperandShardingAttr, mesh, in);
    return true;
  }

private:
  llvm::DenseMap<Operation *, Value> tableOf;
};

/// An attention's backward (its gradient rule rebuilds the forward's chain:
/// scores, softmax, products) runs on the heads its forward ran on, where
/// the forward split heads and not the sequence (Ulysses): it reads the
/// forward's head-split queries, keys and values and moves only the output
/// gradient and the input gradients between the layouts (all-to-alls, as
/// the forward's), rather than running on the sequence split and gathering
/// keys and values whole. An attention on whole heads has its backward
/// read its operands as the forward read them.
class AttentionGradients {
public:
  /// Notes a forward attention's operand layouts; pins the layouts of a
  /// backward op of such an attention. Whether it pinned.
  bool place(Operation &op, SmallVectorImpl<TensorSharding> &in,
             const Mesh &mesh) {
    if (auto attn = dyn_cast<AttentionOp>(op)) {
      Attribute id = op.getAttr(kForwardIdAttr);
      ArrayRef<int64_t> q = shapeOf(attn.getQuery());
      if (!id || q.size() != 4 || in.size() < 3 || in[0].dims[3].isSplit() ||
          !in[0].partial.empty())
        return false;
      TensorSharding onHeads = in[0];
      // Ring attention (queries, keys and values on the sequence split):
      // its backward runs on heads split over the ring's axes instead,
      // where they divide, as Ulysses' does (a ring backward would keep
      // the sequence split; gathering keys and values whole is worse).
      const DimSharding &rows = in[0].dims[2];
      if (rows.isSplit() && !in[0].dims[1].isSplit() && rows.groups == 1 &&
          in[1].dims[2] == rows && q[1] % mesh.size(rows.axes) == 0) {
        onHeads.dims[1] = rows;
        onHeads.dims[2] = DimSharding();
      }
      if (!onHeads.dims[1].isSplit() || onHeads.dims[2].isSplit()) {
        // Heads whole: the backward reads the queries, keys and values as
        // the forward read them (a cross-attention's keys and values
        // gathered from a sequence-split encoder), not as stored: on the
        // stored split the rebuilt chain would split the scores' keys and
        // sum the whole key and value gradients over the split.
        OpSharding read = inferOpSharding(&op, in, mesh);
        for (auto [k, v] : llvm::enumerate(op.getOperands().take_front(3)))
          if (read.operands[k] != shardingOf(v) &&
              read.operands[k].partial.empty())
            forwardReads[id].push_back({v, read.operands[k]});
        return false;
      }
      heads[id] = {q[1], onHeads};
      // The ops that made the queries, keys and values take their
      // gradients back in the layouts they made them in (the sequence
      // split): one all-to-all each, as the forward's.
      for (Value v : op.getOperands().take_front(3))
        if (Operation *def = v.getDefiningOp())
          if (Attribute made = def->getAttr(kForwardIdAttr))
            producers[made] = {v, shardingOf(v)};
      return false;
    }
    if (auto made = producers.find(op.getAttr(kGradientOfAttr));
        made != producers.end()) {
      auto [v, layout] = made->second;
      bool pinned = false;
      for (auto [o, t] : llvm::zip(op.getOperands(), in))
        if (shapeOf(o) == shapeOf(v) && t != layout && t.partial.empty()) {
          t = layout;
          pinned = true;
        }
      if (pinned)
        setOperandShardings(&op, kOperandShardingAttr, mesh, in);
      return pinned;
    }
    if (auto reads = forwardReads.find(op.getAttr(kGradientOfAttr));
        reads != forwardReads.end()) {
      bool pinned = false;
      for (auto [v, t] : llvm::zip(op.getOperands(), in))
        for (auto [read, layout] : reads->second)
          if (v == read && t != layout) {
            t = layout;
            pinned = true;
          }
      if (pinned)
        setOperandShardings(&op, kOperandShardingAttr, mesh, in);
      return pinned;
    }
    auto it = heads.find(op.getAttr(kGradientOfAttr));
    if (it == heads.end())
      return false;
    auto [count, layout] = it->second;
    bool pinned = false;
    for (auto [v, t] : llvm::zip(op.getOperands(), in)) {
      ArrayRef<int64_t> shape = shapeOf(v);
      if (shape.size() != 4 || shape[1] != count || !t.partial.empty())
        continue;
      TensorSharding want = layout;
      // The batch as the operand holds it (a broadcast one stays whole).
      want.dims[0] = shape[0] == 1 ? DimSharding() : t.dims[0];
      if (want != t) {
        t = want;
        pinned = true;
      }
    }
    if (pinned)
      setOperandShardings(&op, kOperandShardingAttr, mesh, in);
    return pinned;
  }

private:
  /// Forward id -> (heads, the queries' layout).
  llvm::DenseMap<Attribute, std::pair<int64_t, TensorSharding>> heads;
  /// Forward id of an attention on whole heads -> its operands that it
  /// read resharded, and the layouts it read them in.
  llvm::DenseMap<Attribute, SmallVector<std::pair<Value, TensorSharding>, 3>>
      forwardReads;
  /// Forward id of an op making an attention's operand -> (that operand,
  /// its layout).
  llvm::DenseMap<Attribute, std::pair<Value, TensorSharding>> producers;
};

/// An op's output gradient arriving whole where its forward result was
/// split (the gradient of a gather: a head's logits over the whole sequence
/// while the layer before ran on the sequence split) is read as that result
/// was laid out: a slice, free, so the op's backward runs on its part as
/// its forward did, and the gradients of weights read whole join the
/// bucket their split peers sum in, rather than every device computing
/// the whole input gradient and summing whole weight gradients apart.
/// Only ops that read weights (dX = dY W^T) are pinned: a whole gradient
/// can be read in any layout for free, so the ops before them (a reshape)
/// leave it whole for their readers, and a product of two activations
/// (dW = X^T dY) is gatherCheaperFactor's to lay out.
class OutputGradients {
public:
  explicit OutputGradients(func::FuncOp fn) {
    for (Operation &op : fn.getBody().front().without_terminator())
      if (Attribute id = op.getAttr(kForwardIdAttr))
        forward[id] = &op;
    if (auto module = fn->getParentOfType<ModuleOp>())
      if (std::optional<ParallelPlan> plan = readPlan(module))
        microbatches = std::max<int64_t>(1, plan->microbatches);
  }

  /// Pins `op`'s output-gradient operands to its forward results' layouts
  /// where they are whole where those are split; whether it pinned. Also
  /// where the gradient arrives split another way than the result was made
  /// and, read so, the op's rule would gather a weight (`fromWeights`) of
  /// more bytes than moving the gradient to the result's layout (a
  /// row-parallel layer's sum read on the sequence split: its dX would
  /// gather the whole weight rather than the output gradient).
  bool place(Operation &op, SmallVectorImpl<TensorSharding> &in,
             const Mesh &mesh, const llvm::DenseSet<Value> &fromWeights) {
    Attribute id = op.getAttr(kGradientOfAttr);
    Operation *fwd = id ? forward.lookup(id) : nullptr;
    if (!fwd)
      return false;
    bool pinned = false;
    for (auto [k, v, t] : llvm::enumerate(op.getOperands(), in)) {
      // An output gradient: made by a later op's rule.
      Operation *def = v.getDefiningOp();
      Attribute from = def ? def->getAttr(kGradientOfAttr) : nullptr;
      if (!from || from == id || !t.partial.empty())
        continue;
      for (Value r : fwd->getResults()) {
        TensorSharding made = shardingOf(r);
        if (shapeOf(r) != shapeOf(v) || made == t)
          continue;
        bool slices = made.partial.empty() && refines(made, t);
        made.partial.clear();
        if (slices || (made != t && gathersLess(op, in, k, made, mesh,
                                                fromWeights, microbatches))) {
          t = made;
          pinned = true;
          break;
        }
      }
    }
    if (pinned)
      setOperandShardings(&op, kOperandShardingAttr, mesh, in);
    return pinned;
  }

private:
  /// Whether moving operand `k` (an output gradient) from `in[k]` to `to`
  /// moves fewer bytes than the weights `op`'s rule gathers on `in`, once
  /// for each of the step's `microbatches` (the program is split into them
  /// later; the gradient's bytes are the whole step's).
  static bool gathersLess(Operation &op, ArrayRef<TensorSharding> in,
                          unsigned k, const TensorSharding &to,
                          const Mesh &mesh,
                          const llvm::DenseSet<Value> &fromWeights,
                          int64_t microbatches) {
    OpSharding rule = inferOpSharding(&op, in, mesh);
    double weights = 0;
    for (auto [i, v] : llvm::enumerate(op.getOperands()))
      if (i < rule.operands.size() &&
          (v.getDefiningOp<WeightOp>() || fromWeights.contains(v)))
        weights += stepsMovedBytes(planReshard(in[i], rule.operands[i]),
                                   double(tensorBytes(v)), mesh);
    if (weights <= 0)
      return false;
    Value dy = op.getOperand(k);
    return stepsMovedBytes(planReshard(in[k], to), double(tensorBytes(dy)),
                           mesh) < weights * double(microbatches);
  }

  /// Whether `fine` splits every dimension `coarse` splits, as it does.
  static bool refines(const TensorSharding &fine,
                      const TensorSharding &coarse) {
    return llvm::all_of(llvm::zip(fine.dims, coarse.dims), [](auto p) {
      return !std::get<1>(p).isSplit() || std::get<0>(p) == std::get<1>(p);
    });
  }

  llvm::DenseMap<Attribute, Operation *> forward;
  int64_t microbatches = 1;
};

/// Whether `op` reads a weight (or a value made of weights alone).
bool readsWeights(Operation &op, const llvm::DenseSet<Value> &fromWeights) {
  return llvm::any_of(op.getOperands(), [&](Value v) {
    return v.getDefiningOp<WeightOp>() || fromWeights.contains(v);
  });
}

} // namespace

llvm::DenseSet<Value> valuesMadeOfWeights(Block &body) {
  llvm::DenseSet<Value> made;
  for (Operation &op : body.without_terminator()) {
    if (op.hasAttr(kGradientOfAttr) || op.hasAttr(kOptimizerAttr) ||
        op.getNumRegions() || !isPure(&op) || op.getNumResults() == 0)
      continue;
    bool any = false, only = true;
    for (Value v : op.getOperands()) {
      auto w = v.getDefiningOp<WeightOp>();
      bool weight = (w && !w.getZeros()) || made.contains(v);
      only &= weight || v.getDefiningOp<ConstantOp>();
      any |= weight;
    }
    if (any && only)
      made.insert(op.result_begin(), op.result_end());
  }
  return made;
}

struct TrainingPropagation::State {
  State(func::FuncOp fn, const Mesh &mesh)
      : mesh(mesh), layouts(fn, mesh), sharedPartials(mesh), tables(fn),
        cubes(mesh), outputGradients(fn),
        fromWeights(valuesMadeOfWeights(fn.getBody().front())) {}
  const Mesh &mesh;
  TrainingLayouts layouts;
  SharedPartials sharedPartials;
  TableGradients tables;
  AttentionGradients attentions;
  CubeGradients cubes;
  OutputGradients outputGradients;
  WeightGradientDestinations weightGradients;
  /// Values made from weights alone (remade ones included).
  llvm::DenseSet<Value> fromWeights;
};

TrainingPropagation::TrainingPropagation(func::FuncOp fn, const Mesh &mesh)
    : state(std::make_unique<State>(fn, mesh)) {
  state->layouts.remakeWeightViews(fn, state->fromWeights);
}

TrainingPropagation::~TrainingPropagation() = default;

void TrainingPropagation::placeStored(Operation &op) {
  state->layouts.placeStored(op);
}

void TrainingPropagation::adjustOperands(Operation &op,
                                         SmallVectorImpl<TensorSharding> &in,
                                         bool strategyPinned) {
  state->layouts.sumGradients(op, in);
  state->sharedPartials.sum(op, in);
  state->weightGradients.note(op, in, state->fromWeights);
  placeGradients(op, in, strategyPinned);
  state->sharedPartials.settle(op, in);
}

void TrainingPropagation::placeGradients(Operation &op,
                                         SmallVectorImpl<TensorSharding> &in,
                                         bool strategyPinned) {
  if (state->tables.place(op, in, state->mesh) ||
      state->attentions.place(op, in, state->mesh) ||
      state->cubes.place(op, in, state->mesh))
    return;
  // The rest lays out the backward ops a strategy left to their rules.
  if (!op.hasAttr(kGradientOfAttr) || strategyPinned)
    return;
  if (readsWeights(op, state->fromWeights))
    state->outputGradients.place(op, in, state->mesh, state->fromWeights);
  else if (isa<ContractionOpInterface>(op))
    gatherCheaperFactor(op, in, state->mesh, state->weightGradients.of(op));
}

} // namespace pcc
