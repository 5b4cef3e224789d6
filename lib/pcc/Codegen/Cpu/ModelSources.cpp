//===- ModelSources.cpp - the model's tables and units ----------------------===//

#include "CpuEmitter.h"

#include "pcc/Autodiff/TrainStep.h"
#include "pcc/Dialect/PCC/Transforms/Passes.h"
#include "pcc/Dialect/PCC/Transforms/Precision.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace pcc::cpu {

/// The model's tables: shapes and layouts of inputs and outputs, the mesh
/// and its communication groups.
namespace {

/// Per function result, the model's shape of a result returned padded
/// (pcc-pad-vocabulary), else null.
SmallVector<DenseI64ArrayAttr> outputUnpaddedShapes(func::FuncOp fn) {
  SmallVector<DenseI64ArrayAttr> shapes;
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    shapes.push_back(
        fn.getResultAttrOfType<DenseI64ArrayAttr>(i, kUnpaddedResultAttr));
  return shapes;
}

/// Per stored weight a training step assigns, in assign order, its
/// initializer's shape when held padded, else null.
SmallVector<DenseI64ArrayAttr> trainedUnpaddedShapes(func::FuncOp fn) {
  SmallVector<DenseI64ArrayAttr> shapes;
  for (auto assign : fn.getOps<AssignOp>())
    shapes.push_back(
        assign.getTarget().getDefiningOp<WeightOp>().getUnpaddedAttr());
  return shapes;
}

} // namespace

