//===- ModelLoader.cpp - reading and validating ONNX models ---------------===//
//
// Validation happens here, before any IR exists, so each malformed input
// gets one precise message: the ONNX checker accepts many models that cannot
// be compiled (opset 99, negative dims, initializers whose bytes do not match
// their shape), and rejects some that can (external data that is absent on a
// planning machine), so pcc checks what it relies on itself.
//
//===----------------------------------------------------------------------===//

#include "ModelLoader.h"

#include "onnx/defs/parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>

#include <climits>
#include <queue>
#include <unordered_map>
#include <unordered_set>

using namespace mlir;

namespace pcc::import {

bool parseModel(llvm::StringRef buffer, bool text, onnx::ModelProto &model,
                const Diag &diag) {
  if (buffer.empty()) {
    diag("file is empty", "");
    return false;
  }
  if (text) {
    std::string copy = buffer.str();
    onnx::OnnxParser parser(copy.c_str());
    onnx::Common::Status status;
    // The parser reads numbers with std::stol and friends, which throw on
    // malformed or out-of-range literals instead of returning a status.
    try {
      status = parser.Parse(model);
    } catch (const std::exception &e) {
      diag(std::string("failed to parse ONNX text: malformed number (") +
               e.what() + ")",
           "");
      return false;
    }
    if (!status.IsOK()) {
      std::string msg = status.ErrorMessage();
      diag("failed to parse ONNX text: " +
               llvm::StringRef(msg).split('\n').first.trim().str(),
           "");
      return false;
    }
    return true;
  }
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(buffer.data()),
      static_cast<int>(std::min<size_t>(buffer.size(), INT_MAX)));
  stream.SetTotalBytesLimit(INT_MAX);
  if (buffer.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromCodedStream(&stream) ||
      !stream.ConsumedEntireMessage()) {
    diag("failed to parse ONNX protobuf (not an ONNX model, or truncated)",
         "");
    return false;
  }
  return true;
}

int checkModelHeader(const onnx::ModelProto &model, const Diag &diag) {
  if (!model.has_graph()) {
    diag("model has no graph (not an ONNX model?)", "");
    return -1;
  }
  if (model.ir_version() < 3) {
    diag("unsupported ONNX IR version " + std::to_string(model.ir_version()) +
             " (need >= 3)",
         "");
    return -1;
  }
  int opset = -1;
  llvm::StringSet<> domains;
  for (const auto &imp : model.opset_import()) {
    bool defaultDomain = imp.domain().empty() || imp.domain() == "ai.onnx";
    std::string domain = defaultDomain ? "" : imp.domain();
    if (!domains.insert(domain).second) {
      diag("model imports domain '" + (defaultDomain ? "ai.onnx" : domain) +
               "' twice",
           "");
      return -1;
    }
    // Versions are int64 in the file: never let one wrap into range.
    if (imp.version() < 1 || imp.version() > INT32_MAX) {
      diag("model imports opset " + std::to_string(imp.version()) +
               " of domain '" + (defaultDomain ? "ai.onnx" : domain) +
               "', which no ONNX release defines",
           "");
      return -1;
    }
    if (defaultDomain)
      opset = static_cast<int>(imp.version());
  }
  // A model may import only other domains; its nodes are then refused one
  // by one as unsupported ops.
  if (opset < 0)
    return 0;
  if (opset > kMaxSupportedOpset) {
    diag("model uses opset " + std::to_string(opset) +
             ", newer than the newest supported opset " +
             std::to_string(kMaxSupportedOpset),
         "");
    return -1;
  }
  if (opset < kMinSupportedOpset) {
    diag("model uses opset " + std::to_string(opset) +
             ", older than the oldest supported opset " +
             std::to_string(kMinSupportedOpset),
         "");
    return -1;
  }
  return opset;
}

