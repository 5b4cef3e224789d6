//===- ONNXImporter.h - ONNX model to pcc dialect ---------------*- C++ -*-===//
//
// Imports an ONNX model (binary protobuf, or ONNX's text syntax for files
// ending in .onnxtxt) into a module holding one func.func @main in the pcc
// dialect with fully static shapes. Errors are emitted as MLIR diagnostics at
// NameLocs built from ONNX node names; the importer never aborts on user data.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_IMPORT_ONNXIMPORTER_H
#define PCC_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace pcc {

struct ImportOptions {
  /// Shapes bound by the user: a graph input name maps to its full shape, a
  /// symbolic dimension name (ONNX dim_param) maps to a one-element shape.
  llvm::StringMap<std::vector<int64_t>> inputShapes;
  /// Megatron's --global-batch-size: samples per step, bound to the leading
  /// (batch) dimension of the first graph input and every input sharing
  /// its symbolic name (0: the model's own).
  int64_t globalBatch = 0;
  /// The model is imported to be trained (--train): a training-mode op's
  /// buffer outputs (BatchNormalization's running statistics) become the
  /// step's new values of the initializers they update (pcc.assign).
  /// Otherwise they are values no one reads, as ONNX defines them.
  bool training = false;
  /// Seed of training-mode Dropout's generator (pcc.dropout).
  uint64_t seed = 0;
};

/// Parses `--input-shape` values of the form NAME=2x32 (or NAME=7 for a
/// symbolic dimension) into `options`. Returns an error message or "".
std::string parseInputShapeBinding(llvm::StringRef spec, ImportOptions &options);

/// Imports the model at `path`. Returns null after emitting diagnostics.
/// The ONNX default-domain op types pcc imports, sorted (pcc --list-ops).
std::vector<std::string> supportedOnnxOps();

mlir::OwningOpRef<mlir::ModuleOp> importONNXFile(llvm::StringRef path,
                                                 mlir::MLIRContext &context,
                                                 const ImportOptions &options);

/// Imports a model from memory; `text` selects ONNX's text syntax.
mlir::OwningOpRef<mlir::ModuleOp>
importONNXBuffer(llvm::StringRef buffer, bool text, llvm::StringRef modelPath,
                 mlir::MLIRContext &context, const ImportOptions &options);

/// Highest default-domain opset the importer accepts.
constexpr int kMaxSupportedOpset = 17;
/// Lowest default-domain opset the importer accepts.
constexpr int kMinSupportedOpset = 1;

} // namespace pcc

#endif // PCC_IMPORT_ONNXIMPORTER_H