std::string Emitter::modelTables() {
  std::string text;
  llvm::raw_string_ostream out(text);
  auto describe = [&](StringRef prefix, ArrayRef<Type> types,
                      function_ref<StringRef(unsigned)> nameOf,
                      function_ref<TensorSharding(unsigned)> layoutOf) {
    for (auto [i, t] : llvm::enumerate(types)) {
      auto rt = cast<RankedTensorType>(t);
      TensorSharding layout = layoutOf(i);
      out << "const int64_t " << prefix << "Shape" << i << "[] = {"
          << joinInts(SmallVector<int64_t>(
                 llvm::map_range(llvm::enumerate(rt.getShape()), [&](auto e) {
                   const DimSharding &d = layout.dims[e.index()];
                   return e.value() * (d.isSplit() ? mesh.size(d.axes) : 1);
                 })))
          << (rt.getRank() ? "" : "0") << "};\n";
      if (!layout.isReplicated())
        out << "const DimSplit " << prefix << "Split" << i << "[] = "
            << splitArray(layout) << ";\n";
    }
    out << "const TensorDesc " << prefix << "Descs[] = {\n";
    for (auto [i, t] : llvm::enumerate(types)) {
      auto rt = cast<RankedTensorType>(t);
      out << "  {" << cppString(nameOf(i)) << ", static_cast<DType>("
          << onnxCode(rt.getElementType()) << "), " << rt.getRank() << ", "
          << prefix << "Shape" << i << ", "
          << (layoutOf(i).isReplicated() ? std::string("nullptr")
                                         : (prefix + "Split" + Twine(i)).str())
          << "},\n";
    }
    out << "};\n\n";
  };
  auto fnType = fn.getFunctionType();
  auto argName = [&](unsigned i) -> StringRef {
    if (auto n = fn.getArgAttrOfType<StringAttr>(i, "pcc.name"))
      return n.getValue();
    return "input";
  };
  auto resName = [&](unsigned i) -> StringRef {
    if (auto n = fn.getResultAttrOfType<StringAttr>(i, "pcc.name"))
      return n.getValue();
    return "output";
  };
  auto layoutOf = [&](DictionaryAttr attrs, Type t) {
    if (attrs)
      if (auto s = attrs.getAs<ShardingAttr>(kShardingAttr))
        return fromAttr(s);
    return TensorSharding::replicated(cast<RankedTensorType>(t).getRank());
  };
  describe("input", fnType.getInputs(), argName, [&](unsigned i) {
    return layoutOf(fn.getArgAttrDict(i), fnType.getInput(i));
  });
  describe("output", fnType.getResults(), resName, [&](unsigned i) {
    return layoutOf(fn.getResultAttrDict(i), fnType.getResult(i));
  });
  // A training step's stored weights (pcc.assign targets): where each
  // device's block lies, for --save and --resume.
  SmallVector<WeightOp> trained;
  for (auto assign : fn.getOps<AssignOp>())
    trained.push_back(assign.getTarget().getDefiningOp<WeightOp>());
  SmallVector<Type> trainedTypes;
  SmallVector<int64_t> offsets, strides, stages;
  for (auto assign : fn.getOps<AssignOp>())
    if (auto at = assign->getAttrOfType<IntegerAttr>(kStageAttr))
      stages.push_back(at.getInt() % pipelineDevices());
    else
      stages.push_back(0);
  for (WeightOp w : trained) {
    const WeightsEntry &e = result.weights.add(w, mesh);
    trainedTypes.push_back(w.getType());
    offsets.push_back(e.offset);
    strides.push_back(e.stride);
  }
  if (!trained.empty()) {
    describe("trained", trainedTypes,
             [&](unsigned i) { return trained[i].getName(); },
             [&](unsigned i) { return shardingOf(trained[i].getResult()); });
    out << "const int64_t trainedOffsets[] = {" << joinInts(offsets)
        << "};\nconst int64_t trainedStrides[] = {" << joinInts(strides)
        << "};\nconst int32_t trainedStages[] = {" << joinInts(stages)
        << "};\n";
  }
  // Outputs returned padded (logits over a padded vocabulary) are written
  // and checked at the model's shapes; padded weights are saved and
  // resumed at their initializers'.
  auto shapeTable = [&](StringRef name, ArrayRef<DenseI64ArrayAttr> shapes) {
    if (llvm::all_of(shapes, [](DenseI64ArrayAttr s) { return !s; }))
      return;
    SmallVector<std::string> refs;
    for (auto [k, shape] : llvm::enumerate(shapes)) {
      refs.push_back(shape ? (name + Twine(k)).str() : "nullptr");
      if (shape)
        out << "const int64_t " << refs.back() << "[] = {"
            << joinInts(shape.asArrayRef()) << "};\n";
    }
    out << "const int64_t *const " << name << "[] = {" << llvm::join(refs, ", ")
        << "};\n";
  };
  shapeTable("outputUnpadded", outputUnpaddedShapes(fn));
  shapeTable("trainedUnpadded", trainedUnpaddedShapes(fn));
  // Trained weights that join initializers (pcc.weight ... concat): saved
  // and resumed as those initializers.
  if (llvm::any_of(trained,
                   [](WeightOp w) { return bool(w.getPartsAttr()); })) {
    SmallVector<std::string> refs;
    for (auto [k, w] : llvm::enumerate(trained)) {
      auto parts = w.getPartsAttr();
      if (!parts) {
        refs.push_back("nullptr");
        continue;
      }
      int64_t axis = w.getPartsAxisAttr().getInt();
      SmallVector<std::string> names;
      for (StringRef name : parts.getAsValueRange<StringAttr>())
        names.push_back(cppString(name));
      ArrayRef<int64_t> sizes = w.getPartSizesAttr().asArrayRef();
      out << "const char *const trainedPartNames" << k << "[] = {"
          << llvm::join(names, ", ") << "};\nconst int64_t trainedPartSizes"
          << k << "[] = {" << joinInts(sizes)
          << "};\nconst TrainedParts trainedParts" << k << " = {" << axis
          << ", " << names.size() << ", trainedPartNames" << k
          << ", trainedPartSizes" << k << "};\n";
      refs.push_back("&trainedParts" + std::to_string(k));
    }
    out << "const TrainedParts *const trainedParts[] = {"
        << llvm::join(refs, ", ") << "};\n";
  }
  out << "const int64_t meshShape[] = {" << joinInts(mesh.shape) << "};\n"
      << "const char *const meshAxes[] = {";
  for (const std::string &n : mesh.axisNames)
    out << cppString(n) << ", ";
  out << "};\n";
  if (!groups.empty()) {
    out << "const GroupDesc groups[] = {\n";
    for (const auto &g : groups) {
      SmallVector<int64_t> axes(g);
      axes.resize(4, 0);
      out << "  {" << g.size() << ", {" << joinInts(axes) << "}},\n";
    }
    out << "};\n";
  }
  return text;
}

