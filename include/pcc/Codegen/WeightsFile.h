//===- WeightsFile.h - the weights file a model executable reads -*- C++ -*-===//
//
// The table of what goes into weights.bin (pccrt/WeightsFile.h) and the
// writer. Targets add an entry per pcc.weight / pcc.constant and address it
// by offset; the file itself is the same for every target.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_CODEGEN_WEIGHTSFILE_H
#define PCC_CODEGEN_WEIGHTSFILE_H

#include "pcc/Sharding/Sharding.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <string>
#include <vector>

namespace pcc {

/// One entry of the weights file: a named ONNX weight or an IR constant.
/// A weight split over the mesh is stored as all of its blocks, each
/// `bytes` long, `stride` apart, in the order pccrt::blockIndex numbers them.
struct WeightsEntry {
  std::string weightName;
  mlir::ElementsAttr constant;
  int64_t offset = 0;
  int64_t bytes = 0;
  /// Set for split weights: the global shape, and per dim its block count
  /// and group count.
  std::vector<int64_t> globalShape, blocks, groups;
  int64_t elementBytes = 0;
  int64_t numBlocks = 1;
  int64_t stride = 0;
  /// For a weight converted by --precision: the ONNX data type codes of the
  /// initializer's values and of what the file stores (rounded to nearest
  /// even); 0 when stored as read.
  int32_t sourceType = 0, storedType = 0;
  /// A training step's state, not in the model: it starts at zero.
  bool zeros = false;
  /// A padded weight (pcc.weight ... unpadded): the initializer's shape and
  /// the whole padded one it is written into, zeros around it.
  std::vector<int64_t> unpadded, paddedShape;
  /// A fused weight (pcc.weight ... concat): the initializers joined along
  /// `partsAxis` of the whole `partsShape`.
  std::vector<std::string> parts;
  int64_t partsAxis = 0;
  std::vector<int64_t> partsShape;
};

/// The entries of one weights file, each 64-byte aligned. A weight used twice
/// with the same layout is stored once.
class WeightsTable {
public:
  /// The entry holding the result of `op` (a pcc.weight or pcc.constant)
  /// laid out as its sharding annotation says on `mesh`.
  const WeightsEntry &add(mlir::Operation *op, const Mesh &mesh);

  const std::vector<WeightsEntry> &entries() const { return list; }
  /// File bytes after the header.
  int64_t fileBytes() const { return bytes; }
  /// Bytes one device reads (its own blocks).
  int64_t deviceBytes() const;

private:
  std::vector<WeightsEntry> list;
  llvm::StringMap<size_t> byKey;
  int64_t bytes = 0;
};

/// The bytes behind `pcc.weight "name"` (dense, little-endian, bools one
/// byte each); false with `error` set when missing or unreadable.
using ReadWeightFn = std::function<bool(llvm::StringRef name,
                                        std::string &bytes, std::string &error)>;

/// Writes the weights file for `table`. The fingerprint covers `sources`
/// (the generated program) and every weight byte; returns it.
mlir::FailureOr<uint64_t> writeWeightsFile(mlir::Location loc,
                                           llvm::StringRef path,
                                           const WeightsTable &table,
                                           llvm::ArrayRef<std::string> sources,
                                           const ReadWeightFn &readWeight);

} // namespace pcc

#endif // PCC_CODEGEN_WEIGHTSFILE_H
