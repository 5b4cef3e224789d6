//===- ONNXImporter.cpp - ONNX graph to pcc dialect -----------------------===//
//
// Import runs in three phases: read and validate the model (ModelLoader),
// let ONNX infer shapes, then convert nodes in dependency order into one
// func.func @main. Values are created on first use, so initializers that no
// node reads cost nothing, and constants fold as they are built, so shape
// subgraphs disappear and every later shape is static. Finally the types pcc
// inferred are checked against every static shape ONNX inferred.
//
//===----------------------------------------------------------------------===//

#include "pcc/Import/ONNXImporter.h"

#include "GraphImporter.h"
#include "ImportContext.h"
#include "ModelLoader.h"
#include "OnnxAnalysis.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace pcc {
namespace import {

const llvm::StringMap<Converter> &converters() {
  static const llvm::StringMap<Converter> table = [] {
    llvm::StringMap<Converter> t;
    addElementwiseConverters(t);
    addTensorConverters(t);
    addNNConverters(t);
    addLayoutConverters(t);
    addMatrixConverters(t);
    addEinsumConverter(t);
    addRecurrentConverters(t);
    addCompositeConverters(t);
    addLossConverters(t);
    return t;
  }();
  return table;
}

FailureOr<Value> GraphImporter::materializeTensor(const onnx::TensorProto &t,
                                                  Location loc,
                                                  int64_t floatLimit,
                                                  bool splatFloats) {
  if (shouldInline(t, floatLimit) || isBandMask(t)) {
    // Small tensors are folded into shape arithmetic, so read them now; an
    // absent external file leaves them as weights (planning still works).
    bool absentExternal = false;
    if (auto ext = externalLocation(t)) {
      ExternalFile file;
      std::string why;
      if (!resolveExternalData(*ext, modelDir, file, why))
        return emitError(loc) << "tensor '" << t.name() << "': " << why;
      absentExternal = !file.exists;
    }
    if (!absentExternal) {
      auto attr = readTensor(t, modelDir, &ctx, diagFn());
      if (failed(attr))
        return failure();
      return ConstantOp::create(builder, loc, cast<ElementsAttr>(*attr))
          .getResult();
    }
  }
  if (std::optional<onnx::TensorProto> one = splatElement(t, splatFloats)) {
    auto element = readTensor(*one, modelDir, &ctx, diagFn());
    if (failed(element))
      return failure();
    return ConstantOp::create(
               builder, loc,
               cast<ElementsAttr>(DenseElementsAttr::get(
                   tensorType(t, &ctx), element->getSplatValue<Attribute>())))
        .getResult();
  }
  ExternalDataAttr external;
  if (auto ext = externalLocation(t)) {
    int64_t length = ext->length;
    if (length < 0)
      length = tensorType(t, &ctx).getNumElements() *
               elementBytes(t.data_type());
    external =
        ExternalDataAttr::get(&ctx, ext->location, ext->offset, length);
  }
  return WeightOp::create(builder, loc, tensorType(t, &ctx),
                          StringAttr::get(&ctx, t.name()), external,
                          /*source_type=*/nullptr, /*zeros=*/nullptr,
                          /*unpadded=*/nullptr, /*parts=*/nullptr,
                          /*parts_axis=*/nullptr, /*part_sizes=*/nullptr)
      .getResult();
}

FailureOr<Value> GraphImporter::lookup(const std::string &name,
                                       Location useLoc) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  auto gone = unavailable.find(name);
  if (gone != unavailable.end())
    return emitError(useLoc) << "reads '" << name << "', an output of '"
                             << gone->second << "' that pcc does not support";
  auto init = initializers.find(name);
  if (init == initializers.end())
    return emitError(useLoc) << "reads undefined tensor '" << name << "'";
  if (auto tied = transposedCopyOf.find(name); tied != transposedCopyOf.end()) {
    auto original = lookup(tied->second, useLoc);
    if (failed(original))
      return failure();
    Value t = TransposeOp::create(builder, nodeLoc(name),
                                  tensorType(*init->second, &ctx), *original,
                                  builder.getDenseI64ArrayAttr({1, 0}));
    values[name] = t;
    return t;
  }
  auto v = materializeTensor(*init->second, nodeLoc(name));
  if (failed(v))
    return failure();
  values[name] = *v;
  return *v;
}

