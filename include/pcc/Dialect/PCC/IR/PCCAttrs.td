//===- PCCAttrs.td - pcc dialect attributes ----------------*- tablegen -*-===//

#ifndef PCC_DIALECT_PCC_IR_PCCATTRS_TD
#define PCC_DIALECT_PCC_IR_PCCATTRS_TD

include "pcc/Dialect/PCC/IR/PCCDialect.td"
include "mlir/IR/AttrTypeBase.td"

class PCC_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<PCC_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def PCC_ExternalDataAttr : PCC_Attr<"ExternalData", "external"> {
  let summary = "Location of a weight stored outside the ONNX model file";
  let description = [{
    Where the bytes of an ONNX initializer with `data_location = EXTERNAL`
    live: a file path relative to the model's directory, a byte offset and a
    byte length. The file need not exist to import or plan a model; only code
    generation reads it.

    Example: `#pcc.external<"weights.bin", offset = 0, length = 4096>`
  }];
  let parameters = (ins StringRefParameter<>:$location, "int64_t":$offset,
                        "int64_t":$length);
  let assemblyFormat = "`<` $location `,` `offset` `=` $offset `,` `length` `=` $length `>`";
}

def PCC_ShardingAttr : PCC_Attr<"Sharding", "sharding"> {
  let summary = "How a tensor is laid out over a device grid";
  let description = [{
    One entry per tensor dimension lists the axes of the `shard.grid` named
    by `grid` that split that dimension, major axis first: the device with
    in-group index `r` holds block `r` of the dimension. A `/G` suffix says
    the dimension is made of `G` equal contiguous groups and each group is
    split separately (the fused Q|K|V columns of an attention projection are
    3 groups: every device holds its heads of Q, of K and of V). `partial`
    lists axes over which each device holds a partial sum: the tensor is the
    sum of the devices' values along those axes (the output of a row-parallel
    linear layer before its all-reduce).

    The representation covers every strategy pcc plans: data parallelism
    splits the batch dimension, Megatron 1D tensor parallelism splits weight
    columns or rows over one axis, 2D/2.5D/3D splits use several axes on
    several dimensions, sequence parallelism splits the sequence dimension.

    Examples:
    ```
    #pcc.sharding<@mesh, [[0], [], []]>              // batch split over axis 0
    #pcc.sharding<@mesh, [[], [1]/3]>                // fused QKV columns over axis 1
    #pcc.sharding<@mesh, [[0], [], []], partial = [1]>
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$grid,
                        "::mlir::ArrayAttr":$dims,
                        ArrayRefParameter<"int64_t">:$partial);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def PCC_PlanAttr : PCC_Attr<"Plan", "plan"> {
  let summary = "How a model is spread over devices";
  let description = [{
    The one plan object, carried on the module as `pcc.plan` and applied by
    `pcc-apply-plan`. `axes` are the mesh axes by role, in pcc's one rank
    order (pp, dp, sp, tp: ranks are row-major over them) and `sizes` their
    device counts; roles not listed have size 1. `tensor_mode` is the tensor
    scheme (1d Megatron; 2d, 2.5d and 3d as in Colossal-AI);
    `tensor_layout` says where the per-op layouts on the tensor axis come
    from: `megatron` (column- then row-parallel linear layers),
    `megatron-sp` (the same with sequence parallelism between them) or `planned`
    (the planner's exact search, recorded per op as
    `pcc.planned_sharding`). `sequence_mode` is how an sp axis runs
    attention: `ulysses` (all-to-all to a head split) or `ring` (key/value
    blocks passed around the sp group). `tensor_depth` is 2.5D's depth d
    (the tp axis is a d x q x q grid). `microbatches`, `train` (a training step rather
    than inference), `recompute` (activation recompute: `none`, `full` or
    `selective`) and `zero` (a
    training step's ZeRO stage over dp: 1 and 2 store optimizer states
    split over dp, 3 the parameters too), `virtual_stages` (interleaved
    1F1B: each pp device runs that many chunks of layers, pp x
    virtual_stages stages in all) and `zero_bubble` (a pipelined training
    step whose backward runs as the input's gradient and the weights'
    apart, scheduled ZB-H1) complete it. The planner makes it, or pcc builds it from forced
    flags; plan.json is written from it.

    Example:
    `#pcc.plan<axes = ["dp", "tp"], sizes = [2, 4], tensor_mode = "1d", tensor_layout = "planned", microbatches = 1, train = false>`
  }];
  let parameters = (ins "::mlir::ArrayAttr":$axes,
                        "::mlir::DenseI64ArrayAttr":$sizes,
                        StringRefParameter<>:$tensor_mode,
                        StringRefParameter<>:$tensor_layout,
                        StringRefParameter<"sequence scheme", [{"ulysses"}]>:$sequence_mode,
                        DefaultValuedParameter<"int64_t", "1">:$tensor_depth,
                        "int64_t":$microbatches,
                        "bool":$train,
                        StringRefParameter<"activation recompute", [{"none"}]>:$recompute,
                        DefaultValuedParameter<"int64_t", "0">:$zero,
                        DefaultValuedParameter<"int64_t", "1">:$virtual_stages,
                        DefaultValuedParameter<"bool", "false">:$zero_bubble);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // PCC_DIALECT_PCC_IR_PCCATTRS_TD