namespace {

/// Binds the batch: the first non-initializer input's leading dimension,
/// and wherever its symbolic name appears. A fixed batch must equal it.
bool bindGlobalBatch(onnx::GraphProto &graph, int64_t batch, const Diag &diag) {
  llvm::StringSet<> initializers;
  for (const auto &init : graph.initializer())
    initializers.insert(init.name());
  for (auto &input : *graph.mutable_input()) {
    if (initializers.contains(input.name()) ||
        !input.type().has_tensor_type() ||
        input.type().tensor_type().shape().dim_size() == 0)
      continue;
    const auto &lead = input.type().tensor_type().shape().dim(0);
    std::string where = "--global-batch " + std::to_string(batch) +
                        ": the batch (input '" + input.name() +
                        "', dimension 0) ";
    if (lead.has_dim_value()) {
      if (lead.dim_value() == batch)
        return true;
      diag(where + "is fixed at " + std::to_string(lead.dim_value()) +
               "; export with a dynamic batch axis (torch.onnx.export's "
               "dynamic_axes) to plan other batches",
           "");
      return false;
    }
    if (!lead.has_dim_param()) {
      diag(where + "has no size or name to bind", "");
      return false;
    }
    std::string name = lead.dim_param();
    for (auto &in : *graph.mutable_input())
      if (in.type().has_tensor_type())
        for (auto &dim : *in.mutable_type()
                              ->mutable_tensor_type()
                              ->mutable_shape()
                              ->mutable_dim())
          if (dim.has_dim_param() && dim.dim_param() == name)
            dim.set_dim_value(batch);
    return true;
  }
  diag("--global-batch: the model has no input with a batch dimension", "");
  return false;
}

} // namespace

bool bindInputShapes(onnx::GraphProto &graph, const ImportOptions &options,
                     const Diag &diag) {
  llvm::StringSet<> used; // bindings that matched something
  for (auto &input : *graph.mutable_input()) {
    if (!input.type().has_tensor_type())
      continue;
    auto *shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    auto whole = options.inputShapes.find(input.name());
    if (whole != options.inputShapes.end()) {
      used.insert(input.name());
      shape->clear_dim();
      for (int64_t d : whole->second)
        shape->add_dim()->set_dim_value(d);
      continue;
    }
    for (auto &dim : *shape->mutable_dim()) {
      if (!dim.has_dim_param())
        continue;
      auto it = options.inputShapes.find(dim.dim_param());
      if (it == options.inputShapes.end())
        continue;
      used.insert(dim.dim_param());
      if (it->second.size() != 1) {
        diag("--input-shape binds symbolic dimension '" + dim.dim_param() +
                 "' to a shape; give one size, e.g. " + dim.dim_param() + "=4",
             "");
        return false;
      }
      dim.set_dim_value(it->second[0]);
    }
  }
  if (options.globalBatch && !bindGlobalBatch(graph, options.globalBatch, diag))
    return false;
  for (const auto &entry : options.inputShapes) {
    if (!used.contains(entry.getKey())) {
      diag("--input-shape names '" + entry.getKey().str() +
               "', which is neither a graph input nor a symbolic dimension",
           "");
      return false;
    }
  }
  return true;
}

std::string nodeName(const onnx::NodeProto &node, int index) {
  if (!node.name().empty())
    return node.name();
  return node.op_type() + "#" + std::to_string(index);
}

/// Element count of `dims`, or -1 on a negative dim or int64 overflow.
static int64_t checkedCount(llvm::ArrayRef<int64_t> dims, std::string &why) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      why = "a negative dimension " + std::to_string(d);
      return -1;
    }
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d) {
      why = "an element count that overflows int64";
      return -1;
    }
    count *= d;
  }
  return count;
}

