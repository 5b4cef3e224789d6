//===- PCCDialect.td - pcc dialect definition --------------*- tablegen -*-===//
//
// The pcc dialect: tensor-level ops of imported deep-learning models, with
// global (unpartitioned) static shapes and weights held by reference.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_IR_PCCDIALECT_TD
#define PCC_DIALECT_PCC_IR_PCCDIALECT_TD

include "mlir/IR/OpBase.td"
include "pcc/Dialect/PCC/IR/PCCInterfaces.td"

def PCC_Dialect : Dialect {
  let name = "pcc";
  let summary = "Tensor ops of deep-learning models for the pcc compiler";
  let description = [{
    Ops mirror the ONNX operators that `torch.onnx.export` produces, normalized
    for compilation: every operand that ONNX passes as a tensor but that must
    be known at compile time (reshape targets, slice bounds, reduction axes,
    Trilu's `k`) is an attribute here, and every shape is static. Weights
    are `pcc.weight` ops that name an ONNX initializer instead of carrying its
    bytes, so importing a model costs memory proportional to its graph, not to
    its parameters.
  }];
  let cppNamespace = "::pcc";
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Defined with the attribute storage classes (PCCAttrs.cpp).
    void registerAttributes();
  }];
}

// Every op states its work per element (PCCInterfaces.td).
class PCC_Op<string mnemonic, list<Trait> traits = []>
    : Op<PCC_Dialect, mnemonic, !listconcat(traits, [PCC_WorkOpInterface])>;

#endif // PCC_DIALECT_PCC_IR_PCCDIALECT_TD