LogicalResult GraphImporter::importConstantNode(const onnx::NodeProto &node,
                                                Location loc) {
  if (node.output_size() != 1 || node.attribute_size() != 1)
    return emitError(loc) << "Constant needs exactly one value attribute";
  const onnx::AttributeProto &a = node.attribute(0);
  onnx::TensorProto tensor;
  if (a.name() == "value") {
    tensor = a.t();
  } else if (a.name() == "value_float") {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_float_data(a.f());
  } else if (a.name() == "value_floats") {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_dims(a.floats_size());
    for (float f : a.floats())
      tensor.add_float_data(f);
  } else if (a.name() == "value_int") {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_int64_data(a.i());
  } else if (a.name() == "value_ints") {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_dims(a.ints_size());
    for (int64_t i : a.ints())
      tensor.add_int64_data(i);
  } else {
    return emitError(loc) << "Constant attribute '" << a.name()
                          << "' is not supported";
  }
  // A Constant's tensor is named after its output so that code generation
  // can find large ones again, as it finds initializers.
  tensor.set_name(node.output(0));
  if (!elementTypeFor(tensor.data_type(), &ctx))
    return emitError(loc) << "Constant has unsupported data type "
                          << tensor.data_type();
  bool ok = checkTensorData(
      tensor, "Constant value", modelDir,
      [&](const std::string &m, const std::string &) { emitError(loc) << m; });
  if (!ok)
    return failure();
  auto v = materializeTensor(tensor, loc, /*floatLimit=*/8,
                             /*splatFloats=*/true);
  if (failed(v))
    return failure();
  values[node.output(0)] = *v;
  return success();
}

FailureOr<SmallVector<Value>>
GraphImporter::lookupInputs(const onnx::NodeProto &node, Location loc) {
  SmallVector<Value> inputs;
  for (const auto &in : node.input()) {
    if (in.empty()) {
      inputs.push_back(Value());
      continue;
    }
    auto v = lookup(in, loc);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  return inputs;
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        int index) {
  std::string name = nodeName(node, index);
  Location loc = nodeLoc(name);
  if (node.op_type() == "Constant" && node.domain().empty())
    return importConstantNode(node, loc);
  if (node.op_type() == "If")
    return importIf(node, loc);
  if (node.op_type() == "Loop")
    return importLoop(node, loc);

  auto inputs = lookupInputs(node, loc);
  if (failed(inputs))
    return failure();
  const Converter &convert = converters().find(node.op_type())->second;
  NodeContext context(node, builder, loc, *inputs, opset);
  context.training = training;
  context.seed = seed;
  auto results = convert(context);
  if (failed(results))
    return failure();
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string &out = node.output(i);
    if (out.empty())
      continue;
    Value v = i < static_cast<int>(results->size()) ? (*results)[i] : Value();
    if (v)
      values[out] = v;
    else
      unavailable[out] = name;
  }
  return success();
}

LogicalResult
GraphImporter::crossCheckShapes(ArrayRef<onnx::ValueInfoProto> inferred) {
  for (const auto &info : inferred) {
    auto it = values.find(info.name());
    if (it == values.end() || !info.type().has_tensor_type() ||
        !info.type().tensor_type().has_shape())
      continue;
    const auto &shape = info.type().tensor_type().shape();
    SmallVector<int64_t> onnxDims;
    bool isStatic = true;
    for (const auto &d : shape.dim()) {
      isStatic &= d.has_dim_value();
      onnxDims.push_back(d.dim_value());
    }
    auto type = cast<RankedTensorType>(it->second.getType());
    if (isStatic && type.getShape() != ArrayRef<int64_t>(onnxDims)) {
      Location loc = it->second.getLoc();
      return emitError(loc) << "pcc infers " << type << " for '"
                            << info.name()
                            << "' but ONNX shape inference infers shape ["
                            << llvm::join(llvm::map_range(onnxDims,
                                                          [](int64_t d) {
                                                            return std::to_string(d);
                                                          }),
                                          ",")
                            << "]";
    }
  }
  return success();
}