bool checkTensorData(const onnx::TensorProto &t, const std::string &what,
                     llvm::StringRef modelDir, const Diag &diag) {
  if (!elementBytes(t.data_type())) {
    diag(what + " has unsupported data type " + std::to_string(t.data_type()),
         "");
    return false;
  }
  std::string why;
  int64_t count = checkedCount(
      llvm::ArrayRef<int64_t>(t.dims().data(), t.dims().size()), why);
  if (count < 0) {
    diag(what + " has " + why, "");
    return false;
  }
  int64_t bits = elementBytes(t.data_type());
  if (count > std::numeric_limits<int64_t>::max() / bits) {
    diag(what + " byte size overflows int64", "");
    return false;
  }
  int64_t expected = count * bits;
  if (auto ext = externalLocation(t)) {
    ExternalFile file;
    if (!resolveExternalData(*ext, modelDir, file, why)) {
      diag(what + ": " + why, "");
      return false;
    }
    if (ext->length >= 0 && ext->length != expected) {
      diag(what + " declares " + std::to_string(ext->length) +
               " bytes of external data, but its shape needs " +
               std::to_string(expected),
           "");
      return false;
    }
    uint64_t size;
    // An absent file is fine (shape-only planning); a present one must be
    // large enough.
    if (file.exists && !llvm::sys::fs::file_size(file.path, size) &&
        (ext->offset > std::numeric_limits<int64_t>::max() - expected ||
         static_cast<uint64_t>(ext->offset + expected) > size)) {
      diag(what + " reads past the end of external file '" + ext->location +
               "'",
           "");
      return false;
    }
    return true;
  }
  int64_t have = -1;
  if (t.has_raw_data()) {
    have = t.raw_data().size();
  } else {
    // Typed fields hold one entry per element (two per complex value,
    // which pcc does not support).
    int64_t n = t.float_data_size() + t.int32_data_size() +
                t.int64_data_size() + t.double_data_size() +
                t.uint64_data_size();
    have = n * bits;
    if (n == 0 && count != 0 && t.string_data_size() == 0)
      have = 0;
  }
  if (have != expected) {
    diag(what + " holds " + std::to_string(have) +
             " bytes of data, but its shape needs " + std::to_string(expected),
         "");
    return false;
  }
  return true;
}

bool checkInitializers(const onnx::GraphProto &graph, llvm::StringRef modelDir,
                       const Diag &diag) {
  llvm::StringSet<> seen;
  for (const auto &t : graph.initializer()) {
    if (!seen.insert(t.name()).second) {
      diag("two initializers are named '" + t.name() + "'", "");
      return false;
    }
    if (!checkTensorData(t, "initializer '" + t.name() + "'", modelDir, diag))
      return false;
  }
  return true;
}

std::vector<const onnx::GraphProto *> subgraphsOf(const onnx::NodeProto &node) {
  std::vector<const onnx::GraphProto *> graphs;
  for (const auto &a : node.attribute()) {
    if (a.has_g())
      graphs.push_back(&a.g());
    for (const auto &g : a.graphs())
      graphs.push_back(&g);
  }
  return graphs;
}

void forEachGraph(const onnx::GraphProto &graph,
                  const std::function<void(const onnx::GraphProto &)> &fn) {
  fn(graph);
  for (const auto &node : graph.node())
    for (const onnx::GraphProto *sub : subgraphsOf(node))
      forEachGraph(*sub, fn);
}

std::vector<std::string> outerReads(const onnx::GraphProto &graph) {
  std::unordered_set<std::string> defined, seen;
  for (const auto &in : graph.input())
    defined.insert(in.name());
  for (const auto &init : graph.initializer())
    defined.insert(init.name());
  for (const auto &node : graph.node())
    for (const auto &out : node.output())
      defined.insert(out);
  std::vector<std::string> reads;
  auto read = [&](const std::string &name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second)
      reads.push_back(name);
  };
  for (const auto &node : graph.node()) {
    for (const auto &in : node.input())
      read(in);
    for (const onnx::GraphProto *sub : subgraphsOf(node))
      for (const std::string &name : outerReads(*sub))
        read(name);
  }
  for (const auto &out : graph.output())
    read(out.name());
  return reads;
}

