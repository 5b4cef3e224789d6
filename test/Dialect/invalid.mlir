// RUN: pcc-opt %s -split-input-file -verify-diagnostics

func.func @broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{incompatible shapes [2,3] and [4,5] for broadcasting}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "pcc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @wrong_result_type(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'pcc.add' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "pcc.add"(%a, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{matmul contraction sizes differ: [2,3] x [4,5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "pcc.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{cannot reshape [2,3] to [7]: element counts differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "pcc.reshape"(%a) <{shape = array<i64: 7>}> : (tensor<2x3xf32>) -> tensor<7xf32>
  return
}

// -----

func.func @transpose_perm(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{transpose perm [0,0] is not a permutation}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "pcc.transpose"(%a) <{perm = array<i64: 0, 0>}> : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @dynamic_shape(%a: tensor<?x3xf32>) {
  // expected-error @+1 {{must be statically shaped tensor}}
  %0 = pcc.relu %a : tensor<?x3xf32>
  return
}

// -----

func.func @split_sizes(%a: tensor<2x6xf32>) {
  // expected-error @+2 {{split sizes sum to 5 but dim 1 has 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = "pcc.split"(%a) <{axis = 1 : i64, sizes = array<i64: 2, 3>}> : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @slice_bounds(%a: tensor<4xf32>) {
  // expected-error @+1 {{axis 0 reads outside [0, 4)}}
  %0 = "pcc.slice"(%a) <{starts = array<i64: 2>, sizes = array<i64: 3>, steps = array<i64: 1>}> : (tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{conv channels do not match}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "pcc.conv"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @pool_window(%x: tensor<1x3x2x2xf32>) {
  // expected-error @+2 {{window of 3 exceeds padded input size 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "pcc.max_pool"(%x) <{kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}> : (tensor<1x3x2x2xf32>) -> tensor<1x3x1x1xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{scale shape does not broadcast to the normalized shape}}
  %0 = "pcc.layer_norm"(%x, %g) <{axis = 1 : i64, epsilon = 1.0e-5 : f32}> : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @external_length() {
  // expected-error @+1 {{external data length 8 does not match the 16 bytes of 'f32' elements of 'tensor<4xf32>'}}
  %0 = pcc.weight "b" external <"w.bin", offset = 0, length = 8> : tensor<4xf32>
  return
}

// -----

func.func @gelu_mode(%x: tensor<4xf32>) {
  // expected-error @+1 {{approximate must be 'none' or 'tanh', got 'fast'}}
  %0 = pcc.gelu %x {approximate = "fast"} : tensor<4xf32>
  return
}

// -----

func.func @reduce_axes(%x: tensor<4x4xf32>) {
  // expected-error @+2 {{reduction axes must be sorted and unique}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "pcc.reduce_sum"(%x) <{axes = array<i64: 1, 0>}> : (tensor<4x4xf32>) -> tensor<1x1xf32>
  return
}

// -----

// expected-error @+1 {{grid axis 0 is used twice}}
func.func @sharding_axis_twice(%x: tensor<4x4xf32> {pcc.sharding = #pcc.sharding<@mesh, [[0], [0]]>}) {
  return
}

// -----

// expected-error @+1 {{group count must be positive, got 0}}
func.func @sharding_zero_groups(%x: tensor<4x4xf32> {pcc.sharding = #pcc.sharding<@mesh, [[0]/0, []]>}) {
  return
}

// -----

func.func @attention_depths(%q: tensor<2x8x4xf32>, %k: tensor<2x8x6xf32>, %v: tensor<2x8x4xf32>) {
  // expected-error @+1 {{query and key depths differ}}
  %0 = pcc.attention %q, %k, %v : (tensor<2x8x4xf32>, tensor<2x8x6xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_mask(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %m: tensor<8x5xf32>) {
  // expected-error @+1 {{mask does not broadcast to the scores}}
  %0 = pcc.attention %q, %k, %v mask %m : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<8x5xf32>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_heads(%q: tensor<2x8x4xf32>, %k: tensor<3x8x4xf32>, %v: tensor<3x8x4xf32>) {
  // expected-error @+1 {{query, key and value leading dimensions differ}}
  %0 = pcc.attention %q, %k, %v : (tensor<2x8x4xf32>, tensor<3x8x4xf32>, tensor<3x8x4xf32>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @weight_conversion() {
  // expected-error @+1 {{converts only between f32, f16 and bf16, not 'i32' to 'bf16'}}
  %0 = pcc.weight "w" from i32 : tensor<4xbf16>
  return
}

// -----

func.func @beyond(%x: tensor<2x128x4x64xbf16>) -> tensor<2x128x2x64xbf16> {
  // expected-error @+1 {{seq_first needs [B, S, H, D] query}}
  %o = pcc.attention %x, %x, %x {seq_first, head_offsets = array<i64: 0, 2, 3>} : (tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>) -> tensor<2x128x2x64xbf16>
  return %o : tensor<2x128x2x64xbf16>
}

// -----

func.func @unfolded(%x: tensor<2x2x128x64xbf16>) -> tensor<2x2x128x64xbf16> {
  // expected-error @+1 {{head_offsets needs seq_first}}
  %o = pcc.attention %x, %x, %x {head_offsets = array<i64: 0, 0, 0>} : (tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>) -> tensor<2x2x128x64xbf16>
  return %o : tensor<2x2x128x64xbf16>
}

// -----

func.func @topk_too_many(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{topk k = 4 is not in [0, 3] (the size of axis 1 of [2,3])}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = "pcc.topk"(%a) {k = 4 : i64, axis = 1 : i64} : (tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  return
}

// -----

func.func @scatter_nd_updates(%x: tensor<2x16x64xf32>, %at: tensor<5x2xi64>, %u: tensor<5x16xf32>) {
  // expected-error @+2 {{scatter_nd updates [5,16] do not match indices [5,2] into [2,16,64] (expected [5,64] of the data's element type)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "pcc.scatter_nd"(%x, %at, %u) : (tensor<2x16x64xf32>, tensor<5x2xi64>, tensor<5x16xf32>) -> tensor<2x16x64xf32>
  return
}

// -----

func.func @scatter_nd_reduction(%x: tensor<4xf32>, %at: tensor<1x1xi64>, %u: tensor<1xf32>) {
  // expected-error @+2 {{scatter_nd reduction must be none, add or mul, not 'max'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "pcc.scatter_nd"(%x, %at, %u) {reduction = "max"} : (tensor<4xf32>, tensor<1x1xi64>, tensor<1xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @scatter_nd_batch_dims(%x: tensor<4x16xf32>, %at: tensor<2x3x1xi64>, %u: tensor<2x3xf32>) {
  // expected-error @+2 {{scatter_nd batch_dims 1 do not lead both data [4,16] and indices [2,3,1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "pcc.scatter_nd"(%x, %at, %u) {batch_dims = 1 : i64} : (tensor<4x16xf32>, tensor<2x3x1xi64>, tensor<2x3xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @gemm_rows_transposed_b(%x: tensor<2x16x64xf32>, %y: tensor<2x16x8xf32>) {
  // expected-error @+2 {{gemm with rank > 2 operands takes either A's leading dimensions as rows (transA false, B of rank 2) or contracts them with B's (transA, B's leading dimensions the same): [2,16,64] x [2,16,8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pcc.gemm %x, %y {transA = true, transB = true} : (tensor<2x16x64xf32>, tensor<2x16x8xf32>) -> tensor<64x8xf32>
  return
}

// -----

func.func @gemm_rows_differ(%x: tensor<2x16x64xf32>, %y: tensor<4x8x8xf32>) {
  // expected-error @+2 {{gemm with rank > 2 operands}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pcc.gemm %x, %y {transA = true} : (tensor<2x16x64xf32>, tensor<4x8x8xf32>) -> tensor<64x8xf32>
  return
}

// -----

func.func @gemm_rows_bias_not_along_n(%x: tensor<2x16x64xf32>, %w: tensor<64x8xf32>, %c: tensor<32x8xf32>) {
  // expected-error @+2 {{gemm bias shape [32,8] does not broadcast to [2,16,8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pcc.gemm %x, %w, %c : (tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<32x8xf32>) -> tensor<2x16x8xf32>
  return
}
