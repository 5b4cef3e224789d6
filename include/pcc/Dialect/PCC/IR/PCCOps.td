//===- PCCOps.td - pcc dialect operations ------------------*- tablegen -*-===//
//
// Every op infers its result types from its operands and attributes
// (InferTypeOpAdaptor), so the generic verifier also checks that the types
// written in the IR agree with that inference.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DIALECT_PCC_IR_PCCOPS_TD
#define PCC_DIALECT_PCC_IR_PCCOPS_TD

include "pcc/Dialect/PCC/IR/PCCDialect.td"
include "pcc/Dialect/PCC/IR/PCCAttrs.td"
include "pcc/Dialect/PCC/IR/PCCInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Op semantics (PCCTraits.h): what the planner, partitioner and code
// generator ask an op instead of listing op kinds themselves.
//===----------------------------------------------------------------------===//

class PCC_Trait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::pcc::OpTrait";
}
// Each result element depends only on the operand elements at the same
// index after numpy broadcasting: the op fuses into its neighbours' loop and
// shards dimension by dimension (the default factor rule).
def PCC_PointwiseTrait : PCC_Trait<"Pointwise">;
def PCC_Pointwise : TraitList<[PCC_PointwiseTrait, PCC_ShardingRuleOpInterface]>;
// The op states its factors (FactorRule.h) in PCCShardingRules.cpp.
def PCC_HasFactorRule : DeclareOpInterfaceMethods<PCC_ShardingRuleOpInterface,
                                                  ["getFactorRule"]>;
// How partial sums (a value split into addends over mesh axes) pass through
// an op without being summed first:
// f(sum x) = sum f(x) for its one operand (neg, expand, split);
def PCC_LinearUnary : PCC_Trait<"LinearUnary">;
// linear in all operands together when each is partial over the same axes
// (add, sub, concat);
def PCC_LinearAllSame : PCC_Trait<"LinearAllSame">;
// linear in any one operand while the others are whole (mul);
def PCC_LinearInOne : PCC_Trait<"LinearInOne">;
// linear in its first operand while the second is whole (div).
def PCC_LinearInNumerator : PCC_Trait<"LinearInNumerator">;

// The op states its gradient (PCCGradients.cpp): training steps differentiate
// through it.
def PCC_Differentiable
    : DeclareOpInterfaceMethods<PCC_GradientOpInterface>;

def PCC_Tensor : StaticShapeTensorOf<[AnyType]>;

// A signless i64 attribute read back as int64_t: axes, offsets and diagonal
// indices may be negative, and ODS's I64Attr returns uint64_t.
def PCC_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                               "64-bit integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}
def PCC_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
def PCC_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def PCC_BoolTensor : StaticShapeTensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Values: constants and weights
//===----------------------------------------------------------------------===//