/// A graph output's declared element type, and its static dims unless input
/// shapes were rebound, must be what the graph computes.
LogicalResult
GraphImporter::checkDeclaredOutput(const onnx::ValueInfoProto &info, Value v) {
  if (!info.type().has_tensor_type())
    return success();
  const auto &tt = info.type().tensor_type();
  auto type = cast<RankedTensorType>(v.getType());
  if (tt.elem_type() != 0 &&
      elementTypeFor(tt.elem_type(), &ctx) != type.getElementType())
    return emitError(fileLoc())
           << "graph output '" << info.name() << "' is declared with element "
           << "type " << tt.elem_type() << " (ONNX code) but the graph "
           << "computes " << type.getElementType();
  if (shapesRebound || !tt.has_shape())
    return success();
  bool mismatch = tt.shape().dim_size() != type.getRank();
  for (int i = 0; !mismatch && i < tt.shape().dim_size(); ++i)
    mismatch = tt.shape().dim(i).has_dim_value() &&
               tt.shape().dim(i).dim_value() != type.getDimSize(i);
  if (mismatch)
    return emitError(fileLoc())
           << "graph output '" << info.name()
           << "' is declared with a shape the graph does not compute ("
           << type << ")";
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::run(const std::vector<int> &order) {
  Location loc = fileLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  module->getOperation()->setAttr("pcc.source", builder.getStringAttr(path));
  module->getOperation()->setAttr("pcc.opset", builder.getI64IntegerAttr(opset));

  for (const auto &t : graph.initializer())
    initializers[t.name()] = &t;
  for (auto &[copy, original] : findTransposedCopies(graph))
    transposedCopyOf[copy] = original;

  // Graph inputs that are also initializers are defaults (IR < 4): weights.
  SmallVector<Type> argTypes;
  SmallVector<const onnx::ValueInfoProto *> args;
  for (const auto &in : graph.input()) {
    if (initializers.count(in.name()))
      continue;
    auto type = valueInfoType(in, &ctx, diagFn());
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    args.push_back(&in);
  }

  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, loc, "main",
                                   builder.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  for (auto [i, info] : llvm::enumerate(args)) {
    body->getArgument(i).setLoc(nodeLoc(info->name()));
    func.setArgAttr(i, "pcc.name", builder.getStringAttr(info->name()));
    values[info->name()] = body->getArgument(i);
  }
  builder.setInsertionPointToEnd(body);

  for (int index : order)
    if (failed(importNode(graph.node(index), index)))
      return nullptr;

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &out : graph.output()) {
    auto v = lookup(out.name(), fileLoc());
    if (failed(v) || failed(checkDeclaredOutput(out, *v)))
      return nullptr;
    results.push_back(*v);
    resultTypes.push_back(v->getType());
  }
  func::ReturnOp::create(builder, loc, results);
  func.setType(builder.getFunctionType(argTypes, resultTypes));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "pcc.name", builder.getStringAttr(out.name()));

  if (failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

/// Old-opset forms whose meaning differs from what the converters implement;
/// returns why the node is unsupported, or "".
std::string legacySemantics(const onnx::NodeProto &node, int opset) {
  // Opset < 7 binary ops and Gemm broadcast only with broadcast=1: the
  // second operand matches a suffix of the first's shape (what numpy-style
  // broadcasting does with it), or, with `axis`, dimensions from there on
  // (the binary converters reshape it so). Other ops never had it.
  static const llvm::StringSet<> withAxis = {"Add", "Sub", "Mul", "Div",
                                             "Pow", "And", "Or", "Xor",
                                             "Equal", "Less", "Greater"};
  bool broadcast = false, axis = false;
  for (const auto &a : node.attribute()) {
    broadcast |= a.name() == "broadcast" && a.i() != 0;
    axis |= a.name() == "axis";
  }
  if (broadcast && axis && node.op_type() != "Gemm" &&
      !withAxis.contains(node.op_type()))
    return "legacy 'broadcast' attribute with an 'axis' of '" +
           node.op_type() + "' (opset " + std::to_string(opset) +
           ") is not supported";
  if (node.op_type() == "Reshape" && opset < 5)
    return "Reshape with a shape attribute (opset < 5) is not supported";
  return "";
}

/// Ops pcc imports without a converter: they shape the graph itself.
bool isStructuralOp(const std::string &op) {
  return op == "Constant" || op == "If" || op == "Loop";
}

/// Attributes no supported op takes; returns why, or "".
std::string unsupportedAttribute(const onnx::NodeProto &node) {
  using AP = onnx::AttributeProto;
  bool takesGraphs = node.op_type() == "If" || node.op_type() == "Loop";
  for (const auto &a : node.attribute()) {
    if (takesGraphs && a.type() == AP::GRAPH)
      continue;
    if (!a.ref_attr_name().empty())
      return "attribute '" + a.name() +
             "' refers to a function's attribute outside a function";
    if (a.type() == AP::GRAPH || a.type() == AP::GRAPHS ||
        a.type() == AP::SPARSE_TENSOR || a.type() == AP::SPARSE_TENSORS ||
        a.has_g() || a.graphs_size() || a.has_sparse_tensor() ||
        a.sparse_tensors_size())
      return "attribute '" + a.name() + "' holds a graph or a sparse tensor, " +
             "which '" + node.op_type() + "' does not take";
  }
  return "";
}

} // namespace import

