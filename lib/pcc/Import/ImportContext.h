//===- ImportContext.h - state shared by the ONNX op converters -*- C++ -*-===//
//
// Private to lib/pcc/Import. One NodeContext exists per ONNX node while it is
// converted; it gives converters typed access to the node's inputs and
// attributes and builds pcc ops with inferred result types, folding them when
// all operands are constant.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_LIB_IMPORT_IMPORTCONTEXT_H
#define PCC_LIB_IMPORT_IMPORTCONTEXT_H

#include "ModelLoader.h"
#include "pcc/Dialect/PCC/IR/PCCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "onnx/onnx_pb.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <optional>

namespace pcc::import {

/// Most If and Loop body nodes (and recurrent time steps' ops) one import
/// may inline: beyond it the program (and its compile) would grow without
/// bound.
constexpr int64_t kMaxUnrolledNodes = 200000;

class NodeContext {
public:
  NodeContext(const onnx::NodeProto &node, mlir::OpBuilder &builder,
              mlir::Location loc, llvm::ArrayRef<mlir::Value> inputs,
              int opset)
      : node(node), builder(builder), loc(loc), inputs(inputs), opset(opset) {
  }

  const onnx::NodeProto &node;
  mlir::OpBuilder &builder;
  mlir::Location loc;
  /// One entry per ONNX input; null for omitted optional inputs.
  llvm::ArrayRef<mlir::Value> inputs;
  /// Default-domain opset version of the model.
  int opset;
  /// ImportOptions::training: buffer outputs update their initializers.
  bool training = false;
  /// ImportOptions::seed.
  uint64_t seed = 0;

  mlir::MLIRContext *ctx() const { return builder.getContext(); }
  mlir::InFlightDiagnostic error() const { return mlir::emitError(loc); }

  size_t numInputs() const { return inputs.size(); }
  /// Input `i`, or null when absent.
  mlir::Value input(size_t i) const {
    return i < inputs.size() ? inputs[i] : mlir::Value();
  }
  mlir::RankedTensorType inputType(size_t i) const {
    return llvm::cast<mlir::RankedTensorType>(inputs[i].getType());
  }
  /// Fails with a diagnostic unless inputs [0, n) are present.
  mlir::LogicalResult requireInputs(size_t n) const;

  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t dflt) const;
  float floatAttr(llvm::StringRef name, float dflt) const;
  std::string stringAttr(llvm::StringRef name, llvm::StringRef dflt) const;
  std::optional<llvm::SmallVector<int64_t>> intsAttr(llvm::StringRef name) const;

  /// Values of input `i` if it is a constant integer tensor. Emits an error
  /// naming `what` otherwise.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  constInts(size_t i, llvm::StringRef what) const;
  /// Axes of ops that moved them from the `axes` attribute to a constant
  /// input 1 in opset `inputSinceOpset` (Squeeze, Unsqueeze, reductions);
  /// std::nullopt when absent.
  mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>>
  axesOperand(int inputSinceOpset, llvm::StringRef what) const;
  /// Value of input `i` if it is a constant scalar (or 1-element) tensor.
  mlir::FailureOr<double> constScalar(size_t i, llvm::StringRef what) const;
  /// Values of input `i` if it is a constant tensor, as doubles.
  mlir::FailureOr<llvm::SmallVector<double>>
  constFloats(size_t i, llvm::StringRef what) const;

  /// Builds op `OpTy` with result types inferred from operands and
  /// attributes, then folds it when possible. Inference errors are reported
  /// at this node.
  template <typename OpTy>
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  build(mlir::ValueRange operands,
        llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) const;

  /// Single-result convenience form of build().
  template <typename OpTy>
  mlir::FailureOr<mlir::Value>
  build1(mlir::ValueRange operands,
         llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) const {
    auto results = build<OpTy>(operands, attrs);
    if (mlir::failed(results))
      return mlir::failure();
    return (*results)[0];
  }

  /// A pcc.constant holding `value`.
  mlir::Value constant(mlir::ElementsAttr value) const;
  /// A rank-0 pcc.constant of element type `elem` (float or integer).
  mlir::Value scalar(mlir::Type elem, double value) const;

  mlir::NamedAttribute named(llvm::StringRef name, mlir::Attribute a) const {
    return builder.getNamedAttr(name, a);
  }
  mlir::NamedAttribute i64(llvm::StringRef name, int64_t v) const {
    return named(name, builder.getI64IntegerAttr(v));
  }
  mlir::NamedAttribute f32(llvm::StringRef name, float v) const {
    return named(name, builder.getF32FloatAttr(v));
  }
  mlir::NamedAttribute boolean(llvm::StringRef name, bool v) const {
    return named(name, builder.getBoolAttr(v));
  }
  mlir::NamedAttribute i64s(llvm::StringRef name,
                            llvm::ArrayRef<int64_t> v) const {
    return named(name, builder.getDenseI64ArrayAttr(v));
  }

private:
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  finish(mlir::OperationState &state,
         llvm::SmallVectorImpl<mlir::Type> &types) const;
};

template <typename OpTy>
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
NodeContext::build(mlir::ValueRange operands,
                   llvm::ArrayRef<mlir::NamedAttribute> attrs) const {
  mlir::OperationState state(loc, OpTy::getOperationName());
  state.addOperands(operands);
  auto dict = mlir::DictionaryAttr::get(ctx(), attrs);
  auto &props = state.getOrAddProperties<typename OpTy::Properties>();
  if (mlir::failed(OpTy::setPropertiesFromAttr(
          props, dict, [&] { return mlir::emitError(loc); })))
    return mlir::failure();
  llvm::SmallVector<mlir::Type> types;
  if (mlir::failed(OpTy::inferReturnTypes(ctx(), loc, state.operands, dict,
                                          state.getRawProperties(), {},
                                          types)))
    return mlir::failure();
  return finish(state, types);
}

/// A converter's result: one value per ONNX output (null for outputs the
/// converter does not produce).
using Results = mlir::FailureOr<llvm::SmallVector<mlir::Value>>;

/// Results of a single-output converter.
inline Results one(mlir::FailureOr<mlir::Value> v) {
  if (mlir::failed(v))
    return mlir::failure();
  return llvm::SmallVector<mlir::Value>{*v};
}

/// Converts one ONNX node.
using Converter = std::function<Results(NodeContext &)>;

/// The table of supported default-domain ONNX ops.
const llvm::StringMap<Converter> &converters();

/// Registration helpers, one per file of converters.
void addElementwiseConverters(llvm::StringMap<Converter> &table);
void addTensorConverters(llvm::StringMap<Converter> &table);
void addNNConverters(llvm::StringMap<Converter> &table);
void addLayoutConverters(llvm::StringMap<Converter> &table);
void addMatrixConverters(llvm::StringMap<Converter> &table);
void addEinsumConverter(llvm::StringMap<Converter> &table);
void addRecurrentConverters(llvm::StringMap<Converter> &table);
void addCompositeConverters(llvm::StringMap<Converter> &table);
void addLossConverters(llvm::StringMap<Converter> &table);

/// Normalizes `axis` in [-rank, rank) to [0, rank) or emits an error.
mlir::FailureOr<int64_t> normalizeAxis(const NodeContext &c, int64_t axis,
                                       int64_t rank);

} // namespace pcc::import

#endif // PCC_LIB_IMPORT_IMPORTCONTEXT_H
