//===- CpuEmitter.cpp - per-device module to C++ over pccrt ---------------===//
//
// Invariants (besides the schedule's, Schedule.h):
// - Generated code is split into part functions of about kPartBytes; each
//   part declares exactly the names it uses.
// - A weight's pointer is its weights-file offset plus, for a split weight,
//   this device's block (pccrt::blockIndex).
//
//===----------------------------------------------------------------------===//

#include "CpuEmitter.h"

#include "pcc/Codegen/Cpu/CpuTarget.h"
#include "pcc/Dialect/PCC/IR/Fusion.h"
#include "pcc/Dialect/PCC/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;

namespace pcc::cpu {

int64_t scratchBytes(Operation *op, const Mesh &mesh) {
  if (auto attn = dyn_cast<AttentionOp>(op))
    return attentionScratchBytes(attn);
  // SUMMA: one panel of each operand; a split layer norm: two sums a row.
  if (op->hasAttr("summa_axes"))
    return (tensorBytes(op->getOperand(0)) + tensorBytes(op->getOperand(1)));
  if (auto ln = dyn_cast<LayerNormOp>(op); ln && ln.getStatAxes())
    return 2 * 8 *
           numElements(typeOf(ln.getInput()).getShape().drop_back());
  // A softmax over a split axis: each line's (max, sum), this device's and
  // the group's.
  if (auto axes = op->getAttrOfType<DenseI64ArrayAttr>("stat_axes");
      axes && isa<SoftmaxOp, LogSoftmaxOp>(op)) {
    auto t = typeOf(op->getOperand(0));
    int64_t a = op->getAttrOfType<IntegerAttr>("axis").getInt();
    int64_t group = mesh.size(axes.asArrayRef());
    return 2 * 8 * (t.getNumElements() / t.getDimSize(a)) * (1 + group);
  }
  if (auto conv = dyn_cast<ConvOp>(op)) {
    auto w = typeOf(conv.getFilter()), y = typeOf(conv.getResult());
    return numElements(w.getShape().drop_front(1)) *
           numElements(y.getShape().drop_front(2)) * 4;
  }
  // Only axis sets with gaps reduce in several passes through scratch.
  if (auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
      axes && op->getNumOperands() == 1) {
    ArrayRef<int64_t> a = axes.asArrayRef();
    for (size_t i = 1; i < a.size(); ++i)
      if (a[i] != a[i - 1] + 1)
        return 2 * tensorBytes(op->getOperand(0));
  }
  return 0;
}

std::string Emitter::splitArray(const TensorSharding &s) {
  std::string out = "{";
  for (const DimSharding &d : s.dims) {
    out += "{" + std::to_string(d.axes.size()) + ", {";
    for (size_t i = 0; i < 4; ++i)
      out += (i ? ", " : "") + std::to_string(i < d.axes.size() ? d.axes[i] : 0);
    out += "}, " + std::to_string(d.isSplit() ? d.groups : 1) + "}, ";
  }
  return out + "}";
}

int Emitter::groupOf(ArrayRef<int64_t> axes) {
  for (auto [i, g] : llvm::enumerate(groups))
    if (ArrayRef<int64_t>(g) == axes)
      return i;
  groups.emplace_back(axes.begin(), axes.end());
  return groups.size() - 1;
}

std::string Emitter::weightPointer(Operation *op, const WeightsEntry &e) {
  std::string at = std::to_string(e.offset);
  if (e.numBlocks > 1) {
    TensorSharding split = shardingOf(op->getResult(0));
    std::string id = std::to_string(nextTemp++);
    os << "  static const DimSplit split" << id << "[] = " << splitArray(split)
       << ";\n";
    at += " + " + std::to_string(e.stride) + " * blockIndex(mesh, " +
          std::to_string(split.dims.size()) + ", split" + id + ")";
  }
  return at;
}

void Emitter::emitCopy(StringRef dst, StringRef src, int64_t bytes) {
  if (kind == SourceKind::Cuda)
    os << "  copyBytes(" << dst << ", " << src << ", " << bytes << ");\n";
  else
    os << "  __builtin_memcpy(" << dst << ", " << src << ", " << bytes
       << ");\n";
}

LogicalResult Emitter::requireF32(Operation *op, Value v) {
  if (!typeOf(v).getElementType().isF32())
    return op->emitError() << "code generation does not support '"
                           << op->getName() << "' on "
                           << typeOf(v).getElementType() << " (f32 only)";
  return success();
}

std::string Emitter::scratch(Operation *op) {
  return "reinterpret_cast<float *>(arena + " +
         std::to_string(schedule.scratchOffset(op)) + ")";
}

LogicalResult Emitter::unsupported(Operation *op) {
  return op->emitError() << "code generation does not support '"
                         << op->getName() << "' yet";
}

/// One library call for `op`, by op family.
LogicalResult Emitter::emitKernel(Operation *op) {
  ++result.kernelCalls;
  os << "  // " << op->getName() << "\n";
  if (isa<MatMulOp, GemmOp, ConvOp>(op))
    return emitContraction(op);
  if (auto attn = dyn_cast<AttentionOp>(op))
    return emitAttention(attn);
  if (isa<MaxPoolOp, AveragePoolOp, GlobalAveragePoolOp>(op))
    return emitPooling(op);
  if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, BatchNormOp>(op))
    return emitNormalization(op);
  if (auto dropout = dyn_cast<DropoutOp>(op))
    return emitDropout(dropout);
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
          ArgMaxOp, ArgMinOp, TopKOp>(op))
    return emitReduction(op);
  if (isa<GatherOp, ShardGatherOp, ScatterNDOp, TransposeOp, SliceOp, ConcatOp,
          SplitOp, TriluOp>(op))
    return emitDataMovement(op);
  if (isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
          shard::AllSliceOp, shard::AllToAllOp, SendOp, RecvOp>(op))
    return emitCollective(op);
  return unsupported(op);
}

