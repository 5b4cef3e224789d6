// A training step under a pipeline of 2 stages streaming 2 microbatches
// (pcc --train --pp 2 --microbatches 2 of y = (tanh(x A^T) B^T - t)^2,
// averaged, with SGD): the backward pass runs the stages back in reverse
// order, each gradient in the stage of the op it differentiates; the
// gradients' sums over the microbatch axis accumulate across the runs of a
// step; the loss over the whole batch and each weight's update run once per
// step, after the last microbatch, in the stage that holds the weight.
// RUN: pcc-opt %s --pcc-apply-plan --pcc-partition --pcc-bucket-gradients --pcc-accumulate-microbatches --pcc-pipeline-stages | FileCheck %s

// CHECK: shard.grid @mesh(shape = 2x2) {pcc.axis_names = ["pp", "mb"]}
// Forward: stage 0 sends tanh(x A^T) to stage 1, which holds B and uses
// B^T there (the transpose of a weight runs where its product does).
// CHECK: %[[A:.*]] = pcc.weight "a.weight" {pcc.stage = 0 : i64}
// CHECK: %[[H:.*]] = pcc.tanh {{.*}}pcc.stage = 0
// CHECK-NEXT: pcc.send %[[H]] {{.*}}pcc.stage = 0 : i64, tag = 0 : i64, to_stage = 1
// CHECK: %[[B:.*]] = pcc.weight "b.weight" {pcc.stage = 1 : i64}
// CHECK: pcc.transpose %[[B]] {{.*}}pcc.stage = 1
// The loss: each microbatch's sum divided by the whole batch's count (a
// mean over a split axis is a partial sum), summed across the runs.
// CHECK: %[[PART:.*]] = pcc.div {{.*}}pcc.stage = 1
// CHECK-NEXT: %[[LOSS:.*]] = shard.all_reduce %[[PART]] on @mesh grid_axes = [1] {pcc.stage = 1 : i64}
// Backward (after every forward op, marked so that a 1F1B schedule runs it
// apart): stage 1 sends the gradient of tanh(x A^T) back to stage 0.
// CHECK: pcc.send {{.*}}pcc.backward, pcc.stage = 1 : i64, tag = 1 : i64, to_stage = 0
// CHECK-NEXT: pcc.recv {from_stage = 1 : i64, {{.*}}pcc.backward, pcc.stage = 0 : i64, tag = 1 : i64}
// Each weight's gradient summed over the microbatches in its own stage.
// CHECK: %[[GA:.*]] = shard.all_reduce {{.*}} grid_axes = [1] {pcc.backward, pcc.stage = 0 : i64}
// CHECK: %[[GB:.*]] = shard.all_reduce {{.*}} grid_axes = [1] {pcc.backward, pcc.stage = 1 : i64}
// Once per step, after the last microbatch: the updates.
// CHECK: pcc.mul %[[GA]], {{.*}}pcc.once_per_step, pcc.optimizer, pcc.stage = 0
// CHECK: pcc.mul %[[GB]], {{.*}}pcc.once_per_step, pcc.optimizer, pcc.stage = 1
// CHECK: pcc.assign %[[A]], {{.*}}pcc.once_per_step, pcc.stage = 0
// CHECK: pcc.assign %[[B]], {{.*}}pcc.once_per_step, pcc.stage = 1
// CHECK: return %[[LOSS]]
module attributes {pcc.plan = #pcc.plan<axes = ["pp"], sizes = [2], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 2, train = true>, pcc.opset = 14 : i64, pcc.train_step} {
  func.func @main(%arg0: tensor<4x4xf32> {pcc.name = "x"}, %arg1: tensor<4x2xf32> {pcc.name = "y"}) -> (tensor<f32> {pcc.name = "loss"}) {
    %0 = pcc.constant dense<2.000000e+00> : tensor<f32>
    %1 = pcc.weight "a.weight" : tensor<4x4xf32>
    %2 = pcc.transpose %1 {pcc.forward_id = 2 : i64, perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = pcc.matmul %arg0, %2 {pcc.forward_id = 3 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = pcc.tanh %3 {pcc.forward_id = 4 : i64} : tensor<4x4xf32>
    %5 = pcc.weight "b.weight" : tensor<2x4xf32>
    %6 = pcc.transpose %5 {pcc.forward_id = 6 : i64, perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
    %7 = pcc.matmul %4, %6 {pcc.forward_id = 7 : i64} : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %8 = pcc.sub %7, %arg1 {pcc.forward_id = 8 : i64} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %9 = pcc.pow %8, %0 {pcc.forward_id = 9 : i64} : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
    %10 = pcc.reduce_mean %9 {axes = array<i64: 0, 1>, keepdims = false, pcc.forward_id = 10 : i64} : (tensor<4x2xf32>) -> tensor<f32>
    %11 = pcc.constant {pcc.gradient_of = 10 : i64} dense<1.000000e+00> : tensor<f32>
    %12 = pcc.reshape %11 {pcc.gradient_of = 10 : i64, shape = array<i64: 1, 1>} : (tensor<f32>) -> tensor<1x1xf32>
    %13 = pcc.expand %12 {pcc.gradient_of = 10 : i64, shape = array<i64: 4, 2>} : (tensor<1x1xf32>) -> tensor<4x2xf32>
    %14 = pcc.constant {pcc.gradient_of = 10 : i64} dense<1.250000e-01> : tensor<f32>
    %15 = pcc.mul %13, %14 {pcc.gradient_of = 10 : i64} : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
    %16 = pcc.constant {pcc.gradient_of = 9 : i64} dense<1.000000e+00> : tensor<f32>
    %17 = pcc.sub %0, %16 {pcc.gradient_of = 9 : i64} : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %18 = pcc.pow %8, %17 {pcc.gradient_of = 9 : i64} : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
    %19 = pcc.mul %0, %18 {pcc.gradient_of = 9 : i64} : (tensor<f32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %20 = pcc.mul %15, %19 {pcc.gradient_of = 9 : i64} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %21 = pcc.gemm %20, %6 {pcc.gradient_of = 7 : i64, transB = true} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
    %22 = pcc.gemm %4, %20 {pcc.gradient_of = 7 : i64, transA = true} : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %23 = pcc.transpose %22 {pcc.gradient_of = 6 : i64, perm = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
    %24 = pcc.mul %4, %4 {pcc.gradient_of = 4 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %25 = pcc.constant {pcc.gradient_of = 4 : i64} dense<1.000000e+00> : tensor<f32>
    %26 = pcc.sub %25, %24 {pcc.gradient_of = 4 : i64} : (tensor<f32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %27 = pcc.mul %21, %26 {pcc.gradient_of = 4 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %28 = pcc.gemm %arg0, %27 {pcc.gradient_of = 3 : i64, transA = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %29 = pcc.transpose %28 {pcc.gradient_of = 2 : i64, perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %30 = pcc.constant {pcc.optimizer} dense<1.000000e-01> : tensor<f32>
    %31 = pcc.mul %29, %30 {pcc.optimizer} : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    %32 = pcc.sub %1, %31 {pcc.optimizer} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %33 = pcc.constant {pcc.optimizer} dense<1.000000e-01> : tensor<f32>
    %34 = pcc.mul %23, %33 {pcc.optimizer} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %35 = pcc.sub %5, %34 {pcc.optimizer} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    pcc.assign %1, %32 : tensor<4x4xf32>
    pcc.assign %5, %35 : tensor<2x4xf32>
    return %10 : tensor<f32>
  }
}

