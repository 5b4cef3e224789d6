//===- TensorData.cpp - ONNX TensorProto contents to MLIR attributes ------===//

#include "ModelLoader.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <map>
#include <set>

using namespace mlir;

namespace pcc::import {

int64_t elementBytes(int32_t type) {
  using TP = onnx::TensorProto;
  switch (type) {
  case TP::FLOAT: case TP::INT32: case TP::UINT32: return 4;
  case TP::DOUBLE: case TP::INT64: case TP::UINT64: return 8;
  case TP::FLOAT16: case TP::BFLOAT16: case TP::INT16: case TP::UINT16:
    return 2;
  case TP::INT8: case TP::UINT8: case TP::BOOL: return 1;
  default: return 0;
  }
}

RankedTensorType tensorType(const onnx::TensorProto &tensor, MLIRContext *ctx) {
  SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  return RankedTensorType::get(dims, elementTypeFor(tensor.data_type(), ctx));
}

namespace {

using TP = onnx::TensorProto;

bool isFloatType(int32_t type) {
  return type == TP::FLOAT || type == TP::DOUBLE || type == TP::FLOAT16 ||
         type == TP::BFLOAT16;
}

bool isIntegralType(int32_t type) {
  return type == TP::BOOL || type == TP::INT8 || type == TP::UINT8 ||
         type == TP::INT16 || type == TP::UINT16 || type == TP::INT32 ||
         type == TP::UINT32 || type == TP::INT64 || type == TP::UINT64;
}

int64_t elementCount(const TP &t) {
  int64_t count = 1;
  for (int64_t d : t.dims())
    count *= d;
  return count;
}

/// Whether all of `t`'s bytes are in the model, as raw_data of its size:
/// what the analyses below read directly.
bool hasInlineBytes(const TP &t) {
  int64_t width = elementBytes(t.data_type());
  return width > 0 && t.data_location() != TP::EXTERNAL && t.has_raw_data() &&
         int64_t(t.raw_data().size()) == elementCount(t) * width;
}

} // namespace

bool shouldInline(const onnx::TensorProto &tensor, int64_t floatLimit) {
  int64_t count = elementCount(tensor);
  bool isFloat = isFloatType(tensor.data_type());
  // Integer and bool tensors are shape arithmetic, indices and masks; float
  // tensors beyond a few scalars are parameters (a Constant node's few
  // floats, such as Resize's scales, are literals of the graph).
  return isFloat ? count <= floatLimit : count <= 4096;
}

std::optional<onnx::TensorProto> splatElement(const onnx::TensorProto &t,
                                              bool floatsToo) {
  int32_t type = t.data_type();
  int64_t width = elementBytes(type);
  const std::string &raw = t.raw_data();
  if (!(isIntegralType(type) || floatsToo) || elementCount(t) == 0 ||
      !hasInlineBytes(t))
    return std::nullopt;
  for (int64_t at = width; at < int64_t(raw.size()); at += width)
    if (raw.compare(at, width, raw, 0, width) != 0)
      return std::nullopt;
  onnx::TensorProto one;
  one.set_name(t.name());
  one.set_data_type(type);
  one.set_raw_data(raw.substr(0, width));
  return one;
}

bool isBandMask(const onnx::TensorProto &t) {
  int64_t width = elementBytes(t.data_type()), count = elementCount(t);
  const std::string &raw = t.raw_data();
  if (!isIntegralType(t.data_type()) || t.dims_size() < 2 || count == 0 ||
      count > (1 << 26) || !hasInlineBytes(t))
    return false;
  int64_t rows = t.dims(t.dims_size() - 2), cols = t.dims(t.dims_size() - 1);
  auto nonZero = [&](int64_t i) {
    for (int64_t b = 0; b < width; ++b)
      if (raw[i * width + b])
        return true;
    return false;
  };
  // Row 0 fixes k: tril keeps c - r <= k (a prefix of row 0), triu keeps
  // c - r >= k (a suffix).
  int64_t lead = 0;
  while (lead < cols && nonZero(lead))
    ++lead;
  bool lower = lead > 0;
  int64_t k = lower ? lead - 1 : 0;
  if (!lower)
    while (k < cols && !nonZero(k))
      ++k;
  if (lower ? lead == cols : k == 0)
    return false; // all ones in row 0: not a band worth a constant
  for (int64_t i = 0; i < count; ++i) {
    int64_t r = (i / cols) % rows, c = i % cols;
    if (nonZero(i) != (lower ? c - r <= k : c - r >= k))
      return false;
  }
  return true;
}

namespace {

/// Whether `b` ([cols, rows]) holds the transpose of `a` ([rows, cols]),
/// both as raw bytes of `width`-byte elements.
bool isTransposeOf(const std::string &a, const std::string &b, int64_t rows,
                   int64_t cols, int64_t width) {
  auto same = [&](int64_t i, int64_t j) {
    return a.compare((i * cols + j) * width, width, b,
                     (j * rows + i) * width, width) == 0;
  };
  // A few scattered elements first: unrelated weights differ at once.
  for (int64_t k = 1; k <= 16; ++k)
    if (!same((k * 7919) % rows, (k * 104729) % cols))
      return false;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (!same(i, j))
        return false;
  return true;
}

} // namespace

std::vector<std::pair<std::string, std::string>>
findTransposedCopies(const onnx::GraphProto &graph) {
  // 2-D float initializers with their bytes inline, by (rows, cols).
  std::map<std::pair<int64_t, int64_t>, std::vector<const TP *>> byShape;
  for (const TP &t : graph.initializer()) {
    if (!isFloatType(t.data_type()) || t.dims_size() != 2 ||
        t.dims(0) == t.dims(1) || !hasInlineBytes(t))
      continue;
    byShape[{t.dims(0), t.dims(1)}].push_back(&t);
  }
  auto isTorchFolded = [](const TP *t) {
    return llvm::StringRef(t->name()).starts_with("onnx::");
  };
  std::vector<std::pair<std::string, std::string>> pairs;
  std::set<const TP *> taken;
  for (auto &[shape, group] : byShape) {
    auto other = byShape.find({shape.second, shape.first});
    if (shape.first > shape.second || other == byShape.end())
      continue;
    for (const TP *a : group)
      for (const TP *b : other->second) {
        if (taken.count(a) || taken.count(b) ||
            a->data_type() != b->data_type() ||
            !isTransposeOf(a->raw_data(), b->raw_data(), shape.first,
                           shape.second, elementBytes(a->data_type())))
          continue;
        // torch names what constant folding made "onnx::<Op>_<n>"; the
        // parameter keeps its module path.
        bool aIsCopy = isTorchFolded(a) && !isTorchFolded(b);
        pairs.push_back(aIsCopy ? std::pair{a->name(), b->name()}
                                : std::pair{b->name(), a->name()});
        taken.insert(a);
        taken.insert(b);
      }
  }
  return pairs;
}

std::optional<ExternalLocation> externalLocation(const onnx::TensorProto &t) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL)
    return std::nullopt;
  ExternalLocation loc;
  auto number = [&](const std::string &key, const std::string &text,
                    int64_t &out) {
    if (llvm::StringRef(text).getAsInteger(10, out) || out < 0)
      loc.problem = "external data " + key + " '" + text +
                    "' is not a non-negative integer";
  };
  bool hasLocation = false;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location") {
      loc.location = kv.value();
      hasLocation = true;
    } else if (kv.key() == "offset") {
      number("offset", kv.value(), loc.offset);
    } else if (kv.key() == "length") {
      number("length", kv.value(), loc.length);
    }
  }
  if (!hasLocation && loc.problem.empty())
    loc.problem = "external data has no location";
  return loc;
}