void Emitter::declare(const std::string &name, function_ref<void()> write) {
  size_t mark = body.size();
  write();
  os.flush();
  declIndex[name] = declIndex.size();
  declOf[name] = body.substr(mark);
  body.resize(mark);
}

LogicalResult Emitter::declareValues() {
  auto fresh = [&] { return "v" + std::to_string(nextValue++); };
  llvm::SmallDenseSet<int64_t> stageWeights;
  stageWeightBytes = 0;
  auto checkType = [&](Value v, Location loc) -> LogicalResult {
    if (cppType(typeOf(v).getElementType()).empty())
      return emitError(loc) << "code generation does not support element type "
                            << typeOf(v).getElementType();
    return success();
  };
  for (BlockArgument arg : fn.getArguments()) {
    if (failed(checkType(arg, arg.getLoc())))
      return failure();
    std::string name = "in" + std::to_string(arg.getArgNumber());
    declare(name, [&] {
      os << "  const " << elemType(arg) << " *" << name
         << " = static_cast<const " << elemType(arg) << " *>(inputs["
         << arg.getArgNumber() << "]);\n";
    });
    names[arg] = name;
  }
  for (Operation *op : schedule.ops) {
    for (Value r : op->getResults())
      if (failed(checkType(r, op->getLoc())))
        return failure();
    if (isa<WeightOp, ConstantOp>(op)) {
      Value r = op->getResult(0);
      std::string name = fresh();
      declare(name, [&] {
        // One entry per weight (and layout) and per constant: add it once.
        WeightsEntry e = result.weights.add(op, mesh);
        std::string at = weightPointer(op, e);
        if (stageWeights.insert(e.offset).second)
          stageWeightBytes += e.bytes;
        // A GPU reads the weights it uses from device memory.
        std::string where =
            kind == SourceKind::Cuda
                ? "deviceWeight(weights, " + at + ", " +
                      std::to_string(e.bytes) + ")"
                : "weights + " + at;
        os << "  const " << elemType(r) << " *" << name
           << " = reinterpret_cast<const " << elemType(r) << " *>(" << where
           << ");\n";
      });
      names[r] = name;
      continue;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      names[reshape.getResult()] = names.lookup(reshape.getInput());
      continue;
    }
    for (Value r : op->getResults()) {
      if (auto k = schedule.outputIndex.find(r);
          k != schedule.outputIndex.end()) {
        std::string name = "out" + std::to_string(k->second);
        declare(name, [&] {
          os << "  " << elemType(r) << " *" << name << " = static_cast<"
             << elemType(r) << " *>(outputs[" << k->second << "]);\n";
        });
        names[r] = name;
        continue;
      }
      // A parameter's new value written over the old one: the weight's
      // bytes are this rank's own to write (see the assign).
      if (Value target = schedule.storedIn.lookup(r)) {
        std::string name = fresh(), type = elemType(r);
        declare(name, [&] {
          os << "  " << type << " *" << name << " = const_cast<" << type
             << " *>(" << names.lookup(target) << ");\n";
        });
        names[r] = name;
        continue;
      }
      if (!schedule.bufferIndex.count(r))
        continue;
      std::string name = fresh();
      declare(name, [&] {
        os << "  " << elemType(r) << " *" << name << " = reinterpret_cast<"
           << elemType(r) << " *>(arena + " << schedule.offsetOf(r)
           << ");\n";
      });
      names[r] = name;
    }
  }
  return success();
}