def PCC_ConstantOp : PCC_Op<"constant",
    [ConstantLike, Pure, InferTypeOpAdaptor]> {
  let summary = "Small literal tensor";
  let description = [{
    A tensor whose value is known at compile time and small enough to keep in
    the IR: shape arithmetic, scalars, masks. Large parameters are
    `pcc.weight` instead.

    Example: `%0 = pcc.constant dense<[2, 16]> : tensor<2xi64>`
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def PCC_WeightOp : PCC_Op<"weight", [Pure]> {
  let summary = "Model parameter, held by reference";
  let description = [{
    Names an ONNX initializer. Its bytes stay in the model file (or in the
    external data file given by `external`) until code generation writes the
    weights file, so the IR's size does not grow with the model's. With
    `from`, the initializer holds another float type (a model converted by
    --precision) and the weights file holds its values rounded to nearest even.
    With `zeros`, it is not in the model: a training step's state (optimizer
    moments, the step count) that starts at zero. With `unpadded`, the
    initializer has that (smaller) shape and the rest is zeros: a vocabulary
    padded so tensor parallelism splits it (pcc-pad-vocabulary); a saved
    training run holds the unpadded part. With `concat`, it is the named
    initializers, of `sizes` along `axis`, joined (sibling products fused
    into one by pcc-fuse-sibling-gemms); `name` is only its label then, and
    a training run saves and resumes the parts by their names. With both
    `concat` and `zeros`, it is a training state of such a weight, saved
    as the parts' states.

    Example:
    ```mlir
    %w = pcc.weight "fc1.weight" : tensor<128x64xf32>
    %e = pcc.weight "wte" external <"gpt.bin", offset = 0, length = 65536> : tensor<128x128xf32>
    %h = pcc.weight "fc2.weight" from f32 : tensor<64x64xbf16>
    %m = pcc.weight "fc1.weight.exp_avg" zeros : tensor<128x64xf32>
    %v = pcc.weight "wte" unpadded [50257, 64] : tensor<50304x64xf32>
    %f = pcc.weight "q+k" concat ["q", "k"] axis 1 sizes [64, 64] : tensor<64x128xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<PCC_ExternalDataAttr>:$external,
                       OptionalAttr<TypeAttr>:$source_type, UnitAttr:$zeros,
                       OptionalAttr<DenseI64ArrayAttr>:$unpadded,
                       OptionalAttr<StrArrayAttr>:$parts,
                       OptionalAttr<I64Attr>:$parts_axis,
                       OptionalAttr<DenseI64ArrayAttr>:$part_sizes);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = [{
    $name (`external` $external^)? (`from` $source_type^)? (`zeros` $zeros^)?
    (`unpadded` $unpadded^)? (`concat` $parts^ `axis` $parts_axis `sizes` $part_sizes)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def PCC_AssignOp : PCC_Op<"assign", [MemoryEffects<[MemWrite]>,
                                      AllTypesMatch<["target", "value"]>]>,
    PCC_FlopsPerElement<"0"> {
  let summary = "Stores a training step's new value of a weight";
  let description = [{
    Writes `value` into the storage of `target`, a `pcc.weight`: the next
    step reads the new value. A training step ends with one per trained
    parameter and optimizer state, after every read of them. Partitioning
    gives `value` the layout the weight is stored in (summing partial
    gradients there), and each device writes its own block.

    Example: `pcc.assign %w, %w_next : tensor<64x64xf32>`
  }];
  let arguments = (ins PCC_Tensor:$target, PCC_Tensor:$value);
  let assemblyFormat = "$target `,` $value attr-dict `:` type($target)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class PCC_UnaryOp<string mnemonic, string desc, Type type = PCC_FloatTensor,
                  list<Trait> traits = []>
    : PCC_Op<mnemonic, !listconcat(traits,
        [Pure, Elementwise, PCC_Pointwise, InferTypeOpAdaptor,
         PCC_Differentiable])> {
  let summary = "Elementwise " # desc;
  let arguments = (ins type:$input);
  let results = (outs type:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def PCC_NegOp : PCC_UnaryOp<"neg", "negation", PCC_Tensor, [PCC_LinearUnary]> {
  let hasFolder = 1;
}
def PCC_AbsOp : PCC_UnaryOp<"abs", "absolute value", PCC_Tensor>;
def PCC_ExpOp : PCC_UnaryOp<"exp", "e^x">, PCC_FlopsPerElement<"8">;
def PCC_LogOp : PCC_UnaryOp<"log", "natural logarithm">,
    PCC_FlopsPerElement<"8">;
def PCC_SqrtOp : PCC_UnaryOp<"sqrt", "square root">,
    PCC_FlopsPerElement<"8"> { let hasFolder = 1; }
def PCC_ReciprocalOp : PCC_UnaryOp<"reciprocal", "1/x">;
def PCC_FloorOp : PCC_UnaryOp<"floor", "floor">;
def PCC_CeilOp : PCC_UnaryOp<"ceil", "ceiling">;
def PCC_TanhOp : PCC_UnaryOp<"tanh", "hyperbolic tangent">,
    PCC_FlopsPerElement<"8">;
def PCC_ErfOp : PCC_UnaryOp<"erf", "error function">, PCC_FlopsPerElement<"8">;
def PCC_SigmoidOp : PCC_UnaryOp<"sigmoid", "logistic sigmoid 1/(1+e^-x)">,
    PCC_FlopsPerElement<"8">;
def PCC_ReluOp : PCC_UnaryOp<"relu", "max(x, 0)", PCC_Tensor>;
def PCC_SinOp : PCC_UnaryOp<"sin", "sine">;
def PCC_CosOp : PCC_UnaryOp<"cos", "cosine">;
def PCC_NotOp : PCC_UnaryOp<"not", "logical not", PCC_BoolTensor> { let hasFolder = 1; }

def PCC_GeluOp : PCC_UnaryOp<"gelu", "GELU">, PCC_FlopsPerElement<"8"> {
  let description = [{
    `x * Phi(x)`; with `approximate = "tanh"` the tanh approximation
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
  }];
  let arguments = (ins PCC_FloatTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let hasVerifier = 1;
}

def PCC_LeakyReluOp : PCC_UnaryOp<"leaky_relu", "x < 0 ? alpha x : x"> {
  let arguments = (ins PCC_FloatTensor:$input, F32Attr:$alpha);
}

def PCC_ClipOp : PCC_UnaryOp<"clip", "clamp to [min, max]"> {
  let arguments = (ins PCC_FloatTensor:$input, F32Attr:$min, F32Attr:$max);
  let hasVerifier = 1;
}

def PCC_CastOp : PCC_Op<"cast", [Pure, Elementwise, PCC_Pointwise,
                                  InferTypeOpAdaptor, PCC_Differentiable]>,
    PCC_FlopsPerElement<"0"> {
  let summary = "Elementwise conversion to another element type";
  let description = [{
    Converts with ONNX Cast semantics: float to integer truncates toward
    zero, any nonzero value to bool is true.

    Example: `%1 = pcc.cast %0 {to = f32} : tensor<4xi64> -> tensor<4xf32>`
  }];
  let arguments = (ins PCC_Tensor:$input, TypeAttr:$to);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

class PCC_BinaryOp<string mnemonic, string desc, Type type = PCC_Tensor,
                   list<Trait> traits = []>
    : PCC_Op<mnemonic, !listconcat(traits,
                                   [Pure, PCC_Pointwise, InferTypeOpAdaptor,
                                    PCC_Differentiable])> {
  let summary = "Elementwise " # desc # " with numpy broadcasting";
  let arguments = (ins type:$lhs, type:$rhs);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def PCC_AddOp : PCC_BinaryOp<"add", "addition", PCC_Tensor,
                             [Commutative, PCC_LinearAllSame]>;
def PCC_SubOp : PCC_BinaryOp<"sub", "subtraction", PCC_Tensor,
                             [PCC_LinearAllSame]>;
def PCC_MulOp : PCC_BinaryOp<"mul", "multiplication", PCC_Tensor,
                             [Commutative, PCC_LinearInOne]>;
def PCC_DivOp : PCC_BinaryOp<"div", "division (integers truncate)", PCC_Tensor,
                             [PCC_LinearInNumerator]>;
def PCC_PowOp : PCC_BinaryOp<"pow", "power">, PCC_FlopsPerElement<"8">;
def PCC_MaxOp : PCC_BinaryOp<"max", "maximum", PCC_Tensor, [Commutative]>;
def PCC_MinOp : PCC_BinaryOp<"min", "minimum", PCC_Tensor, [Commutative]>;
def PCC_EqualOp : PCC_BinaryOp<"equal", "equality test", PCC_Tensor, [Commutative]>;
def PCC_LessOp : PCC_BinaryOp<"less", "less-than test">;
def PCC_LessEqualOp : PCC_BinaryOp<"less_equal", "less-or-equal test">;
def PCC_GreaterOp : PCC_BinaryOp<"greater", "greater-than test">;
def PCC_GreaterEqualOp : PCC_BinaryOp<"greater_equal", "greater-or-equal test">;
def PCC_AndOp : PCC_BinaryOp<"and", "logical and", PCC_BoolTensor, [Commutative]>;
def PCC_OrOp : PCC_BinaryOp<"or", "logical or", PCC_BoolTensor, [Commutative]>;
def PCC_XorOp : PCC_BinaryOp<"xor", "logical xor", PCC_BoolTensor, [Commutative]>;

def PCC_WhereOp : PCC_Op<"where", [PCC_Differentiable, Pure, PCC_Pointwise, InferTypeOpAdaptor]> {
  let summary = "Elementwise select with numpy broadcasting";
  let description = [{
    `cond ? lhs : rhs` elementwise, all three broadcast to a common shape.

    Example: `%r = pcc.where %c, %a, %b : (tensor<16x16xi1>, tensor<f32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>`
  }];
  let arguments = (ins PCC_BoolTensor:$condition, PCC_Tensor:$lhs, PCC_Tensor:$rhs);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and convolutions
//===----------------------------------------------------------------------===//

def PCC_MatMulOp : PCC_Op<"matmul", [PCC_Differentiable, PCC_HasFactorRule, Pure, InferTypeOpAdaptorWithIsCompatible,
    DeclareOpInterfaceMethods<PCC_ContractionOpInterface>]> {
  let summary = "Batched matrix product with numpy semantics";
  let description = [{
    `numpy.matmul`: rank-1 operands are promoted to matrices and the
    promoted dimension dropped from the result; batch dimensions broadcast.

    `summa_axes = [row, col]` (set by pcc-partition, on the per-device
    program of a 2D / 2.5D plan): this is one device's part of a SUMMA
    product over a q x q grid. The left operand holds block (i, k) of its
    rows x contraction, the 2-D right operand block (k, j); in q steps the
    owners of column k broadcast their left blocks along the grid rows and
    the owners of row k their right blocks along the columns, and every
    device accumulates its (i, j) block of the result.

    Example: `%y = pcc.matmul %x, %w : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>`
  }];
  let arguments = (ins PCC_Tensor:$lhs, PCC_Tensor:$rhs,
                       OptionalAttr<DenseI64ArrayAttr>:$summa_axes);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def PCC_GemmOp : PCC_Op<"gemm", [PCC_Differentiable, PCC_HasFactorRule, Pure, InferTypeOpAdaptorWithIsCompatible,
    DeclareOpInterfaceMethods<PCC_ContractionOpInterface>]> {
  let summary = "General matrix multiply: alpha op(A) op(B) + beta C";
  let description = [{
    ONNX Gemm on rank-2 operands; `C` is optional and broadcasts to the
    result. PyTorch exports `nn.Linear` on 2-D input as Gemm with `transB`.
    An operand of rank > 2 is the matrix of its rows (its leading
    dimensions) by its last dimension, read in place: without `transA`, A
    [R..., k] gives a result [R..., n] (B of rank 2); with `transA` (and not
    `transB`), A [R..., m] and B [R..., n] contract their rows into [m, n],
    a weight's gradient over every token. Keeping the rows apart, rather
    than reshaping them into one dimension, lets each stay split over its
    own mesh axes (a batch over dp, a sequence over sp). `C` then
    broadcasts along n only.
    `summa_axes`: one device's part of a SUMMA product, as for pcc.matmul.

    Example: `%y = pcc.gemm %x, %w, %b {transB = true} : (tensor<4x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<4x128xf32>`
  }];
  let arguments = (ins PCC_FloatTensor:$a, PCC_FloatTensor:$b,
                       Optional<PCC_FloatTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0f">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0f">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$transA,
                       DefaultValuedAttr<BoolAttr, "false">:$transB,
                       OptionalAttr<DenseI64ArrayAttr>:$summa_axes);
  let results = (outs PCC_FloatTensor:$result);
  let assemblyFormat = "$a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)";
}

def PCC_ConvOp : PCC_Op<"conv", [PCC_Differentiable, PCC_HasFactorRule, Pure, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<PCC_ContractionOpInterface>]> {
  let summary = "N-D grouped convolution (NCHW)";
  let description = [{
    ONNX Conv with explicit padding: `pads` holds the begin pads of every
    spatial axis followed by the end pads. `auto_pad` is resolved on import.

    Example: `%y = pcc.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<2x8x16x16xf32>`
  }];
  let arguments = (ins PCC_FloatTensor:$input, PCC_FloatTensor:$filter,
                       Optional<PCC_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, PCC_I64Attr:$group);
  let results = (outs PCC_FloatTensor:$result);
  let assemblyFormat = "$input `,` $filter (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

class PCC_PoolOp<string mnemonic, string desc> : PCC_Op<mnemonic, [PCC_Differentiable,
                                                                   PCC_HasFactorRule,
                                                                   Pure, InferTypeOpAdaptor]> {
  let summary = desc # " pooling over the spatial axes of an NCHW tensor";
  let arguments = (ins PCC_FloatTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs PCC_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def PCC_MaxPoolOp : PCC_PoolOp<"max_pool", "Max">;
def PCC_AveragePoolOp : PCC_PoolOp<"average_pool", "Average">;

def PCC_GlobalAveragePoolOp : PCC_Op<"global_average_pool", [PCC_Differentiable, PCC_HasFactorRule,
                                                             Pure, InferTypeOpAdaptor]> {
  let summary = "Mean over all spatial axes, keeping them as size 1";
  let arguments = (ins PCC_FloatTensor:$input);
  let results = (outs PCC_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Normalizations and reductions
//===----------------------------------------------------------------------===//

class PCC_SoftmaxLikeOp<string mnemonic, string desc>
    : PCC_Op<mnemonic, [PCC_Differentiable, PCC_HasFactorRule, Pure, InferTypeOpAdaptor]>,
    PCC_FlopsPerElement<"5"> {
  let summary = desc # " along one axis";
  let description = [{
    `stat_axes` (per-device program): the axis is split over these mesh
    axes, each device holding a block of every line; the lines' statistics
    (maximum, sum of exponentials) are gathered over them, so the result
    keeps the input's layout (Megatron's vocabulary-parallel
    cross-entropy, without the logits gathered).
  }];
  let arguments = (ins PCC_FloatTensor:$input, PCC_I64Attr:$axis,
                       OptionalAttr<DenseI64ArrayAttr>:$stat_axes);
  let results = (outs PCC_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def PCC_SoftmaxOp : PCC_SoftmaxLikeOp<"softmax", "Softmax">;
def PCC_LogSoftmaxOp : PCC_SoftmaxLikeOp<"log_softmax", "Log of softmax (computed stably)">;

def PCC_AttentionOp : PCC_Op<"attention", [PCC_Differentiable, PCC_HasFactorRule, Pure,
    InferTypeOpAdaptor, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<PCC_ContractionOpInterface>]> {
  let summary = "Scaled dot-product attention, masks included";
  let description = [{
    `softmax(S) V` over the last axis, with the scores
    `S = Q Kt` times `scale` (divided by it with `divide`), then set to
    `fill` where `hide` is true, then plus `mask`. Q is `[..., Sq, D]`,
    K `[..., Sk, D]`, V `[..., Sk, Dv]` with equal leading (batch, head)
    dimensions; `mask` and `hide` broadcast to `[..., Sq, Sk]`. The result
    is `[..., Sq, Dv]`. Raised from the Q Kt, scale, mask, softmax, V chain
    exporters write (RaiseComposites.cpp), so each value is what that chain
    computes, up to the order of additions; a kernel computes it a block of
    keys at a time with a running maximum and sum, never holding the whole
    Sq x Sk scores.

    `ring_axes` (set by pcc-partition, on the per-device program): K, V and
    the key columns of `mask` and `hide` hold the same block of the sequence
    that Q does, split over these grid axes; the key blocks travel around
    the devices of the group and each device folds every block into its
    rows (ring attention). Without it K and V hold every key.

    `hide_from` (set by pcc-raise-causal-masks, on the per-device program):
    instead of a `hide` operand, the key in column `j` is hidden from query
    row `i` where `j - i >= hide_from` (a causal mask is `hide_from = 1`),
    so kernels compute the mask from indices and skip the tiles it hides.

    `seq_first` (set on a GPU rank's program before code generation, where
    the tensor-core kernel reads heads in place): Q, K, V and the result
    are `[B, S, H, D]`, the sequence before the heads, as the projections
    leave them, instead of `[B, H, S, D]`; masks still broadcast to the
    scores `[B, H, Sq, Sk]` (an additive one may be f32: kernels read it so).

    `head_offsets` (with `seq_first`, set where Q, K and V are column blocks
    of one projection, such as a fused QKV): `[q, k, v]`, the first of the
    result's H heads in each operand, whose head axis may be longer; the
    kernel reads the heads in place, so the projection is not split.

    Example: `%o = pcc.attention %q, %k, %v hide %h {scale = 0.125 : f64, fill = 0xFFF0000000000000 : f64} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<16x16xi1>) -> tensor<2x4x16x8xf32>`
  }];
  let arguments = (ins PCC_FloatTensor:$query, PCC_FloatTensor:$key,
                       PCC_FloatTensor:$value,
                       Optional<PCC_FloatTensor>:$mask,
                       Optional<PCC_BoolTensor>:$hide,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale,
                       UnitAttr:$divide,
                       DefaultValuedAttr<F64Attr, "0.0">:$fill,
                       OptionalAttr<DenseI64ArrayAttr>:$ring_axes,
                       OptionalAttr<I64Attr>:$hide_from,
                       UnitAttr:$seq_first,
                       OptionalAttr<DenseI64ArrayAttr>:$head_offsets);
  let results = (outs PCC_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? (`hide` $hide^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def PCC_LayerNormOp : PCC_Op<"layer_norm", [PCC_Differentiable, PCC_HasFactorRule, Pure, InferTypeOpAdaptor]>,
    PCC_FlopsPerElement<"8"> {
  let summary = "Layer normalization over the trailing axes from `axis`";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias`, statistics over axes
    `axis..rank-1`; `scale` and `bias` have the shape of those axes.
    `stat_axes` (per-device program of a 2D / 2.5D plan): the normalized
    (last) axis is split over these grid axes; each row's sums are
    all-reduced over them.

    Example: `%y = pcc.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>`
  }];
  let arguments = (ins PCC_FloatTensor:$input, PCC_FloatTensor:$scale,
                       Optional<PCC_FloatTensor>:$bias, PCC_I64Attr:$axis,
                       F32Attr:$epsilon,
                       OptionalAttr<DenseI64ArrayAttr>:$stat_axes);
  let results = (outs PCC_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def PCC_BatchNormOp : PCC_Op<"batch_norm", [PCC_HasFactorRule,
                                            PCC_Differentiable,
                                            Pure, InferTypeOpAdaptor]> {
  let summary = "Batch normalization with running statistics (inference)";
  let description = [{
    `(input - mean) / sqrt(variance + epsilon) * scale + bias` per channel
    (axis 1). Training through it (a model exported in eval mode) trains
    `scale` and `bias`; the running statistics are buffers, never trained.
    A batch's own statistics (ONNX's training_mode) import as formulas.
  }];
  let arguments = (ins PCC_FloatTensor:$input, PCC_FloatTensor:$scale,
                       PCC_FloatTensor:$bias, PCC_FloatTensor:$mean,
                       PCC_FloatTensor:$variance, F32Attr:$epsilon);
  let results = (outs PCC_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def PCC_DropoutOp : PCC_Op<"dropout", [PCC_HasFactorRule, PCC_Differentiable,
                                       PCC_LinearInNumerator, Pure,
                                       InferTypeOpAdaptor]>,
    PCC_FlopsPerElement<"4"> {
  let summary = "Inverted dropout by a counter-based generator";
  let description = [{
    `input * keep / (1 - ratio)`, where `keep` is 0 for the elements
    dropped: element `i` (its row-major index in the whole tensor) is
    dropped when the top 24 bits of a hash of (`seed`, `stream`, `step`,
    `i`) fall below `ratio` times 2^24. The mask depends on the element's
    index in the whole tensor, not on the device computing it, so every
    parallel layout (and a recomputed forward, and the backward) drops the
    same elements as one device; `step` (a training step's counter, 0 when
    absent) draws a new mask each step, and `stream` one per dropout
    (pcc's importer: a hash of the ONNX node's name). The gradient is the
    same op on the output's gradient.

    Example: `%y = pcc.dropout %x step %t {ratio = 1.000000e-01 : f64, seed = 0 : i64, stream = 42 : i64} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>`
  }];
  let arguments = (ins PCC_FloatTensor:$input, Optional<PCC_FloatTensor>:$step,
                       F64Attr:$ratio, PCC_I64Attr:$seed, PCC_I64Attr:$stream);
  let results = (outs PCC_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`step` $step^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

class PCC_ReduceOp<string mnemonic, string desc, Type type = PCC_Tensor>
    : PCC_Op<mnemonic, [PCC_Differentiable, PCC_HasFactorRule, Pure, InferTypeOpAdaptor]> {
  let summary = "Reduction by " # desc # " over `axes`";
  let description = [{
    Reduces over the sorted, non-negative `axes`; with `keepdims` the reduced
    axes stay as size 1. An empty `axes` reduces nothing (ONNX's
    `noop_with_empty_axes`); the importer expands ONNX's default of all axes.
  }];
  let arguments = (ins type:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs type:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def PCC_ReduceSumOp : PCC_ReduceOp<"reduce_sum", "sum">;
def PCC_ReduceMeanOp : PCC_ReduceOp<"reduce_mean", "mean", PCC_FloatTensor>;
def PCC_ReduceMaxOp : PCC_ReduceOp<"reduce_max", "maximum">;
def PCC_ReduceMinOp : PCC_ReduceOp<"reduce_min", "minimum">;
def PCC_ReduceProdOp : PCC_ReduceOp<"reduce_prod", "product">;

class PCC_ArgReduceOp<string mnemonic, string desc>
    : PCC_Op<mnemonic, [PCC_HasFactorRule, Pure, InferTypeOpAdaptor]> {
  let summary = "Index of the " # desc # " along `axis` (first on ties)";
  let arguments = (ins PCC_Tensor:$input, PCC_I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def PCC_ArgMaxOp : PCC_ArgReduceOp<"argmax", "maximum">;
def PCC_ArgMinOp : PCC_ArgReduceOp<"argmin", "minimum">;

def PCC_TopKOp
    : PCC_Op<"topk", [PCC_HasFactorRule, Pure, InferTypeOpAdaptor]> {
  let summary = "The k largest (or smallest) elements along `axis`";
  let description = [{
    `values` holds the `k` largest elements of each line along `axis` (the
    smallest with `largest = false`) in that order, `indices` their
    positions on the line. Equal elements come in index order, and NaN
    counts as larger than every number (as torch.topk has it); ONNX's
    `sorted = 0` leaves the order free, so it is always sorted.
  }];
  let arguments = (ins PCC_Tensor:$input, PCC_I64Attr:$k, PCC_I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs PCC_Tensor:$values,
                      StaticShapeTensorOf<[I64]>:$indices);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def PCC_ReshapeOp : PCC_Op<"reshape", [PCC_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "Reinterpret a tensor with a new static shape";
  let description = [{
    Row-major reshape to `shape`, which has no -1 or 0 entries (the importer
    resolves ONNX's). ONNX Flatten, Squeeze and Unsqueeze import as reshape.

    Example: `%y = pcc.reshape %x {shape = array<i64: 2, 16, 4, 16>} : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>`
  }];
  let arguments = (ins PCC_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def PCC_TransposeOp : PCC_Op<"transpose", [PCC_Differentiable, Pure, InferTypeOpAdaptor]>,
    PCC_FlopsPerElement<"0"> {
  let summary = "Permute axes: result dim i is input dim perm[i]";
  let arguments = (ins PCC_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def PCC_ExpandOp : PCC_Op<"expand", [PCC_Differentiable, Pure, PCC_Pointwise, PCC_LinearUnary,
                                      InferTypeOpAdaptor]>,
    PCC_FlopsPerElement<"0"> {
  let summary = "Broadcast to a shape (numpy rules with `shape`)";
  let description = [{
    The result shape is the broadcast of the input shape with `shape`, as in
    ONNX Expand.
  }];
  let arguments = (ins PCC_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def PCC_ConcatOp : PCC_Op<"concat", [PCC_Differentiable, PCC_HasFactorRule, Pure, PCC_LinearAllSame,
                                      InferTypeOpAdaptor]>,
    PCC_FlopsPerElement<"0"> {
  let summary = "Join tensors along `axis`";
  let arguments = (ins Variadic<PCC_Tensor>:$inputs, PCC_I64Attr:$axis);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def PCC_SplitOp : PCC_Op<"split", [PCC_Differentiable, PCC_HasFactorRule, Pure, PCC_LinearUnary, InferTypeOpAdaptor]>,
    PCC_FlopsPerElement<"0"> {
  let summary = "Cut a tensor into consecutive pieces of `sizes` along `axis`";
  let arguments = (ins PCC_Tensor:$input, PCC_I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<PCC_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def PCC_SliceOp : PCC_Op<"slice", [PCC_Differentiable, Pure, InferTypeOpAdaptor]>,
    PCC_FlopsPerElement<"0"> {
  let summary = "Strided slice with one (start, step) per input axis";
  let description = [{
    Result dim i has `sizes[i]` elements, taken from `starts[i]` every
    `steps[i]` (steps may be negative). The importer clamps ONNX's bounds
    and fills in axes ONNX leaves out.
  }];
  let arguments = (ins PCC_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$sizes, DenseI64ArrayAttr:$steps);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def PCC_ScatterNDOp
    : PCC_Op<"scatter_nd", [PCC_HasFactorRule, Pure, InferTypeOpAdaptor]>,
      PCC_FlopsPerElement<"0"> {
  let summary = "`data` with the slices `indices` address replaced or combined";
  let description = [{
    ONNX ScatterND: each k-tuple on the last axis of `indices` addresses a
    slice `data[i0, ..., ik-1]` (shape `data.shape[k:]`), which the matching
    slice of `updates` (shape `indices.shape[:-1] + data.shape[k:]`)
    replaces (`reduction = "none"`), adds to or multiplies. Tuples apply in
    order, so a repeated tuple's last update wins. Negative entries count
    from the end of their axis; an entry outside it stops the run with an
    error. With `batch_dims = b`, the first b dimensions of data, indices
    and updates are batch dimensions: each batch entry scatters into its
    own block of data (GatherND's batch_dims; the importer finds it in
    torch's constant tuples, whose first entry is the batch position), so
    a batch split divides the op.
  }];
  let arguments = (ins PCC_Tensor:$data, StaticShapeTensorOf<[I64]>:$indices,
                       PCC_Tensor:$updates,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `,` $updates attr-dict `:` functional-type(operands, results)";
}

def PCC_GatherOp : PCC_Op<"gather", [PCC_Differentiable, PCC_HasFactorRule, Pure, InferTypeOpAdaptor]>,
    PCC_FlopsPerElement<"0"> {
  let summary = "Take entries along `axis` at `indices` (embedding lookup)";
  let description = [{
    ONNX Gather: the result shape is `input[:axis] + indices + input[axis+1:]`.
    Negative indices count from the end.

    Example: `%e = pcc.gather %wte, %ids {axis = 0 : i64} : (tensor<128x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>`
  }];
  let arguments = (ins PCC_Tensor:$input, PCC_IndexTensor:$indices, PCC_I64Attr:$axis);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def PCC_ShardGatherOp : PCC_Op<"shard_gather", [Pure, InferTypeOpAdaptor]>,
    PCC_FlopsPerElement<"0"> {
  let summary = "Gather from this device's block of a table split along `axis`";
  let description = [{
    The per-device form of `pcc.gather` on a table whose `axis` is split over
    `grid_axes` of `grid` (vocabulary-parallel embedding). The device with
    in-group index `r` holds entries `[r*n, (r+1)*n)` of the global table,
    where `n` is the local size of `axis`. Indices in that range gather as
    `pcc.gather`; the others give zeros, so the result is a partial sum over
    `grid_axes` whose sum is the global gather. Indices outside the global
    table are an error at run time, as for `pcc.gather`.

    Example:
    ```mlir
    %e = pcc.shard_gather %wte, %ids {axis = 0 : i64, grid = @mesh, grid_axes = array<i64: 1>}
        : (tensor<64x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins PCC_Tensor:$input, PCC_IndexTensor:$indices,
                       PCC_I64Attr:$axis, FlatSymbolRefAttr:$grid,
                       DenseI64ArrayAttr:$grid_axes);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` functional-type(operands, results)";
}

def PCC_TriluOp : PCC_Op<"trilu", [PCC_Differentiable, PCC_HasFactorRule,
                                   Pure, InferTypeOpAdaptor]> {
  let summary = "Keep the upper or lower triangle of the last two axes";
  let description = [{
    Zeroes entries below (`upper`) or above (lower) diagonal `k` of each
    matrix in the trailing two axes.
  }];
  let arguments = (ins PCC_Tensor:$input, BoolAttr:$upper, PCC_I64Attr:$k);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Pipeline stages
//===----------------------------------------------------------------------===//

def PCC_SendOp : PCC_Op<"send">, PCC_FlopsPerElement<"0"> {
  let summary = "Send a value to a later pipeline stage";
  let description = [{
    In a per-device program cut into pipeline stages (each op's `pcc.stage`),
    the devices of this op's stage send `input` to the device of stage
    `to_stage` that has the same coordinates on every other axis of `grid`
    (the stages are the coordinates along `grid_axis`). `tag` pairs it with
    the `pcc.recv` of that stage. It returns when the receiver has the bytes
    or has buffered them, so `input`'s storage may be reused after it.

    Example: `pcc.send %h {grid = @mesh, grid_axis = 0 : i64, to_stage = 1 : i64, tag = 0 : i64} : tensor<2x16x64xf32>`
  }];
  let arguments = (ins PCC_Tensor:$input, FlatSymbolRefAttr:$grid,
                       PCC_I64Attr:$grid_axis, PCC_I64Attr:$to_stage,
                       PCC_I64Attr:$tag);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def PCC_RecvOp : PCC_Op<"recv">, PCC_FlopsPerElement<"0"> {
  let summary = "Receive a value from an earlier pipeline stage";
  let description = [{
    The counterpart of `pcc.send`: the devices of this op's stage receive
    the value stage `from_stage` sent with the same `tag`.

    Example: `%h = pcc.recv {grid = @mesh, grid_axis = 0 : i64, from_stage = 0 : i64, tag = 0 : i64} : tensor<2x16x64xf32>`
  }];
  let arguments = (ins FlatSymbolRefAttr:$grid, PCC_I64Attr:$grid_axis,
                       PCC_I64Attr:$from_stage, PCC_I64Attr:$tag);
  let results = (outs PCC_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // PCC_DIALECT_PCC_IR_PCCOPS_TD
