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

def PCC_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let description = [{
    An op that carries a gradient: given the gradient of a scalar loss with
    respect to each result (null where a result does not reach the loss),
    builds pcc ops computing the gradient with respect to each operand
    (null where an operand has none: integer operands, masks, constants of
    a formula). The rule is stated beside its op (PCCGradients.cpp) on the
    op's own operands and results, so a training step is just more pcc ops
    that plan, partition and generate code like any other
    (pcc/Autodiff/TrainStep.h builds it).
  }];
  let cppNamespace = "::pcc";
  let methods = [
    InterfaceMethod<[{
        Appends one gradient per operand (null for none) to `operandGrads`;
        fails (after a diagnostic at the op) when the gradient cannot be
        stated for these attributes.
      }],
      "::mlir::LogicalResult", "buildGradients",
      (ins "::pcc::GradientBuilder &":$g,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // PCC_DIALECT_PCC_IR_PCCINTERFACES_TD
