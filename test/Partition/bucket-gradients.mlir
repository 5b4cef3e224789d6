// Gradient all-reduces feeding a training step's update join one bucket per
// grid axes; others stay as they are.
// RUN: pcc-opt %s --split-input-file --pcc-bucket-gradients | FileCheck %s
// RUN: pcc-opt %s --split-input-file --pcc-bucket-gradients=bucket-bytes=30 | FileCheck %s --check-prefix=SMALL

shard.grid @mesh(shape = 2x2)
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<4xf32>, %[[C:.*]]: tensor<2xf32>
// CHECK-DAG: %[[GA:.*]] = pcc.neg %[[A]]
// CHECK-DAG: %[[GB:.*]] = pcc.neg %[[B]]
// CHECK: %[[FA:.*]] = pcc.reshape %[[GA]] {shape = array<i64: 6>}
// CHECK: %[[J:.*]] = pcc.concat %[[FA]], %[[GB]] {axis = 0 : i64}
// CHECK: %[[S:.*]] = shard.all_reduce %[[J]] on @mesh grid_axes = [0] : tensor<10xf32> -> tensor<10xf32>
// CHECK: %[[PA:.*]] = pcc.slice %[[S]] {sizes = array<i64: 6>, starts = array<i64: 0>, steps = array<i64: 1>}
// CHECK: pcc.reshape %[[PA]] {shape = array<i64: 2, 3>}
// CHECK: pcc.slice %[[S]] {sizes = array<i64: 4>, starts = array<i64: 6>, steps = array<i64: 1>}
// Another grid axis: its own bucket (of one, left alone).
// CHECK: shard.all_reduce {{.*}} grid_axes = [1] : tensor<2xf32>
// CHECK-NOT: shard.all_reduce
// Over 30 bytes: two buckets of one, left alone.
// SMALL-LABEL: func.func @step
// SMALL-NOT: pcc.concat
func.func @step(%a: tensor<2x3xf32>, %b: tensor<4xf32>, %c: tensor<2xf32>)
    -> (tensor<2x3xf32>, tensor<4xf32>, tensor<2xf32>) {
  %ga = pcc.neg %a : tensor<2x3xf32>
  %gb = pcc.neg %b : tensor<4xf32>
  %gc = pcc.neg %c : tensor<2xf32>
  %ra = shard.all_reduce %ga on @mesh grid_axes = [0] : tensor<2x3xf32> -> tensor<2x3xf32>
  %ua = pcc.sub %a, %ra {pcc.optimizer} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %rb = shard.all_reduce %gb on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %ub = pcc.sub %b, %rb {pcc.optimizer} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %rc = shard.all_reduce %gc on @mesh grid_axes = [1] : tensor<2xf32> -> tensor<2xf32>
  %uc = pcc.sub %c, %rc {pcc.optimizer} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %ua, %ub, %uc : tensor<2x3xf32>, tensor<4xf32>, tensor<2xf32>
}

// -----

shard.grid @mesh(shape = 2)
// An all-reduce of the forward pass (its user is not the update) stays.
// CHECK-LABEL: func.func @forward
// CHECK-COUNT-2: shard.all_reduce
// CHECK-NOT: pcc.concat
func.func @forward(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %ra = shard.all_reduce %a on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %ua = pcc.neg %ra : tensor<4xf32>
  %rb = shard.all_reduce %b on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %ub = pcc.neg %rb : tensor<4xf32>
  return %ua, %ub : tensor<4xf32>, tensor<4xf32>
}