std::vector<EmittedSource>
Emitter::assembleSources(const std::string &tables) {
  auto sourceAttr =
      fn->getParentOfType<ModuleOp>()->getAttrOfType<StringAttr>("pcc.source");
  std::string source = sourceAttr ? sourceAttr.getValue().str() : "an MLIR module";
  bool cuda = kind == SourceKind::Cuda;
  std::string ext = cuda ? ".cu" : ".cpp";
  std::string prologue =
      "// Generated by pcc from " + commentText(source) + ". Do not edit.\n" +
      (cuda ? "#include \"pccrt/CudaModel.h\"\n" : "") +
      "#include \"pccrt/Kernels.h\"\n\nusing namespace pccrt;\n\n"
      "namespace pcc_model {\n\n";
  const char *params = "(const void *const *inputs, void *const *outputs, "
                       "char *arena, const char *weights, Mesh &mesh)";

  // Parts go into units of about kUnitBytes; a small model is one unit.
  size_t total = 0;
  for (const std::string &p : parts)
    total += p.size();
  std::vector<EmittedSource> units(1);
  std::string main = prologue;
  if (total <= options.unitBytes) {
    for (const std::string &p : parts)
      main += p;
  } else {
    for (size_t i = 0; i < parts.size(); ++i) {
      if (units.size() == 1 || units.back().text.size() >= options.unitBytes) {
        units.push_back({"model_" + std::to_string(units.size()) + ext,
                         prologue});
      }
      units.back().text += parts[i];
    }
    for (size_t i = 1; i < units.size(); ++i)
      units[i].text += "} // namespace pcc_model\n";
    for (size_t i = 0; i < parts.size(); ++i)
      main += "bool part" + std::to_string(i) + params + ";\n";
    main += "\n";
  }
  main += tables;
  main += std::string("\nvoid run") + params + " {\n";
  // A pipelined device runs its stage's parts only.
  int64_t stageAxis = mesh.axisNamed("pp");
  bool staged = stageParts.size() > 1;
  bool firstPass = llvm::any_of(
      stageParts, [](const StageParts &r) { return r.forward > r.first; });
  // A step whose backward can run apart from its forward (1F1B).
  bool phased = llvm::any_of(
      stageParts, [](const StageParts &r) { return r.once > r.backward; });
  // A zero-bubble step: some stage's backward has a W part.
  bool splitsBackward = llvm::any_of(
      stageParts, [](const StageParts &r) { return r.once > r.weight; });
  if (staged)
    main += "  switch (pipelineStage(mesh)) {\n";
  for (auto [stage, range] : llvm::enumerate(stageParts)) {
    if (staged)
      main += "  case " + std::to_string(stage) + ":\n";
    std::string arena = range.arenaOffset
                            ? "arena + " + std::to_string(range.arenaOffset)
                            : std::string("arena");
    auto call = [&](int64_t i) {
      main += "  if (!part" + std::to_string(i) + "(inputs, outputs, " + arena +
              ", weights, mesh))\n    return;\n";
    };
    auto calls = [&](int64_t from, int64_t to, StringRef guard) {
      if (from == to)
        return;
      if (!guard.empty())
        main += ("  if (" + guard + "(mesh)) {\n").str();
      for (int64_t i = from; i < to; ++i)
        call(i);
      if (!guard.empty())
        main += "  }\n";
    };
    // The prologue's runs run it alone; the update runs after the step's
    // last microbatch only.
    if (range.forward > range.first) {
      main += "  if (prologueRun(mesh)) {\n";
      for (int64_t i = range.first; i < range.forward; ++i)
        call(i);
      main += "  return;\n  }\n";
    } else if (firstPass) {
      main += "  if (prologueRun(mesh))\n    return;\n";
    }
    calls(range.forward, range.backward, phased ? "runsForward" : "");
    calls(range.backward, range.weight, phased ? "runsBackward" : "");
    calls(range.weight, range.once, phased ? "runsWeightGradients" : "");
    if (range.end > range.once) {
      main += "  if (!runsUpdate(mesh))\n    return;\n";
      calls(range.once, range.end, "");
    }
    if (staged)
      main += "  break;\n";
  }
  if (staged)
    main += "  }\n";
  auto fnType = fn.getFunctionType();
  auto module = fn->getParentOfType<ModuleOp>();
  auto precision =
      module ? module->getAttrOfType<StringAttr>(kPrecisionAttr) : nullptr;
  bool tf32 = precision && precision.getValue() == "tf32";
  bool trains = module && module->hasAttr(kTrainStepAttr);
  auto assigns = fn.getOps<AssignOp>();
  int64_t numTrained = std::distance(assigns.begin(), assigns.end());
  auto anyShape = [](ArrayRef<DenseI64ArrayAttr> shapes) {
    return llvm::any_of(shapes, [](DenseI64ArrayAttr s) { return bool(s); });
  };
  bool returnsPadded = anyShape(outputUnpaddedShapes(fn));
  bool trainsPadded = anyShape(trainedUnpaddedShapes(fn));
  bool trainsParts = llvm::any_of(assigns, [](AssignOp a) {
    return bool(a.getTarget().getDefiningOp<WeightOp>().getPartsAttr());
  });
  llvm::raw_string_ostream m(main);
  m << "}\n\n";
  if (staged) {
    SmallVector<int64_t> owners;
    for (unsigned i = 0; i < fnType.getNumResults(); ++i)
      owners.push_back(outputStage(fn, i) % pipelineDevices());
    m << "const int32_t outputStages[] = {" << joinInts(owners)
      << (owners.empty() ? "0" : "") << "};\n\n";
  }
  m << "} // namespace pcc_model\n\n"
    << "extern \"C\" const ModelInfo *pcc_model_info() {\n"
    << "  using namespace pcc_model;\n"
    << "  static const ModelInfo info = {\"main\", " << fnType.getNumInputs()
    << ", " << (fnType.getNumInputs() ? "inputDescs" : "nullptr") << ", "
    << fnType.getNumResults() << ", "
    << (fnType.getNumResults() ? "outputDescs" : "nullptr") << ", "
    << result.arenaBytes << "u, " << result.weights.fileBytes() << "u, "
    << mesh.shape.size() << ", meshShape, meshAxes, " << groups.size() << ", "
    << (groups.empty() ? "nullptr" : "groups")
    << ", run, PCC_BUILD_FINGERPRINT, " << (staged ? stageAxis : -1) << ", "
    << (staged ? "outputStages" : "nullptr") << ", "
    << mesh.axisNamed(kMicrobatchAxis) << ", " << (tf32 ? "true" : "false")
    << ", " << (trains ? "true" : "false") << ", " << numTrained << ", "
    << (numTrained ? "trainedDescs, trainedOffsets, trainedStrides"
                   : "nullptr, nullptr, nullptr")
    << (numTrained && staged ? ", trainedStages" : ", nullptr") << ", "
    << (firstPass ? "true" : "false") << ", "
    << (phased && staged ? "true" : "false") << ", "
    << int64_t(stageParts.size()) / pipelineDevices() << ", "
    << (trainsPadded ? "trainedUnpadded" : "nullptr") << ", "
    << (returnsPadded ? "outputUnpadded" : "nullptr") << ", "
    << (trainsParts ? "trainedParts" : "nullptr") << ", "
    << (splitsBackward && phased && staged ? "true" : "false") << "};\n"
    << "  return &info;\n}\n";
  units[0] = {"model" + ext, std::move(main)};
  return units;
}

} // namespace pcc::cpu
