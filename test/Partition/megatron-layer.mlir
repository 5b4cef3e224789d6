// A GPT-style transformer layer (fused QKV projection, 2 heads, MLP) under
// Megatron 1D tensor parallelism has exactly 2 all-reduces over the tensor
// axis in its forward pass; under pure data parallelism it has none.
// RUN: sed -e 's/AXES/"tp"/' -e 's/SIZES/2/' -e 's/LAYOUT/megatron/' %s | pcc-opt --pcc-apply-plan --pcc-partition | FileCheck %s --check-prefix=TP
// RUN: sed -e 's/AXES/"dp"/' -e 's/SIZES/2/' -e 's/LAYOUT/megatron/' %s | pcc-opt --pcc-apply-plan --pcc-partition | FileCheck %s --check-prefix=DP
// RUN: sed -e 's/AXES/"dp", "tp"/' -e 's/SIZES/2, 2/' -e 's/LAYOUT/megatron/' %s | pcc-opt --pcc-apply-plan --pcc-partition | FileCheck %s --check-prefix=DPTP
// RUN: sed -e 's/AXES/"tp"/' -e 's/SIZES/2/' -e 's/LAYOUT/megatron/' %s | pcc-opt --pcc-apply-plan | FileCheck %s --check-prefix=ANNOT

module attributes {pcc.plan = #pcc.plan<axes = [AXES], sizes = [SIZES], tensor_mode = "1d", tensor_layout = "LAYOUT", microbatches = 1, train = false>} {
  func.func @main(%x: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
    %g = pcc.weight "ln.g" : tensor<16xf32>
    %b = pcc.weight "ln.b" : tensor<16xf32>
    %h = pcc.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %wqkv = pcc.weight "attn.qkv.w" : tensor<16x48xf32>
    %bqkv = pcc.weight "attn.qkv.b" : tensor<48xf32>
    %qkv0 = pcc.matmul %h, %wqkv : (tensor<4x8x16xf32>, tensor<16x48xf32>) -> tensor<4x8x48xf32>
    %qkv = pcc.add %qkv0, %bqkv : (tensor<4x8x48xf32>, tensor<48xf32>) -> tensor<4x8x48xf32>
    %q, %k, %v = pcc.split %qkv {axis = 2 : i64, sizes = array<i64: 16, 16, 16>} : (tensor<4x8x48xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>)
    %q1 = pcc.reshape %q {shape = array<i64: 4, 8, 2, 8>} : (tensor<4x8x16xf32>) -> tensor<4x8x2x8xf32>
    %k1 = pcc.reshape %k {shape = array<i64: 4, 8, 2, 8>} : (tensor<4x8x16xf32>) -> tensor<4x8x2x8xf32>
    %v1 = pcc.reshape %v {shape = array<i64: 4, 8, 2, 8>} : (tensor<4x8x16xf32>) -> tensor<4x8x2x8xf32>
    %q2 = pcc.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x8x2x8xf32>) -> tensor<4x2x8x8xf32>
    %kt = pcc.transpose %k1 {perm = array<i64: 0, 2, 3, 1>} : (tensor<4x8x2x8xf32>) -> tensor<4x2x8x8xf32>
    %v2 = pcc.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x8x2x8xf32>) -> tensor<4x2x8x8xf32>
    %s = pcc.matmul %q2, %kt : (tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>) -> tensor<4x2x8x8xf32>
    %p = pcc.softmax %s {axis = 3 : i64} : tensor<4x2x8x8xf32>
    %o = pcc.matmul %p, %v2 : (tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>) -> tensor<4x2x8x8xf32>
    %o1 = pcc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x2x8x8xf32>) -> tensor<4x8x2x8xf32>
    %o2 = pcc.reshape %o1 {shape = array<i64: 4, 8, 16>} : (tensor<4x8x2x8xf32>) -> tensor<4x8x16xf32>
    %wo = pcc.weight "attn.proj.w" : tensor<16x16xf32>
    %bo = pcc.weight "attn.proj.b" : tensor<16xf32>
    %a0 = pcc.matmul %o2, %wo : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %a = pcc.add %a0, %bo : (tensor<4x8x16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %r = pcc.add %x, %a : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %w1 = pcc.weight "mlp.fc1.w" : tensor<16x64xf32>
    %b1 = pcc.weight "mlp.fc1.b" : tensor<64xf32>
    %f0 = pcc.matmul %r, %w1 : (tensor<4x8x16xf32>, tensor<16x64xf32>) -> tensor<4x8x64xf32>
    %f1 = pcc.add %f0, %b1 : (tensor<4x8x64xf32>, tensor<64xf32>) -> tensor<4x8x64xf32>
    %f = pcc.gelu %f1 : tensor<4x8x64xf32>
    %w2 = pcc.weight "mlp.fc2.w" : tensor<64x16xf32>
    %b2 = pcc.weight "mlp.fc2.b" : tensor<16xf32>
    %m0 = pcc.matmul %f, %w2 : (tensor<4x8x64xf32>, tensor<64x16xf32>) -> tensor<4x8x16xf32>
    %m = pcc.add %m0, %b2 : (tensor<4x8x16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %y = pcc.add %r, %m : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    return %y : tensor<4x8x16xf32>
  }
}

