//===- WeightsFile.cpp - the weights file a model executable reads --------===//

#include "pcc/Codegen/WeightsFile.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pccrt/Float16.h"
#include "pccrt/Model.h"
#include "pccrt/ShardLayout.h"
#include "pccrt/WeightsFile.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstring>

using namespace mlir;

namespace pcc {
namespace {

/// ONNX data type codes of the float types a weight converts between.
int32_t onnxFloatCode(Type t) {
  return t.isF16() ? int32_t(pccrt::DType::F16)
         : t.isBF16() ? int32_t(pccrt::DType::BF16)
                      : int32_t(pccrt::DType::F32);
}

float readFloat(const char *p, int32_t type) {
  uint16_t h;
  if (type == int32_t(pccrt::DType::F32)) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  std::memcpy(&h, p, 2);
  return type == int32_t(pccrt::DType::F16) ? pccrt::halfBitsToFloat(h)
                                            : pccrt::bfloat16BitsToFloat(h);
}

void writeFloat(char *p, int32_t type, float f) {
  if (type == int32_t(pccrt::DType::F32)) {
    std::memcpy(p, &f, 4);
    return;
  }
  uint16_t h = type == int32_t(pccrt::DType::F16) ? pccrt::floatToHalfBits(f)
                                                  : pccrt::floatToBFloat16Bits(f);
  std::memcpy(p, &h, 2);
}

/// `bytes` of `from` values as `to` values; nothing when their count is not
/// whole (the size check reports it).
std::string convertFloats(const std::string &bytes, int32_t from, int32_t to) {
  size_t inSize = from == int32_t(pccrt::DType::F32) ? 4 : 2;
  size_t outSize = to == int32_t(pccrt::DType::F32) ? 4 : 2;
  if (bytes.size() % inSize)
    return bytes;
  size_t n = bytes.size() / inSize;
  std::string out(n * outSize, '\0');
  for (size_t i = 0; i < n; ++i)
    writeFloat(&out[i * outSize], to, readFloat(&bytes[i * inSize], from));
  return out;
}

} // namespace

const WeightsEntry &WeightsTable::add(Operation *op, const Mesh &mesh) {
  Value v = op->getResult(0);
  TensorSharding split = shardingOf(v);
  std::string key;
  WeightsEntry entry;
  entry.bytes = tensorBytes(v);
  entry.stride = entry.bytes;
  if (auto w = dyn_cast<WeightOp>(op)) {
    key = w.getName().str() + " " + describe(split, mesh);
    entry.weightName = w.getName().str();
    entry.zeros = w.getZeros();
    if (auto from = w.getSourceTypeAttr()) {
      entry.sourceType = onnxFloatCode(from.getValue());
      entry.storedType = onnxFloatCode(typeOf(v).getElementType());
    }
    if (auto unpadded = w.getUnpaddedAttr()) {
      entry.unpadded.assign(unpadded.asArrayRef().begin(),
                            unpadded.asArrayRef().end());
    }
    if (auto parts = w.getPartsAttr()) {
      for (StringRef part : parts.getAsValueRange<StringAttr>())
        entry.parts.push_back(part.str());
      entry.partsAxis = w.getPartsAxisAttr().getInt();
    }
  } else {
    entry.constant = cast<ConstantOp>(op).getValue();
  }
  if (!split.isReplicated()) {
    auto t = typeOf(v);
    entry.elementBytes = elementBytes(t.getElementType());
    for (auto [size, d] : llvm::zip(t.getShape(), split.dims)) {
      int64_t n = d.isSplit() ? mesh.size(d.axes) : 1;
      entry.globalShape.push_back(size * n);
      entry.blocks.push_back(n);
      entry.groups.push_back(d.isSplit() ? d.groups : 1);
      entry.numBlocks *= n;
    }
    entry.stride = (entry.bytes + 63) / 64 * 64;
  }
  if (!entry.parts.empty()) {
    auto t = typeOf(v);
    entry.elementBytes = elementBytes(t.getElementType());
    entry.partsShape =
        split.isReplicated()
            ? std::vector<int64_t>(t.getShape().begin(), t.getShape().end())
            : entry.globalShape;
  }
  if (!entry.unpadded.empty()) {
    auto t = typeOf(v);
    entry.elementBytes = elementBytes(t.getElementType());
    for (auto [d, size] : llvm::enumerate(t.getShape()))
      entry.paddedShape.push_back(split.isReplicated() ? size
                                                       : entry.globalShape[d]);
  }
  if (!key.empty())
    if (auto it = byKey.find(key); it != byKey.end())
      return list[it->second];
  entry.offset = bytes;
  bytes += (entry.stride * (entry.numBlocks - 1) + entry.bytes + 63) / 64 * 64;
  if (!key.empty())
    byKey[key] = list.size();
  list.push_back(std::move(entry));
  return list.back();
}

int64_t WeightsTable::deviceBytes() const {
  int64_t total = 0;
  for (const WeightsEntry &e : list)
    total += e.bytes;
  return total;
}

namespace {

/// Dense bytes of an IR constant (bools one byte each, splats expanded).
std::string constantBytes(ElementsAttr value) {
  auto dense = cast<DenseElementsAttr>(value);
  std::string bytes;
  if (dense.getElementType().isInteger(1)) {
    for (bool b : dense.getValues<bool>())
      bytes.push_back(b ? 1 : 0);
    return bytes;
  }
  ArrayRef<char> raw = dense.getRawData();
  if (dense.isSplat()) {
    for (int64_t i = 0, n = dense.getNumElements(); i < n; ++i)
      bytes.append(raw.data(), raw.size());
    return bytes;
  }
  return std::string(raw.data(), raw.size());
}

/// Every block of a split weight, in pccrt::blockIndex order, each padded
/// to `stride` bytes.
std::string splitBlocks(const WeightsEntry &e, std::string &global) {
  int rank = e.globalShape.size();
  std::vector<pccrt::DimSplit> splits(rank);
  for (int d = 0; d < rank; ++d)
    splits[d] = {e.blocks[d] > 1 ? 1 : 0, {d, 0, 0, 0}, e.groups[d]};
  std::string out(e.stride * (e.numBlocks - 1) + e.bytes, '\0');
  std::vector<int64_t> coords(rank);
  for (int64_t b = 0; b < e.numBlocks; ++b) {
    pccrt::meshCoords(b, rank, e.blocks.data(), coords.data());
    pccrt::copyBlock(/*toLocal=*/true, global.data(), out.data() + b * e.stride,
                     rank, e.globalShape.data(), splits.data(),
                     e.blocks.data(), coords.data(), e.elementBytes);
  }
  return out;
}

/// An initializer's `bytes` written into its zero-padded shape (nothing
/// when their count does not match: the size check reports it).
std::string padded(const WeightsEntry &e, const std::string &bytes) {
  int64_t in = e.elementBytes, out = e.elementBytes;
  for (auto [u, p] : llvm::zip(e.unpadded, e.paddedShape)) {
    in *= u;
    out *= p;
  }
  if (int64_t(bytes.size()) != in)
    return bytes;
  std::string result(out, '\0');
  pccrt::copyCorner(bytes.data(), e.unpadded.data(), result.data(),
                    e.paddedShape.data(), e.unpadded.size(), e.elementBytes);
  return result;
}

/// A fused weight's initializers, each read (and converted) as one weight
/// is, joined along the entry's axis.
bool joinedParts(const WeightsEntry &e, const ReadWeightFn &readWeight,
                 std::string &joined, std::string &error) {
  int64_t outer = 1, inner = e.elementBytes;
  for (auto [d, size] : llvm::enumerate(e.partsShape)) {
    if (int64_t(d) < e.partsAxis)
      outer *= size;
    else if (int64_t(d) > e.partsAxis)
      inner *= size;
  }
  std::vector<std::string> parts(e.parts.size());
  int64_t rowBytes = 0;
  for (auto [name, bytes] : llvm::zip(e.parts, parts)) {
    if (!readWeight(name, bytes, error))
      return false;
    if (e.sourceType)
      bytes = convertFloats(bytes, e.sourceType, e.storedType);
    if (bytes.size() % (outer * inner)) {
      error = "weight '" + name + "' has " + std::to_string(bytes.size()) +
              " bytes, not whole slices of the fused weight '" + e.weightName +
              "'";
      return false;
    }
    rowBytes += bytes.size() / outer;
  }
  joined.clear();
  joined.reserve(outer * rowBytes);
  for (int64_t o = 0; o < outer; ++o)
    for (const std::string &bytes : parts) {
      size_t chunk = bytes.size() / outer;
      joined.append(bytes, o * chunk, chunk);
    }
  return true;
}

/// Folds `bytes` at `offset` into a running fingerprint.
uint64_t mixFingerprint(uint64_t h, int64_t offset, StringRef bytes) {
  uint64_t parts[3] = {h, static_cast<uint64_t>(offset),
                       llvm::xxh3_64bits(bytes)};
  return llvm::xxh3_64bits(ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(parts), sizeof(parts)));
}

} // namespace

