//===- Passes.td - pcc dialect passes ----------------------*- tablegen -*-===//

#ifndef PCC_DIALECT_PCC_TRANSFORMS_PASSES_TD
#define PCC_DIALECT_PCC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RaiseComposites : Pass<"pcc-raise-composites", "mlir::func::FuncOp"> {
  let summary = "Recognize decomposed GELU and LayerNorm and raise them to single ops";
  let description = [{
    torch.onnx.export (torch 1.13) writes GELU as `x * 0.5 * (1 + erf(x / sqrt 2))`
    at every opset, and LayerNorm as a ReduceMean/Sub/Pow/Sqrt/Div chain
    before opset 17. This pass rewrites those chains into `pcc.gelu` and
    `pcc.layer_norm`, so that later passes see one op with one sharding rule
    and code generation emits one fused kernel.
  }];
  let dependentDialects = ["::pcc::PCCDialect"];
}

#endif // PCC_DIALECT_PCC_TRANSFORMS_PASSES_TD
