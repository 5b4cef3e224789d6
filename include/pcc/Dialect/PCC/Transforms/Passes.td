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

def FuseSiblingGemms : Pass<"pcc-fuse-sibling-gemms", "mlir::func::FuncOp"> {
  let summary = "Join products of one input with separate weights into one product";
  let description = [{
    Models written with separate Q, K and V projections (Megatron's
    layers, T5, BERT) multiply one input by three weights; written with
    a fused QKV projection, by one weight three times as wide. The fused
    form reads the input once and runs one larger GEMM, and is what
    tensor parallelism's layouts (column groups) and the kernels (heads
    read in place from the fused result) are built around. This pass
    gives separate products that form: matmuls of one value by 2-D
    weights (or 2-D transposes of weights) used nowhere else become one
    matmul by a `pcc.weight ... concat` of them, with their bias adds
    (1-D weights) joined alike, and a `pcc.split` hands each reader its
    part. The weights file writes the joined initializers, so nothing is
    copied at run time. Each output column is the same dot product, though
    a BLAS may sum it in another order at another width (last-bit
    differences).

    A training step trains the joined weight as one tensor (one gradient,
    one update) and saves and resumes it, and its optimizer states, as the
    initializers it joins, by their names. Initializers named in `keep`
    (a training step's frozen ones) are left apart.
  }];
  let options = [
    ListOption<"keep", "keep", "std::string",
               "Initializers not to join (not trained)">
  ];
  let dependentDialects = ["::pcc::PCCDialect"];
}

def SplitMergedHeads : Pass<"pcc-split-merged-heads", "mlir::func::FuncOp"> {
  let summary = "Split an axis that merges batch and heads into two axes";
  let description = [{
    nn.MultiheadAttention views its [S, B, E] projections as [S, B*H, D],
    one axis holding batch and heads, where a batch split (dp) and a head
    split (tp) together have no layout and were gathered before each
    attention. Where a reshape's output axis is the product of whole input
    axes and every op reading the values that carry it treats it as a batch
    axis (transposes, pointwise ops, attention, batched matmuls, softmaxes
    over another axis, a GEMM's rows: Hugging Face's Conv1D views [B, S, d]
    as [B*S, d]) up to the reshapes that end the chain, the axis becomes
    its factors; element order, and so every reshape, is unchanged.
  }];
  let dependentDialects = ["::pcc::PCCDialect"];
}

def RaiseCausalMasks : Pass<"pcc-raise-causal-masks", "mlir::func::FuncOp"> {
  let summary = "Replace band-shaped hide masks of pcc.attention by hide_from";
  let description = [{
    On a per-device program: where an attention's `hide` operand is, by its
    definition from constants (a tril/triu constant, Trilu of ones, Not,
    Cast, Equal to 0 or 1, slices and reshapes of those), the band
    `column - row >= k` over its last two dimensions, the operand goes and
    `hide_from = k` says the same, so kernels compute the mask from indices
    and skip the tiles it hides instead of reading Sq x Sk booleans. A mask
    that hides nothing is dropped. Ring attention keeps its operand (its
    rows and key columns are blocks of the sequence). Runs before code
    generation, after partitioning: planning and differentiation see the
    operand.
  }];
  let dependentDialects = ["::pcc::PCCDialect"];
}

def ConvertPrecision : Pass<"pcc-convert-precision", "mlir::ModuleOp"> {
  let summary = "Store the model's float tensors in the precision asked for";
  let description = [{
    `--precision bf16|fp16` on an f32 model (or `fp32|tf32` on a 16-bit
    one): every f32, f16 and bf16 tensor inside the functions takes the
    precision's storage type; weights keep their file's values and convert
    when the weights file is written (`pcc.weight ... from f32`); constants
    convert now, rounding to nearest even. Function arguments and results
    keep their types, with casts at entry and before the return, so the
    model's inputs and outputs (and --check references) stay as exported.
    Arithmetic precision is the target's: the CPU computes in f32 and stores
    16 bits, as torch autocast does. As autocast runs losses in f32, the
    ops that compute a scalar output from the last GEMM on (the loss's
    log-softmax, gather and mean; MSE's difference, square and mean) stay
    f32 when converting to 16 bits. The module records the precision
    (`pcc.precision`) for the planner, which prices tf32 GEMMs apart from
    fp32 ones.
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"fp32\"",
           "fp32, tf32, bf16 or fp16">
  ];
  let dependentDialects = ["::pcc::PCCDialect"];
}

def PadVocabulary : Pass<"pcc-pad-vocabulary", "mlir::func::FuncOp"> {
  let summary = "Pad the vocabulary with zero rows so tensor parallelism splits it";
  let description = [{
    When the rows of the largest embedding table do not divide by
    `tensor-degree`, that table and the heads that produce logits over it
    (tied or not, with their biases) get zero rows up to a multiple of
    `multiple` x `tensor-degree` (Megatron-LM's padding: 128 x tp). The pad
    columns of the logits are hidden (lowest float, or 0 for a sum) before
    every softmax, maximum and sum over the vocabulary and sliced off before
    any other reader, so results are those of the unpadded model. Padded
    weights record their initializer's shape (`unpadded`); the function
    records `pcc.padded_vocabulary = [rows, padded rows, multiple]`.
  }];
  let options = [
    Option<"tensorDegree", "tensor-degree", "int64_t", /*default=*/"1",
           "the tensor-parallel degree the vocabulary must divide by">,
    Option<"multiple", "multiple", "int64_t", /*default=*/"128",
           "pad to a multiple of this times the degree">
  ];
  let dependentDialects = ["::pcc::PCCDialect"];
}

#endif // PCC_DIALECT_PCC_TRANSFORMS_PASSES_TD
