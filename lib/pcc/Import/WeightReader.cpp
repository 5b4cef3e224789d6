//===- WeightReader.cpp - bytes of ONNX initializers ----------------------===//

#include "pcc/Import/WeightReader.h"

#include "ModelLoader.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <unordered_map>

using namespace pcc;

struct WeightReader::Impl {
  onnx::ModelProto model;
  std::string modelDir;
  std::unordered_map<std::string, const onnx::TensorProto *> tensors;
};

WeightReader::WeightReader(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
WeightReader::~WeightReader() = default;

std::unique_ptr<WeightReader> WeightReader::open(llvm::StringRef modelPath,
                                                 std::string &error) {
  auto impl = std::make_unique<Impl>();
  auto buffer = llvm::MemoryBuffer::getFile(modelPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot open '" + modelPath.str() + "'";
    return nullptr;
  }
  auto diag = [&](const std::string &m, const std::string &) { error = m; };
  if (!import::parseModel((*buffer)->getBuffer(),
                          modelPath.ends_with(".onnxtxt"), impl->model, diag))
    return nullptr;
  impl->modelDir = llvm::sys::path::parent_path(modelPath).str();
  // Subgraphs (If and Loop bodies, inlined at import) hold tensors too.
  import::forEachGraph(impl->model.graph(), [&](const onnx::GraphProto &g) {
    for (const auto &t : g.initializer())
      impl->tensors[t.name()] = &t;
  for (const auto &node : g.node())
    if (node.op_type() == "Constant" && node.output_size() == 1)
      for (const auto &a : node.attribute())
        if (a.name() == "value")
          impl->tensors[node.output(0)] = &a.t();
});
  return std::unique_ptr<WeightReader>(new WeightReader(std::move(impl)));
}

bool WeightReader::read(llvm::StringRef name, std::string &bytes,
                        std::string &error) {
  auto it = impl->tensors.find(name.str());
  if (it == impl->tensors.end()) {
    error = "weight '" + name.str() + "' is not in the model";
    return false;
  }
  const onnx::TensorProto &t = *it->second;
  int64_t count = 1;
  for (int64_t d : t.dims())
    count *= d;
  int64_t elem = import::elementBytes(t.data_type());
  if (auto ext = import::externalLocation(t)) {
    import::ExternalFile file;
    std::string why;
    if (!import::resolveExternalData(*ext, impl->modelDir, file, why)) {
      error = "weight '" + name.str() + "': " + why;
      return false;
    }
    auto buf = llvm::MemoryBuffer::getFileSlice(file.path, count * elem,
                                                file.offset);
    if (!buf) {
      error = "cannot read weight '" + name.str() + "' from '" + file.path +
              "': " + buf.getError().message();
      return false;
    }
    bytes.assign((*buf)->getBufferStart(), (*buf)->getBufferSize());
    return true;
  }
  if (t.has_raw_data()) {
    bytes = t.raw_data();
    return true;
  }
  // Typed fields: go through the importer's reader, then serialize densely.
  mlir::MLIRContext ctx;
  auto diag = [&](const std::string &m, const std::string &) { error = m; };
  auto attr = import::readTensor(t, impl->modelDir, &ctx, diag);
  if (mlir::failed(attr))
    return false;
  if (attr->getElementType().isInteger(1)) {
    bytes.clear();
    for (bool b : attr->getValues<bool>())
      bytes.push_back(b ? 1 : 0);
    return true;
  }
  llvm::ArrayRef<char> raw = attr->getRawData();
  if (attr->isSplat()) {
    bytes.clear();
    for (int64_t i = 0; i < count; ++i)
      bytes.append(raw.data(), raw.size());
  } else {
    bytes.assign(raw.data(), raw.size());
  }
  return true;
}
