// Pipelines: pcc-apply-plan cuts the program into stages and splits the
// batch over (microbatch, dp); pcc-pipeline-stages makes each stage
// self-contained: receives first, sends last, its own copy of each weight.
// RUN: pcc-opt %s --split-input-file --pcc-apply-plan --pcc-partition --pcc-pipeline-stages --verify-diagnostics | FileCheck %s

// The time axis `mb` follows pp; the batch of 8 is split over mb x dp.
// CHECK: shard.grid @mesh(shape = 2x2x2) {pcc.axis_names = ["pp", "mb", "dp"]}
// CHECK: func.func @main(%[[X:[a-z0-9]+]]: tensor<2x16xf32> {pcc.sharding = #pcc.sharding<@mesh, {{\[\[}}1, 2], {{\[\]}}]>})
// CHECK-SAME: -> (tensor<2x16xf32> {{{.*}}pcc.stage = 1 : i64}, tensor<2x16xf32> {{{.*}}pcc.stage = 0 : i64})
// CHECK: %[[W0:.*]] = pcc.weight "w" {pcc.stage = 0 : i64}
// CHECK: %[[H:.*]] = pcc.matmul %[[X]], %[[W0]] {pcc.stage = 0 : i64}
// CHECK: %[[A:.*]] = pcc.relu %[[H]] {pcc.stage = 0 : i64}
// Two values cross: sent at the end of stage 0 in tag order ...
// CHECK: pcc.send %[[A]] {grid = @mesh, grid_axis = 0 : i64, pcc.stage = 0 : i64, tag = 0 : i64, to_stage = 1 : i64}
// CHECK-NEXT: pcc.send %[[H]] {grid = @mesh, grid_axis = 0 : i64, pcc.stage = 0 : i64, tag = 1 : i64, to_stage = 1 : i64}
// The weight both stages read: each has a copy.
// CHECK-NEXT: %[[W1:.*]] = pcc.weight "w" {pcc.stage = 1 : i64}
// ... and received at the start of stage 1 in the same order.
// CHECK-NEXT: %[[RA:.*]] = pcc.recv {from_stage = 0 : i64, grid = @mesh, grid_axis = 0 : i64, pcc.stage = 1 : i64, tag = 0 : i64}
// CHECK-NEXT: %[[RH:.*]] = pcc.recv {from_stage = 0 : i64, grid = @mesh, grid_axis = 0 : i64, pcc.stage = 1 : i64, tag = 1 : i64}
// CHECK-NEXT: %[[Y:.*]] = pcc.matmul %[[RA]], %[[W1]] {pcc.stage = 1 : i64}
// CHECK-NEXT: %[[Z:.*]] = pcc.add %[[Y]], %[[RH]] {pcc.stage = 1 : i64}
// CHECK-NEXT: return %[[Z]], %[[A]]
module attributes {pcc.plan = #pcc.plan<axes = ["pp", "dp"], sizes = [2, 2], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 2, train = false>} {
  func.func @main(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
    %w = pcc.weight "w" : tensor<16x16xf32>
    %h = pcc.matmul %x, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    %a = pcc.relu %h : tensor<8x16xf32>
    %y = pcc.matmul %a, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    %z = pcc.add %y, %h : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %z, %a : tensor<8x16xf32>, tensor<8x16xf32>
  }
}

// -----

// The planner's cut (pcc.planned_stage) is kept as it is.
// CHECK: pcc.relu {{.*}}pcc.stage = 0
// CHECK: pcc.neg {{.*}}pcc.stage = 0
// CHECK: pcc.send
// CHECK: pcc.recv
// CHECK: pcc.exp {{.*}}pcc.stage = 1
module attributes {pcc.plan = #pcc.plan<axes = ["pp"], sizes = [2], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 1, train = false>} {
  func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %a = pcc.relu %x {pcc.planned_stage = 0 : i64} : tensor<8x16xf32>
    %b = pcc.neg %a {pcc.planned_stage = 0 : i64} : tensor<8x16xf32>
    %c = pcc.exp %b {pcc.planned_stage = 1 : i64} : tensor<8x16xf32>
    return %c : tensor<8x16xf32>
  }
}

// -----

// Microbatches run one after another: a sum over the whole batch cannot be
// taken inside one of them.
module attributes {pcc.plan = #pcc.plan<axes = ["pp"], sizes = [2], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 2, train = false>} {
  func.func @main(%x: tensor<8x16xf32>) -> tensor<16xf32> {
    %a = pcc.relu %x : tensor<8x16xf32>
    %s = pcc.reduce_sum %a {axes = array<i64: 0>, keepdims = false} : (tensor<8x16xf32>) -> tensor<16xf32>
    // expected-error @+1 {{this step needs values of several microbatches at once (it mixes the batch: 'shard.all_reduce' over the microbatch axis); compile with --microbatches 1}}
    return %s : tensor<16xf32>
  }
}

// -----

// More stages than operations cannot be cut.
// expected-error @+2 {{the model has 1 operations, fewer than 2 pipeline stages}}
module attributes {pcc.plan = #pcc.plan<axes = ["pp"], sizes = [2], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 1, train = false>} {
  func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %a = pcc.relu %x : tensor<8x16xf32>
    return %a : tensor<8x16xf32>
  }
}
