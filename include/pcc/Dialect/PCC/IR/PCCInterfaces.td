//===- PCCInterfaces.td - op interfaces of the pcc dialect -*- tablegen -*-===//

#ifndef PCC_DIALECT_PCC_IR_PCCINTERFACES_TD
#define PCC_DIALECT_PCC_IR_PCCINTERFACES_TD

include "mlir/IR/OpBase.td"

def PCC_ContractionOpInterface : OpInterface<"ContractionOpInterface"> {
  let description = [{
    An op that computes GEMMs: `batch` independent products of an M x K and
    a K x N matrix. The planner prices its FLOPs and GEMM efficiency and the
    code generator emits its BLAS calls from the same shape. A convolution
    is its im2col form: per group, (images x output pixels) x (input
    channels x kernel) times (input channels x kernel) x output channels.
  }];
  let cppNamespace = "::pcc";
  let methods = [
    InterfaceMethod<[{
        The GEMMs this op computes when its operands and result have the
        given shapes (its own, or one device's).
      }],
      "::pcc::GemmShape", "gemmShapeFor",
      (ins "::llvm::ArrayRef<::llvm::SmallVector<int64_t>>":$operandShapes,
           "::llvm::ArrayRef<int64_t>":$resultShape)>,
  ];
  let extraSharedClassDeclaration = [{
    /// The GEMMs on the op's own (global) shapes.
    ::pcc::GemmShape gemmShape() {
      ::llvm::SmallVector<::llvm::SmallVector<int64_t>> in;
      for (::mlir::Value v : $_op->getOperands())
        in.emplace_back(::llvm::cast<::mlir::ShapedType>(v.getType()).getShape());
      return $_op.gemmShapeFor(in,
          ::llvm::cast<::mlir::ShapedType>($_op->getResult(0).getType()).getShape());
    }
  }];
}

def PCC_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let description = [{
    An op whose computation is stated as factors (FactorRule.h): which
    operand and result dimensions are the same loop, and which loops are
    reductions. Propagation, partitioning and the planner's layout search
    all apply this one rule (pcc/Sharding/ShardingRules.h). An op without
    the interface (and not one of the layout maps: reshape, transpose,
    slice) computes on whole tensors. The default is the broadcasting
    pointwise rule.
  }];
  let cppNamespace = "::pcc";
  let methods = [
    InterfaceMethod<"The op's factors on its own shapes.",
      "::pcc::FactorRule", "getFactorRule", (ins), [{}], [{
        return ::pcc::pointwiseFactorRule($_op);
      }]>,
  ];
}

def PCC_WorkOpInterface : OpInterface<"WorkOpInterface"> {
  let description = [{
    Arithmetic per result element, for the planner's compute time of an op
    that is not a contraction (contractions state their GEMMs instead):
    1 by default, a few for transcendental activations and normalisations,
    0 for ops that only move data. Every pcc op has it.
  }];
  let cppNamespace = "::pcc";
  let methods = [
    InterfaceMethod<"Floating-point operations per result element.",
      "double", "getFlopsPerElement", (ins), [{}], [{ return 1.0; }]>,
  ];
}

// Overrides the per-element work of an op (WorkOpInterface).
class PCC_FlopsPerElement<string n> {
  code extraClassDeclaration = "double getFlopsPerElement() { return " # n # "; }";
}

#endif // PCC_DIALECT_PCC_IR_PCCINTERFACES_TD