void Emitter::closePart() {
  os.flush();
  std::vector<llvm::StringRef> names(used.keys().begin(), used.keys().end());
  llvm::sort(names, [&](llvm::StringRef a, llvm::StringRef b) {
    return declIndex.lookup(a) < declIndex.lookup(b);
  });
  std::string text;
  llvm::raw_string_ostream f(text);
  // CPU parts: built for each vector width (PCC_PART, pccrt/Kernels.h).
  if (kind == SourceKind::Cpp)
    f << "PCC_PART ";
  f << "bool part" << parts.size()
    << "(const void *const *inputs, void *const *outputs, char *arena,\n"
    << "           const char *weights, Mesh &mesh) {\n";
  for (llvm::StringRef n : names)
    f << declOf.lookup(n);
  f << body << "  return true;\n}\n\n";
  // CUDA: the part's kernels go before it, in its translation unit.
  parts.push_back(kernels + text);
  kernels.clear();
  body.clear();
  used.clear();
}

LogicalResult Emitter::emitOp(Operation *op) {
  if (isa<WeightOp, ConstantOp, ReshapeOp>(op))
    return success();
  // The weight's bytes are this rank's own (a private writable mapping, or
  // the device copy on GPU ranks).
  if (auto assign = dyn_cast<AssignOp>(op)) {
    if (schedule.storedIn.lookup(assign.getValue()) == assign.getTarget())
      return success(); // written in place by its loop
    std::string to = "const_cast<" + elemType(assign.getTarget()) + " *>(" +
                     ptr(assign.getTarget()) + ")";
    emitCopy(to, ptr(assign.getValue()), tensorBytes(assign.getValue()));
    return success();
  }
  // Fused into a later op's loop, or a GEMM run with its user's epilogue.
  if (schedule.isFusedAway(op))
    return success();
  if (isPointwise(op))
    return emitFusedLoop(op);
  return emitKernel(op);
}

/// Source bytes per part function: compilers optimise small functions in
/// about linear time but large ones far worse. (Parts are grouped into units
/// of EmitOptions::unitBytes, which compile in parallel.)
constexpr size_t kPartBytes = 16 << 10;

