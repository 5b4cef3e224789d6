//===- ModelLoader.h - reading and validating ONNX models -------*- C++ -*-===//
//
// Private to lib/pcc/Import. Everything here reports problems through
// `Diag`, a sink for one-line messages, so that a malformed model is refused
// before any IR is built.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_LIB_IMPORT_MODELLOADER_H
#define PCC_LIB_IMPORT_MODELLOADER_H

#include "pcc/Import/ONNXImporter.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "onnx/onnx_pb.h"
#include <functional>

#include <string>

namespace pcc::import {

/// Receives an error message and the ONNX node it concerns ("" if none).
using Diag = std::function<void(const std::string &message,
                                     const std::string &node)>;

/// Parses a binary or text ONNX model.
bool parseModel(llvm::StringRef buffer, bool text, onnx::ModelProto &model,
                const Diag &diag);

/// Checks IR version, opsets and graph presence; returns the default-domain
/// opset (0 if the model imports none), or -1 after reporting an error.
int checkModelHeader(const onnx::ModelProto &model, const Diag &diag);

/// Replaces symbolic or given dims of graph inputs with the user's bindings
/// and rejects bindings that name nothing.
bool bindInputShapes(onnx::GraphProto &graph, const ImportOptions &options,
                     const Diag &diag);

/// Checks every initializer's dims and data size without reading the data.
bool checkInitializers(const onnx::GraphProto &graph,
                       llvm::StringRef modelDir, const Diag &diag);

/// Returns node indices in dependency order; reports reads of undefined
/// tensors and cycles. A node with subgraphs (If, Loop) depends on what its
/// subgraphs read from outside them. With `nested`, `graph` is a subgraph:
/// names it does not define come from the scopes around it.
bool sortNodes(const onnx::GraphProto &graph, std::vector<int> &order,
               const Diag &diag, bool nested = false);

/// The graphs held by `node`'s attributes (If's branches, Loop's body).
std::vector<const onnx::GraphProto *> subgraphsOf(const onnx::NodeProto &node);

/// Names that `graph`'s nodes, its nested subgraphs' included, read from
/// the scopes around it.
std::vector<std::string> outerReads(const onnx::GraphProto &graph);

/// Calls `fn` on `graph` and on every graph nested in its nodes.
void forEachGraph(const onnx::GraphProto &graph,
                  const std::function<void(const onnx::GraphProto &)> &fn);

/// Display name of node `index`: its ONNX name, or "<OpType>#index".
std::string nodeName(const onnx::NodeProto &node, int index);

/// Static MLIR tensor type of a graph input or output; reports unbound
/// symbolic dims, negative dims and element-count overflow.
mlir::FailureOr<mlir::RankedTensorType>
valueInfoType(const onnx::ValueInfoProto &info, mlir::MLIRContext *ctx,
              const Diag &diag);

/// Tensor type of an initializer or Constant value (dims already checked).
mlir::RankedTensorType tensorType(const onnx::TensorProto &tensor,
                                  mlir::MLIRContext *ctx);

/// Whether a tensor's bytes are small enough to inline as pcc.constant.
bool shouldInline(const onnx::TensorProto &tensor, int64_t floatLimit = 1);

/// For a tensor whose bytes are in the model (raw_data) and whose elements
/// are all equal: that element as a one-element tensor of no dimensions (a
/// ones mask of any size imports as a splat constant). Only bool and integer
/// tensors unless `floatsToo`: a float initializer that is all ones or zeros
/// is a freshly initialised parameter, but a Constant node's never is.
std::optional<onnx::TensorProto> splatElement(const onnx::TensorProto &t,
                                              bool floatsToo = false);

/// Whether a bool or integer tensor (bytes in the model, at most 64M
/// elements) is a band over its last two dimensions, the same under every
/// leading index: non-zero where column - row <= k (tril) or >= k (triu).
/// Exporters fold causal masks into such tensors (GPT-2's `bias` buffer);
/// imported as constants, the attention passes and the planner see them.
bool isBandMask(const onnx::TensorProto &t);

/// Pairs (copy, original) of 2-D initializers where `copy` holds the
/// transpose of `original`: what `do_constant_folding` leaves of a weight
/// tied to a transposed use (an embedding shared with the output head).
/// Only tensors whose bytes are in the model are compared.
std::vector<std::pair<std::string, std::string>>
findTransposedCopies(const onnx::GraphProto &graph);

/// Reads a tensor's values (embedded, or external relative to `modelDir`).
mlir::FailureOr<mlir::DenseElementsAttr>
readTensor(const onnx::TensorProto &tensor, llvm::StringRef modelDir,
           mlir::MLIRContext *ctx, const Diag &diag);

/// Location of an external tensor's data, if it has one; `problem` says what
/// is malformed about its entries ("" if nothing).
struct ExternalLocation {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  std::string problem;
};
std::optional<ExternalLocation> externalLocation(const onnx::TensorProto &t);

/// An external data file resolved under the model's folder.
struct ExternalFile {
  std::string path;
  int64_t offset = 0;
  /// Absent files are allowed: planning needs shapes only.
  bool exists = false;
};

/// Resolves `ext` by ONNX's rule: a relative path without "..", naming a
/// regular file inside `modelDir` after symbolic links are resolved (or no
/// file at all). Returns false and says why otherwise. Every reader of
/// external data goes through here.
bool resolveExternalData(const ExternalLocation &ext, llvm::StringRef modelDir,
                         ExternalFile &out, std::string &why);

/// Checks a tensor's type, dims and data size (embedded, or the external
/// file's location and extent) without reading the data; `what` names it in
/// messages ("initializer 'w'").
bool checkTensorData(const onnx::TensorProto &t, const std::string &what,
                     llvm::StringRef modelDir, const Diag &diag);

/// Maps an ONNX TensorProto data type to an MLIR element type, or null.
mlir::Type elementTypeFor(int32_t onnxType, mlir::MLIRContext *ctx);

/// Size in bytes of one element of ONNX data type `type`, or 0.
int64_t elementBytes(int32_t type);

} // namespace pcc::import

#endif // PCC_LIB_IMPORT_MODELLOADER_H