// Column-parallel QKV holds whole heads (3 groups), row-parallel output
// projection and second MLP linear end in partial sums.
// ANNOT: shard.grid @mesh(shape = 2) {pcc.axis_names = ["tp"]}
// ANNOT: pcc.weight "attn.qkv.w" {pcc.sharding = [#pcc.sharding<@mesh, {{\[\[}}], [0]/3]>]}
// ANNOT: pcc.weight "attn.proj.w" {pcc.sharding = [#pcc.sharding<@mesh, {{\[\[}}0], []]>]}
// ANNOT: pcc.matmul {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[\[}}], [], []], partial = [0]>]
// ANNOT: pcc.weight "mlp.fc1.w" {pcc.sharding = [#pcc.sharding<@mesh, {{\[\[}}], [0]]>]}
// ANNOT: pcc.weight "mlp.fc2.w" {pcc.sharding = [#pcc.sharding<@mesh, {{\[\[}}0], []]>]}

// TP-LABEL: func.func @main
// TP-SAME: tensor<4x8x16xf32> {pcc.sharding = #pcc.sharding<@mesh, {{\[\[}}], [], []]>}
// TP: pcc.weight "attn.qkv.w" {{.*}} : tensor<16x24xf32>
// TP: pcc.split {{.*}} -> (tensor<4x8x8xf32>, tensor<4x8x8xf32>, tensor<4x8x8xf32>)
// TP: pcc.softmax {{.*}} : tensor<4x1x8x8xf32>
// TP-NOT: shard.
// TP: %[[P1:.*]] = pcc.matmul {{.*}} : (tensor<4x8x8xf32>, tensor<8x16xf32>) -> tensor<4x8x16xf32>
// TP-NEXT: shard.all_reduce %[[P1]] on @mesh grid_axes = [0]
// TP-NOT: shard.
// TP: pcc.gelu {{.*}} : tensor<4x8x32xf32>
// TP: %[[P2:.*]] = pcc.matmul {{.*}} : (tensor<4x8x32xf32>, tensor<32x16xf32>) -> tensor<4x8x16xf32>
// TP-NEXT: shard.all_reduce %[[P2]] on @mesh grid_axes = [0]
// TP-NOT: shard.
// TP: return

// DP-LABEL: func.func @main
// DP-SAME: tensor<2x8x16xf32> {pcc.sharding = #pcc.sharding<@mesh, {{\[\[}}0], [], []]>}
// DP-NOT: shard.
// DP: return {{.*}} : tensor<2x8x16xf32>

// DPTP-LABEL: func.func @main
// DPTP-SAME: tensor<2x8x16xf32>
// DPTP-COUNT-2: shard.all_reduce {{.*}} grid_axes = [1]
// DPTP-NOT: shard.
// DPTP: return