FailureOr<uint64_t> writeWeightsFile(Location loc, StringRef path,
                                     const WeightsTable &table,
                                     ArrayRef<std::string> sources,
                                     const ReadWeightFn &readWeight) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return emitError(loc) << "cannot write '" << path << "': " << ec.message();
  os.write_zeros(sizeof(pccrt::WeightsHeader));
  uint64_t fingerprint = 0;
  for (const std::string &text : sources)
    fingerprint = mixFingerprint(fingerprint, 0, text);
  int64_t at = 0;
  for (const WeightsEntry &e : table.entries()) {
    std::string bytes, error;
    if (e.zeros) {
      bytes.assign(e.bytes * e.numBlocks, '\0');
    } else if (!e.weightName.empty()) {
      if (!readWeight)
        return emitError(loc) << "no weights to read '" << e.weightName
                              << "' from";
      if (!e.parts.empty()) {
        if (!joinedParts(e, readWeight, bytes, error))
          return emitError(loc) << error;
      } else if (!readWeight(e.weightName, bytes, error)) {
        return emitError(loc) << error;
      } else if (e.sourceType) {
        bytes = convertFloats(bytes, e.sourceType, e.storedType);
      }
      if (!e.unpadded.empty())
        bytes = padded(e, bytes);
    } else {
      bytes = constantBytes(e.constant);
    }
    int64_t expected = e.bytes * e.numBlocks;
    if (static_cast<int64_t>(bytes.size()) != expected)
      return emitError(loc) << "weight '" << e.weightName << "' has "
                            << bytes.size() << " bytes, expected " << expected;
    if (e.numBlocks > 1)
      bytes = splitBlocks(e, bytes);
    fingerprint = mixFingerprint(fingerprint, e.offset, bytes);
    os.write_zeros(e.offset - at);
    os << bytes;
    at = e.offset + bytes.size();
  }
  os.write_zeros(table.fileBytes() - at);
  pccrt::WeightsHeader header = {};
  std::memcpy(header.magic, pccrt::kWeightsMagic, sizeof(header.magic));
  header.fingerprint = fingerprint;
  header.dataBytes = table.fileBytes();
  os.seek(0);
  os.write(reinterpret_cast<const char *>(&header), sizeof(header));
  os.close();
  if (os.has_error()) {
    std::string why = os.error().message();
    os.clear_error();
    return emitError(loc) << "cannot write '" << path << "': " << why;
  }
  return fingerprint;
}

} // namespace pcc