/// The parts of one pipeline stage (the whole program without stages): its
/// schedule, values, ops and the outputs it returns.
LogicalResult Emitter::emitStage(int64_t stage, int64_t stages) {
  // GPU ranks apply a 16-bit GEMM's bias and residual adds in cuBLASLt.
  auto absorbs = [&](Operation *product, ArrayRef<Operation *> members) {
    return gemmEpilogue(product, members).has_value();
  };
  schedule = scheduleFunction(
      fn, [&](Operation *op) { return scratchBytes(op, mesh); },
      stages > 1 ? std::optional(stage) : std::nullopt,
      kind == SourceKind::Cuda ? AbsorbsEpilogueFn(absorbs) : nullptr);
  // One arena serves whichever stage a device runs.
  result.arenaBytes = std::max(result.arenaBytes, schedule.arenaBytes);
  result.unsharedBytes = std::max(result.unsharedBytes, schedule.unsharedBytes);
  if (failed(declareValues()) ||
      failed(checkDeviceMemory(fn, schedule.arenaBytes, stageWeightBytes,
                               options.deviceMemoryBytes)))
    return failure();
  // A step streaming microbatches runs its prologue (over every microbatch
  // first), then each microbatch's forward and backward (apart, under a
  // pipeline schedule; a zero-bubble step's backward as B, then W), then
  // (after the last) the update.
  enum Phase { Prologue, Forward, Backward, Weight, Once };
  auto phaseOf = [](Operation *op) {
    return op->hasAttr(kPrologueAttr)         ? Prologue
           : op->hasAttr(kOncePerStepAttr)    ? Once
           : op->hasAttr(kBackwardWeightAttr) ? Weight
           : op->hasAttr(kBackwardAttr)       ? Backward
                                              : Forward;
  };
  // What a later part of a microbatch reads of its earlier parts, kept per
  // microbatch in flight while they run apart: the backward's (B and W's)
  // reads of the forward, and W's of the forward and B.
  struct Stash {
    SmallVector<Value> values;
    llvm::DenseSet<Value> seen;
    int64_t bytes = 0;
  };
  Stash stash, weightStash;
  for (Operation *op : schedule.ops) {
    Phase reader = phaseOf(op);
    if (reader != Backward && reader != Weight)
      continue;
    for (Value v : op->getOperands()) {
      Value base = schedule.aliasOf.lookup(v) ? schedule.aliasOf.lookup(v) : v;
      Operation *def = base.getDefiningOp();
      if (!def || !schedule.bufferIndex.count(base))
        continue;
      Phase made = phaseOf(def);
      for (Stash *s : {&stash, &weightStash}) {
        bool kept = s == &stash ? made == Forward
                                : reader == Weight &&
                                      (made == Forward || made == Backward);
        if (kept && s->seen.insert(base).second) {
          s->values.push_back(base);
          s->bytes += (tensorBytes(base) + 63) / 64 * 64;
        }
      }
    }
  }
  auto emitStash = [&](const Stash &s, bool save) {
    if (s.values.empty())
      return;
    bool weights = &s == &weightStash;
    os << "  if (" << (weights ? "weightsApart" : "splitPhases")
       << "(mesh)) {\n    char *slot = "
       << (weights ? "weightStashSlot" : "stashSlot") << "(mesh, " << s.bytes
       << ");\n";
    int64_t at = 0;
    for (Value v : s.values) {
      std::string slotPtr = "slot + " + std::to_string(at);
      os << "  ";
      emitCopy(save ? slotPtr : ptr(v), save ? ptr(v) : slotPtr,
               tensorBytes(v));
      at += (tensorBytes(v) + 63) / 64 * 64;
    }
    os << "  }\n";
  };
  Operation *ret = fn.getBody().front().getTerminator();
  // Each output where its value is made; Once: the last microbatch's.
  auto copyOutputs = [&](Phase phase) {
    for (auto [k, v] : llvm::enumerate(ret->getOperands())) {
      Operation *def = v.getDefiningOp();
      Phase made = def ? phaseOf(def) : Forward;
      auto direct = schedule.outputIndex.find(v);
      if (direct != schedule.outputIndex.end() && direct->second == k)
        continue; // made in its output buffer
      if (outputStage(fn, k) == stage && std::max(made, Forward) == phase)
        emitCopy("outputs[" + std::to_string(k) + "]", ptr(v), tensorBytes(v));
    }
  };
  StageParts range;
  range.first = parts.size();
  Phase phase = Prologue;
  auto enter = [&](Phase next) {
    if (phase == Forward || phase == Backward || phase == Weight)
      copyOutputs(phase);
    if (phase == Forward)
      emitStash(stash, /*save=*/true);
    if (phase == Backward)
      emitStash(weightStash, /*save=*/true);
    os.flush();
    if (!body.empty())
      closePart();
    if (next == Forward)
      range.forward = parts.size();
    if (next == Backward) {
      range.backward = parts.size();
      emitStash(stash, /*save=*/false);
    }
    if (next == Weight) {
      range.weight = parts.size();
      emitStash(weightStash, /*save=*/false);
    }
    if (next == Once)
      range.once = parts.size();
    phase = next;
  };
  for (Operation *op : schedule.ops) {
    // Weights and constants emit nothing (a stage's copy may sit anywhere).
    if (isa<WeightOp, ConstantOp>(op))
      continue;
    Phase next = phaseOf(op);
    if (next < phase)
      return op->emitError("internal error: the ops of a step's prologue, "
                           "forward, backward and update are out of order");
    while (phase < next)
      enter(Phase(phase + 1));
    bool lastRun = op->hasAttr(kPrologueLastAttr);
    if (lastRun)
      os << "  if (lastMicrobatch(mesh)) {\n";
    if (failed(emitOp(op)))
      return failure();
    if (lastRun)
      os << "  }\n";
    if (body.size() >= std::min(kPartBytes, options.unitBytes))
      closePart();
  }
  while (phase < Once)
    enter(Phase(phase + 1));
  copyOutputs(Once);
  os.flush();
  if (!body.empty() || int64_t(parts.size()) == range.first)
    closePart();
  range.end = parts.size();
  stageParts.push_back(range);
  // Without stages a microbatch's forward and backward run together (the
  // runtime's Phase::Whole): nothing is stashed.
  result.stageMemory.push_back({stageWeightBytes, schedule.arenaBytes,
                                stages > 1 ? stash.bytes : 0,
                                stages > 1 ? weightStash.bytes : 0});
  return success();
}

