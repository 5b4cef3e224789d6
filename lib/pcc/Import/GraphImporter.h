//===- GraphImporter.h - one ONNX graph into pcc ops --------------*- C++
//-*-===//
//
// Private to lib/pcc/Import. The importer's state while it converts a
// graph: the values made so far by ONNX name, the initializers, and the
// names whose producer pcc does not support. ONNXImporter.cpp drives it;
// ControlFlowImport.cpp inlines If and Loop bodies through it.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_LIB_IMPORT_GRAPHIMPORTER_H
#define PCC_LIB_IMPORT_GRAPHIMPORTER_H

#include "ModelLoader.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Path.h"

#include <unordered_map>

namespace pcc::import {

class GraphImporter {
public:
  GraphImporter(mlir::MLIRContext &ctx, onnx::ModelProto &model,
                llvm::StringRef path, int opset, bool shapesRebound,
                bool training, uint64_t seed)
      : ctx(ctx), model(model), graph(*model.mutable_graph()), path(path),
        modelDir(llvm::sys::path::parent_path(path)),
        shapesRebound(shapesRebound), training(training), seed(seed),
        opset(opset), builder(&ctx) {}

  mlir::OwningOpRef<mlir::ModuleOp> run(const std::vector<int> &order);
  /// Checks pcc's types against every static shape ONNX inferred.
  mlir::LogicalResult
  crossCheckShapes(mlir::ArrayRef<onnx::ValueInfoProto> inferred);

  void diag(const std::string &message, const std::string &node) {
    mlir::emitError(node.empty() ? fileLoc() : nodeLoc(node)) << message;
  }

private:
  mlir::Location fileLoc() {
    return mlir::FileLineColLoc::get(&ctx, path, 0, 0);
  }
  mlir::Location nodeLoc(llvm::StringRef name) {
    return mlir::NameLoc::get(mlir::StringAttr::get(&ctx, name));
  }
  Diag diagFn() {
    return [this](const std::string &m, const std::string &n) { diag(m, n); };
  }

  /// The values of `node`'s inputs, null for omitted optional ones.
  mlir::FailureOr<mlir::SmallVector<mlir::Value>>
  lookupInputs(const onnx::NodeProto &node, mlir::Location loc);
  mlir::FailureOr<mlir::Value> lookup(const std::string &name,
                                      mlir::Location useLoc);
  mlir::FailureOr<mlir::Value>
  materializeTensor(const onnx::TensorProto &tensor, mlir::Location loc,
                    int64_t floatLimit = 1, bool splatFloats = false);
  mlir::LogicalResult importNode(const onnx::NodeProto &node, int index);
  mlir::LogicalResult importConstantNode(const onnx::NodeProto &node,
                                         mlir::Location loc);

  // Control flow (ControlFlowImport.cpp): If and Loop whose condition and
  // trip count fold at compile time are inlined and unrolled.
  mlir::LogicalResult importIf(const onnx::NodeProto &node, mlir::Location loc);
  mlir::LogicalResult importLoop(const onnx::NodeProto &node,
                                 mlir::Location loc);
  /// Imports `body`'s nodes with its inputs bound to `args`; its names are
  /// scoped to the call (a loop body runs again under the same names).
  mlir::FailureOr<mlir::SmallVector<mlir::Value>>
  importBody(const onnx::GraphProto &body, mlir::ArrayRef<mlir::Value> args,
             mlir::Location loc);
  mlir::LogicalResult checkDeclaredOutput(const onnx::ValueInfoProto &info,
                                          mlir::Value v);

  mlir::MLIRContext &ctx;
  onnx::ModelProto &model;
  onnx::GraphProto &graph;
  std::string path;
  std::string modelDir;
  /// --input-shape changed input shapes: declared output dims may be stale.
  bool shapesRebound;
  /// ImportOptions::training and seed.
  bool training;
  uint64_t seed;
  int opset;
  mlir::OpBuilder builder;

  std::unordered_map<std::string, mlir::Value> values;
  std::unordered_map<std::string, const onnx::TensorProto *> initializers;
  /// Initializers that hold another's transpose (a tied weight after
  /// constant folding): imported as that transpose, so the tie is one
  /// parameter to train and to count.
  std::unordered_map<std::string, std::string> transposedCopyOf;
  /// Outputs a converter does not produce, with the node that owns them.
  std::unordered_map<std::string, std::string> unavailable;
  /// Body nodes imported so far, against kMaxUnrolledNodes.
  int64_t unrolledNodes = 0;
  /// An If or Loop body's node order and the names it defines.
  struct Body {
    std::vector<int> order;
    std::vector<std::string> names;
  };
  std::unordered_map<const onnx::GraphProto *, Body> bodies;
};

} // namespace pcc::import

#endif // PCC_LIB_IMPORT_GRAPHIMPORTER_H