std::string parseInputShapeBinding(llvm::StringRef spec,
                                   ImportOptions &options) {
  auto [name, dims] = spec.split('=');
  name = name.trim();
  if (name.empty() || dims.empty())
    return "--input-shape expects NAME=AxB (e.g. tokens=2x32), got '" +
           spec.str() + "'";
  std::vector<int64_t> shape;
  llvm::SmallVector<llvm::StringRef> parts;
  dims.split(parts, 'x');
  for (llvm::StringRef p : parts) {
    int64_t d;
    if (p.trim().getAsInteger(10, d) || d < 0)
      return "--input-shape '" + spec.str() + "' has invalid dimension '" +
             p.str() + "'";
    shape.push_back(d);
  }
  options.inputShapes[name] = shape;
  return "";
}

namespace {

/// Every op the model uses that pcc does not import, in one message: each op
/// type with its domain or opset, how many nodes use it and the first of
/// them; and the first such node's name. An empty message when there is
/// none.
/// A node with its index in its own graph (for its display name).
using IndexedNode = std::pair<const onnx::NodeProto *, int>;

/// The main graph's nodes in `order`, each followed by the nodes of its
/// subgraphs (in their file order, nested ones likewise).
std::vector<IndexedNode> allNodes(const onnx::GraphProto &graph,
                                  const std::vector<int> &order) {
  std::vector<IndexedNode> nodes;
  std::function<void(const onnx::NodeProto &, int)> visit =
      [&](const onnx::NodeProto &node, int index) {
        nodes.push_back({&node, index});
        for (const onnx::GraphProto *sub : import::subgraphsOf(node))
          for (int i = 0; i < sub->node_size(); ++i)
            visit(sub->node(i), i);
      };
  for (int index : order)
    visit(graph.node(index), index);
  return nodes;
}

std::pair<std::string, std::string> unsupportedOps(ArrayRef<IndexedNode> nodes,
                                                   int opset) {
  struct Use {
    std::string op, first;
    int count = 0;
  };
  std::vector<Use> uses;
  std::unordered_map<std::string, size_t> byOp;
  for (auto [nodePtr, index] : nodes) {
    const auto &node = *nodePtr;
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    std::string op;
    if (!defaultDomain)
      op = "'" + node.op_type() + "' of domain '" + node.domain() + "'";
    else if (!import::isStructuralOp(node.op_type()) &&
             !import::converters().count(node.op_type()))
      op = "'" + node.op_type() + "' (opset " + std::to_string(opset) + ")";
    if (op.empty())
      continue;
    auto [it, fresh] = byOp.try_emplace(op, uses.size());
    if (fresh)
      uses.push_back({op, import::nodeName(node, index)});
    ++uses[it->second].count;
  }
  if (uses.empty())
    return {};
  // One op type: the single-op form every tool and test knows.
  if (uses.size() == 1 && uses[0].count == 1)
    return {"unsupported ONNX op " + uses[0].op, uses[0].first};
  std::string text = "unsupported ONNX ops: ";
  for (auto [i, u] : llvm::enumerate(uses))
    text += (i ? ", " : "") + u.op + " x" + std::to_string(u.count) +
            (i ? " (first at node '" + u.first + "')" : "");
  return {text, uses[0].first};
}

} // namespace

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> ops = {"Constant", "If", "Loop"};
  for (const auto &entry : import::converters())
    ops.push_back(entry.getKey().str());
  llvm::sort(ops);
  return ops;
}

