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

#endif // PCC_DIALECT_PCC_IR_PCCINTERFACES_TD