bool resolveExternalData(const ExternalLocation &ext, llvm::StringRef modelDir,
                         ExternalFile &out, std::string &why) {
  if (!ext.problem.empty()) {
    why = ext.problem;
    return false;
  }
  llvm::StringRef loc = ext.location;
  std::string quoted = "external data location '" + ext.location + "'";
  if (loc.empty() || loc.contains('\0')) {
    why = quoted + " is not a file name";
    return false;
  }
  // ONNX's rule: relative, and inside the model's folder. Check the text
  // first (no "..", which could climb out), then the file it names after
  // symbolic links.
  if (llvm::sys::path::is_absolute(loc, llvm::sys::path::Style::posix) ||
      llvm::sys::path::is_absolute(loc, llvm::sys::path::Style::windows) ||
      loc.starts_with("\\")) {
    why = quoted + " is an absolute path; ONNX requires a path relative to "
                   "the model's folder";
    return false;
  }
  for (llvm::StringRef part :
       llvm::make_range(llvm::sys::path::begin(loc),
                        llvm::sys::path::end(loc)))
    if (part == "..") {
      why = quoted + " climbs out with '..'; ONNX requires a path inside the "
                     "model's folder";
      return false;
    }
  llvm::SmallString<256> dir(modelDir.empty() ? "." : modelDir);
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(file, loc);
  out.path = std::string(file);
  out.offset = ext.offset;
  out.exists = llvm::sys::fs::exists(file);
  if (!out.exists)
    return true;
  llvm::SmallString<256> realDir, realFile;
  bool resolved = !llvm::sys::fs::real_path(dir, realDir) &&
                  !llvm::sys::fs::real_path(file, realFile);
  if (resolved && !realDir.ends_with("/"))
    realDir += "/";
  if (!resolved || !llvm::StringRef(realFile).starts_with(realDir)) {
    why = quoted + " resolves outside the model's folder (through a "
                   "symbolic link)";
    return false;
  }
  if (!llvm::sys::fs::is_regular_file(realFile)) {
    why = quoted + " is not a regular file";
    return false;
  }
  return true;
}