OwningOpRef<ModuleOp> importONNXBuffer(llvm::StringRef buffer, bool text,
                                       llvm::StringRef modelPath,
                                       MLIRContext &context,
                                       const ImportOptions &options) {
  using namespace import;
  context.loadDialect<PCCDialect, func::FuncDialect>();
  std::string path = modelPath.str();
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  auto diag = [&](const std::string &message, const std::string &node) {
    Location loc = node.empty()
                       ? fileLoc
                       : Location(NameLoc::get(StringAttr::get(&context, node)));
    emitError(loc) << message;
  };

  onnx::ModelProto model;
  if (!parseModel(buffer, text, model, diag))
    return nullptr;
  int opset = checkModelHeader(model, diag);
  if (opset < 0)
    return nullptr;
  onnx::GraphProto &graph = *model.mutable_graph();
  std::string modelDir = llvm::sys::path::parent_path(modelPath).str();
  if (!bindInputShapes(graph, options, diag))
    return nullptr;
  bool initializersOk = true;
  forEachGraph(graph, [&](const onnx::GraphProto &g) {
    initializersOk = initializersOk && checkInitializers(g, modelDir, diag);
  });
  if (!initializersOk)
    return nullptr;
  std::vector<int> order;
  if (!sortNodes(graph, order, diag))
    return nullptr;

  // Node-level checks: pcc support first (clearer than schema errors for ops
  // pcc lacks), then ONNX's schema checker.
  if (graph.sparse_initializer_size()) {
    diag("sparse initializers are not supported ('" +
             graph.sparse_initializer(0).values().name() + "')",
         "");
    return nullptr;
  }
  std::vector<IndexedNode> nodes = allNodes(graph, order);
  if (auto [message, first] = unsupportedOps(nodes, opset); !message.empty()) {
    diag(message, first); // "... at node 'first'"
    return nullptr;
  }
  for (auto [nodePtr, index] : nodes) {
    const auto &node = *nodePtr;
    std::string name = nodeName(node, index);
    if (opset == 0) {
      diag("node of the default domain, but the model imports no "
           "default-domain opset",
           name);
      return nullptr;
    }
    if (auto legacy = legacySemantics(node, opset); !legacy.empty()) {
      diag(legacy, name);
      return nullptr;
    }
    if (auto bad = unsupportedAttribute(node); !bad.empty()) {
      diag(bad, name);
      return nullptr;
    }
  }

  // ONNX's checker and shape inference run in a child process; its shapes
  // cross-check pcc's own inference once the graph is imported.
  OnnxAnalysis analysis(model, order);
  if (auto rejected = analysis.checkNodes()) {
    diag(rejected->message, nodeName(graph.node(rejected->node),
                                     rejected->node));
    return nullptr;
  }
  GraphImporter importer(context, model, path, opset,
                         !options.inputShapes.empty(), options.training,
                         options.seed);
  OwningOpRef<ModuleOp> module = importer.run(order);
  if (!module || failed(importer.crossCheckShapes(analysis.inferredShapes())))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> importONNXFile(llvm::StringRef path, MLIRContext &context,
                                     const ImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(FileLineColLoc::get(&context, path, 0, 0))
        << "cannot open file: " << buffer.getError().message();
    return nullptr;
  }
  return importONNXBuffer((*buffer)->getBuffer(), path.ends_with(".onnxtxt"),
                          path, context, options);
}

} // namespace pcc
