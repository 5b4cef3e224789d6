// A 2D plan (tp 4 as a 2 x 2 grid of tp_row x tp_col): the batch is split
// over the grid rows, the hidden dimension over the columns; the linear
// layer's weight is split 2 x 2 and runs as SUMMA (summa_axes = [row, col]),
// the layer norm all-reduces its statistics over the columns (stat_axes),
// and no collective is inserted around either.
// RUN: pcc-opt %s --pcc-apply-plan --pcc-partition | FileCheck %s

// CHECK: shard.grid @mesh(shape = 2x2) {pcc.axis_names = ["tp_row", "tp_col"]}
// CHECK: func.func @main(%[[X:.*]]: tensor<2x8xf32>
// CHECK: %[[S:.*]] = shard.all_slice %[[X]] on @mesh grid_axes = [1] slice_axis = 1 : tensor<2x8xf32> -> tensor<2x4xf32>
// CHECK: %[[N:.*]] = pcc.layer_norm %[[S]], %{{.*}}, %{{.*}} {axis = 1 : i64, epsilon = {{.*}}, stat_axes = array<i64: 1>} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: %[[Y:.*]] = pcc.matmul %[[N]], %{{.*}} {summa_axes = array<i64: 0, 1>} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
// CHECK-NOT: shard.all_reduce
// CHECK-NOT: shard.all_gather
// CHECK: return %[[Y]]
module attributes {pcc.plan = #pcc.plan<axes = ["tp"], sizes = [4], tensor_mode = "2d", tensor_layout = "megatron", microbatches = 1, train = false>} {
  func.func @main(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
    %g = pcc.weight "ln.g" : tensor<8xf32>
    %b = pcc.weight "ln.b" : tensor<8xf32>
    %w = pcc.weight "fc.w" : tensor<8x16xf32>
    %n = pcc.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %y = pcc.matmul %n, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    return %y : tensor<4x16xf32>
  }
}