bool sortNodes(const onnx::GraphProto &graph, std::vector<int> &order,
               const Diag &diag, bool nested) {
  std::unordered_map<std::string, int> producer;
  std::unordered_map<std::string, bool> external;
  for (const auto &in : graph.input()) {
    if (in.name().empty()) {
      diag("a graph input has no name", "");
      return false;
    }
    // An input that is also an initializer is a default value (IR < 4).
    if (external.count(in.name())) {
      diag("two graph inputs are named '" + in.name() + "'", "");
      return false;
    }
    external[in.name()] = true;
  }
  for (const auto &init : graph.initializer())
    external[init.name()] = true;
  int n = graph.node_size();
  // SSA: every tensor has one writer.
  for (int i = 0; i < n; ++i)
    for (const auto &out : graph.node(i).output()) {
      if (out.empty())
        continue;
      std::string name = nodeName(graph.node(i), i);
      if (external.count(out)) {
        diag("writes '" + out +
                 "', which is a graph input or initializer; ONNX tensors "
                 "have one writer",
             name);
        return false;
      }
      auto [it, inserted] = producer.emplace(out, i);
      if (!inserted) {
        diag("writes '" + out + "', which node '" +
                 nodeName(graph.node(it->second), it->second) +
                 "' also writes; ONNX tensors have one writer",
             name);
        return false;
      }
    }

  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i) {
    const auto &node = graph.node(i);
    std::vector<std::string> reads(node.input().begin(), node.input().end());
    for (const onnx::GraphProto *sub : subgraphsOf(node))
      for (std::string &name : outerReads(*sub))
        reads.push_back(std::move(name));
    for (const auto &in : reads) {
      if (in.empty())
        continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        if (!nested && !external.count(in)) {
          diag("reads undefined tensor '" + in + "'", nodeName(node, i));
          return false;
        }
        continue;
      }
      ++pending[i];
      users[it->second].push_back(i);
    }
  }
  // Kahn's algorithm, smallest index first to keep the file's order.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (!pending[i])
      ready.push(i);
  order.clear();
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0)
        ready.push(u);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[i]) {
        diag("graph has a cycle", nodeName(graph.node(i), i));
        return false;
      }
  }
  for (const auto &out : graph.output()) {
    if (!nested && !producer.count(out.name()) && !external.count(out.name())) {
      diag("graph output '" + out.name() + "' is not produced by any node", "");
      return false;
    }
  }
  return true;
}

FailureOr<RankedTensorType> valueInfoType(const onnx::ValueInfoProto &info,
                                          MLIRContext *ctx, const Diag &diag) {
  std::string what = "graph input '" + info.name() + "'";
  if (!info.type().has_tensor_type()) {
    diag(what + " is not a tensor", "");
    return failure();
  }
  const auto &tt = info.type().tensor_type();
  Type elem = elementTypeFor(tt.elem_type(), ctx);
  if (!elem) {
    diag(what + " has unsupported element type " +
             std::to_string(tt.elem_type()),
         "");
    return failure();
  }
  if (!tt.has_shape()) {
    diag(what + " has no shape; give one with --input-shape " + info.name() +
             "=AxB",
         "");
    return failure();
  }
  SmallVector<int64_t> dims;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto &d = tt.shape().dim(i);
    if (d.has_dim_value()) {
      dims.push_back(d.dim_value());
      continue;
    }
    std::string sym = d.has_dim_param() ? d.dim_param() : "?";
    diag(what + " has symbolic dimension '" + sym + "' (axis " +
             std::to_string(i) + "); bind it with --input-shape " +
             (d.has_dim_param() ? sym + "=<size>" : info.name() + "=AxB"),
         "");
    return failure();
  }
  std::string why;
  if (checkedCount(dims, why) < 0) {
    diag(what + " has " + why, "");
    return failure();
  }
  return RankedTensorType::get(dims, elem);
}

} // namespace pcc::import
