//===- TrainedModel.cpp - a model with its trained initializers -----------===//

#include "pcc/Import/TrainedModel.h"

#include "ModelLoader.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace pcc {
namespace {

Error failure(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// The file --save wrote for initializer `name` ('%' and '/' escaped).
std::string savedFile(StringRef dir, StringRef name) {
  std::string escaped;
  for (char c : name)
    escaped += c == '%' ? "%25" : c == '/' ? "%2F" : std::string(1, c);
  SmallString<256> path(dir);
  sys::path::append(path, escaped + ".pb");
  return std::string(path);
}

} // namespace

Expected<int> writeTrainedModel(StringRef modelPath, StringRef savedDir,
                                StringRef outPath) {
  SmallString<256> steps(savedDir);
  sys::path::append(steps, "steps.txt");
  if (!sys::fs::exists(steps))
    return failure("'" + savedDir + "' is not a saved training run (no "
                   "steps.txt; write one with the executable's --save)");
  if (sys::fs::exists(outPath))
    return failure("'" + outPath + "' exists; pcc export writes a new file "
                   "and never replaces one");
  auto buffer = MemoryBuffer::getFile(modelPath, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return failure("cannot open '" + modelPath + "'");
  onnx::ModelProto model;
  std::string error;
  auto diag = [&](const std::string &m, const std::string &) { error = m; };
  if (!import::parseModel((*buffer)->getBuffer(),
                          modelPath.ends_with(".onnxtxt"), model, diag))
    return failure(modelPath + ": " + error);
  int replaced = 0;
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    std::string path = savedFile(savedDir, t.name());
    if (!sys::fs::exists(path))
      continue; // not trained (frozen, integer, or a constant)
    auto bytes = MemoryBuffer::getFile(path, false, false);
    onnx::TensorProto trained;
    if (!bytes || !trained.ParseFromArray((*bytes)->getBufferStart(),
                                          (*bytes)->getBufferSize()))
      return failure("cannot read the tensor in '" + path + "'");
    if (trained.data_type() != t.data_type() ||
        !std::equal(trained.dims().begin(), trained.dims().end(),
                    t.dims().begin(), t.dims().end()) ||
        trained.dims_size() != t.dims_size())
      return failure("'" + path + "' does not hold initializer '" + t.name() +
                     "' of this model (another type or shape)");
    std::string name = t.name();
    t = std::move(trained);
    t.set_name(name);
    ++replaced;
  }
  if (replaced == 0)
    return failure("'" + savedDir + "' holds none of the initializers of '" +
                   modelPath + "'");
  std::string out;
  if (!model.SerializeToString(&out))
    return failure("the trained model is too large for one ONNX file");
  // Complete or absent: written beside, then renamed.
  std::string tmp = (outPath + ".pcc-tmp").str();
  {
    std::error_code ec;
    raw_fd_ostream os(tmp, ec);
    if (ec)
      return failure("cannot write '" + outPath + "': " + ec.message());
    os << out;
    os.close();
    if (os.has_error()) {
      std::string why = os.error().message();
      os.clear_error();
      sys::fs::remove(tmp);
      return failure("cannot write '" + outPath + "': " + why);
    }
  }
  if (std::error_code ec = sys::fs::rename(tmp, outPath)) {
    sys::fs::remove(tmp);
    return failure("cannot write '" + outPath + "': " + ec.message());
  }
  return replaced;
}

} // namespace pcc