int64_t Emitter::pipelineDevices() const {
  int64_t axis = mesh.axisNamed("pp");
  return axis < 0 ? 1 : mesh.shape[axis];
}

FailureOr<EmittedModel> Emitter::run() {
  if (fn.getBody().getBlocks().size() != 1)
    return fn.emitError("code generation needs a single-block function");
  if (failed(checkTensorSizes(fn, options.deviceMemoryBytes)))
    return failure();
  int64_t stages = stageCount(fn);
  for (int64_t s = 0; s < stages; ++s)
    if (failed(emitStage(s, stages)))
      return failure();
  // Interleaved 1F1B: each stage of a device gets its own arena.
  int64_t devices = pipelineDevices();
  if (stages > devices) {
    SmallVector<int64_t> used(devices, 0);
    for (int64_t s = 0; s < stages; ++s) {
      stageParts[s].arenaOffset = used[s % devices];
      used[s % devices] += llvm::alignTo(result.stageMemory[s].arenaBytes, 64);
    }
    result.arenaBytes = *llvm::max_element(used);
  }

  result.sources = assembleSources(modelTables());
  return std::move(result);
}

} // namespace pcc::cpu

namespace pcc {

FailureOr<EmittedModel> emitSource(ModuleOp module, const EmitOptions &options,
                                   cpu::SourceKind kind) {
  auto fn = module.lookupSymbol<func::FuncOp>("main");
  if (!fn)
    return module.emitError("module has no func.func @main");
  Mesh mesh;
  if (std::optional<Mesh> m = readMesh(module))
    mesh = *m;
  else
    mesh.shape = {1}, mesh.axisNames = {"dp"};
  if (mesh.shape.size() > 8 || mesh.numDevices() > (1 << 20))
    return module.emitError("code generation supports meshes of up to 8 axes "
                            "and 2^20 devices");
  // Masks the kernels compute from indices, once the program is a device's.
  if (failed(raiseCausalMasks(fn)))
    return failure();
  cpu::scatterEmbeddingGradients(fn);
  cpu::foldOperandTransposes(fn);
  cpu::widenSixteenBitKernels(fn, kind == cpu::SourceKind::Cuda);
  if (kind == cpu::SourceKind::Cuda)
    cpu::foldHeadTransposes(fn);
  cpu::Emitter emitter(fn, mesh, options, kind);
  return emitter.run();
}

FailureOr<EmittedModel> emitCpp(ModuleOp module, const EmitOptions &options) {
  return emitSource(module, options, cpu::SourceKind::Cpp);
}

FailureOr<EmittedModel> emitCuda(ModuleOp module, const EmitOptions &options) {
  return emitSource(module, options, cpu::SourceKind::Cuda);
}

} // namespace pcc