FailureOr<DenseElementsAttr> readTensor(const onnx::TensorProto &t,
                                        llvm::StringRef modelDir,
                                        MLIRContext *ctx, const Diag &diag) {
  RankedTensorType type = tensorType(t, ctx);
  if (!type.getElementType()) {
    diag("tensor '" + t.name() + "' has unsupported data type", "");
    return failure();
  }
  int64_t count = type.getNumElements();
  int64_t bytes = count * elementBytes(t.data_type());
  std::string raw;
  if (auto ext = externalLocation(t)) {
    ExternalFile file;
    std::string why;
    if (!resolveExternalData(*ext, modelDir, file, why)) {
      diag("tensor '" + t.name() + "': " + why, "");
      return failure();
    }
    auto buf = llvm::MemoryBuffer::getFileSlice(file.path, bytes, file.offset);
    if (!buf) {
      diag("cannot read external data of '" + t.name() + "' from '" +
               file.path + "': " + buf.getError().message(),
           "");
      return failure();
    }
    raw = (*buf)->getBuffer().str();
  } else if (t.has_raw_data()) {
    raw = t.raw_data();
  }
  if (!raw.empty() || bytes == 0) {
    if (static_cast<int64_t>(raw.size()) != bytes) {
      diag("tensor '" + t.name() + "' holds " + std::to_string(raw.size()) +
               " bytes, expected " + std::to_string(bytes),
           "");
      return failure();
    }
    // ONNX stores bools as one byte each; MLIR's raw i1 layout is bit-packed,
    // so go through APInt values for them.
    if (type.getElementType().isInteger(1)) {
      SmallVector<bool> vals;
      for (char c : raw)
        vals.push_back(c != 0);
      return DenseElementsAttr::get(type, ArrayRef<bool>(vals));
    }
    return DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(raw.data(), raw.size()));
  }
  // Typed fields.
  Type elem = type.getElementType();
  using TP = onnx::TensorProto;
  if (t.data_type() == TP::FLOAT && t.float_data_size() == count)
    return DenseElementsAttr::get(
        type, ArrayRef<float>(t.float_data().data(), count));
  if (t.data_type() == TP::DOUBLE && t.double_data_size() == count)
    return DenseElementsAttr::get(
        type, ArrayRef<double>(t.double_data().data(), count));
  if (t.data_type() == TP::INT64 && t.int64_data_size() == count)
    return DenseElementsAttr::get(
        type, ArrayRef<int64_t>(t.int64_data().data(), count));
  if (t.data_type() == TP::UINT64 && t.uint64_data_size() == count)
    return DenseElementsAttr::get(
        type, ArrayRef<uint64_t>(t.uint64_data().data(), count));
  if (t.int32_data_size() == count && isa<IntegerType>(elem)) {
    SmallVector<APInt> vals;
    for (int32_t v : t.int32_data())
      vals.push_back(APInt(elem.getIntOrFloatBitWidth(), uint64_t(int64_t(v)),
                           /*isSigned=*/true, /*implicitTrunc=*/true));
    return DenseElementsAttr::get(type, vals);
  }
  if (t.int32_data_size() == count && isa<FloatType>(elem)) {
    // float16 and bfloat16 are stored as their bit patterns in int32_data.
    SmallVector<APFloat> vals;
    for (int32_t v : t.int32_data())
      vals.push_back(APFloat(cast<FloatType>(elem).getFloatSemantics(),
                             APInt(16, uint64_t(v) & 0xffff)));
    return DenseElementsAttr::get(type, vals);
  }
  diag("tensor '" + t.name() + "' has no data of its declared type", "");
  return failure();
}

} // namespace pcc::import
