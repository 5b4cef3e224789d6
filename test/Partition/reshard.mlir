// Resharding between layouts, on hand-annotated programs.
// RUN: pcc-opt %s --split-input-file --pcc-partition | FileCheck %s

shard.grid @mesh(shape = 2)
// A softmax over a split axis runs on the blocks, its lines' statistics
// gathered over the split (stat_axes); the whole result is gathered after.
// CHECK-LABEL: func.func @softmax_on_blocks
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>
// CHECK: %[[S:.*]] = pcc.softmax %[[X]] {axis = 1 : i64, stat_axes = array<i64: 0>} : tensor<4x3xf32>
// CHECK: shard.all_gather %[[S]] on @mesh grid_axes = [0] gather_axis = 1 : tensor<4x3xf32> -> tensor<4x6xf32>
func.func @softmax_on_blocks(%x: tensor<4x6xf32> {pcc.sharding = #pcc.sharding<@mesh, [[], [0]]>}) -> tensor<4x6xf32> {
  %y = pcc.softmax %x {axis = 1 : i64} : tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

shard.grid @mesh(shape = 2)
// A layer norm's split axis (unmarked: not a 2D plan's) is gathered first.
// CHECK-LABEL: func.func @gather_for_layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>
// CHECK: %[[G:.*]] = shard.all_gather %[[X]] on @mesh grid_axes = [0] gather_axis = 1 : tensor<4x3xf32> -> tensor<4x6xf32>
// CHECK: pcc.layer_norm %[[G]]
func.func @gather_for_layer_norm(%x: tensor<4x6xf32> {pcc.sharding = #pcc.sharding<@mesh, [[], [0]]>}, %g: tensor<6xf32>) -> tensor<4x6xf32> {
  %y = pcc.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

shard.grid @mesh(shape = 2)
// A contraction over a split K is a partial sum; a result annotated as split
// rows is reduced straight into that split.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK: %[[P:.*]] = pcc.matmul {{.*}} : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
// CHECK: shard.reduce_scatter %[[P]] on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4x6xf32> -> tensor<2x6xf32>
// CHECK: return {{.*}} : tensor<2x6xf32>
func.func @reduce_scatter(%a: tensor<4x8xf32> {pcc.sharding = #pcc.sharding<@mesh, [[], [0]]>},
                          %b: tensor<8x6xf32> {pcc.sharding = #pcc.sharding<@mesh, [[0], []]>})
    -> (tensor<4x6xf32> {pcc.sharding = #pcc.sharding<@mesh, [[0], []]>}) {
  %y = pcc.matmul %a, %b {pcc.sharding = [#pcc.sharding<@mesh, [[0], []]>]} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

shard.grid @mesh(shape = 2)
// A new split costs no communication: each device keeps its block.
// CHECK-LABEL: func.func @slice
// CHECK: shard.all_slice {{.*}} on @mesh grid_axes = [0] slice_axis = 0 : tensor<4x6xf32> -> tensor<2x6xf32>
func.func @slice(%x: tensor<4x6xf32>) -> (tensor<4x6xf32> {pcc.sharding = #pcc.sharding<@mesh, [[0], []]>}) {
  %y = pcc.relu %x : tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

shard.grid @mesh(shape = 2)
// A dim split in 3 groups (fused Q|K|V) is gathered group by group.
// CHECK-LABEL: func.func @grouped_gather
// CHECK: %[[R:.*]] = pcc.reshape {{.*}} -> tensor<4x3x1xf32>
// CHECK: %[[G:.*]] = shard.all_gather %[[R]] on @mesh grid_axes = [0] gather_axis = 2 : tensor<4x3x1xf32> -> tensor<4x3x2xf32>
// CHECK: pcc.reshape %[[G]] {{.*}} -> tensor<4x6xf32>
func.func @grouped_gather(%x: tensor<4x6xf32> {pcc.sharding = #pcc.sharding<@mesh, [[], [0]/3]>}) -> tensor<4x6xf32> {
  %y = pcc.softmax %x {axis = 1 : i64} : tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

shard.grid @mesh(shape = 2)
// Vocabulary-parallel lookup: each device gathers the rows it holds and the
// partial results are summed.
// CHECK-LABEL: func.func @vocab_parallel
// CHECK: %[[W:.*]] = pcc.weight "wte" {pcc.sharding = {{.*}}} : tensor<8x4xf32>
// CHECK: %[[E:.*]] = pcc.shard_gather %[[W]], %{{.*}} {axis = 0 : i64, grid = @mesh, grid_axes = array<i64: 0>} : (tensor<8x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK: shard.all_reduce %[[E]] on @mesh grid_axes = [0]
func.func @vocab_parallel(%ids: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %w = pcc.weight "wte" {pcc.sharding = [#pcc.sharding<@mesh, [[0], []]>]} : tensor<16x4xf32>
  %e = pcc.gather %w, %ids {axis = 0 : i64} : (tensor<16x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  return %e : tensor<2x3x4xf32>
}

// -----

shard.grid @mesh(shape = 2)
// A row-parallel Gemm adds its bias once, after the sum.
// CHECK-LABEL: func.func @gemm_bias
// CHECK: %[[P:.*]] = pcc.gemm %{{.*}}, %{{.*}} {transB = true} : (tensor<4x4xf32>, tensor<6x4xf32>) -> tensor<4x6xf32>
// CHECK: %[[S:.*]] = shard.all_reduce %[[P]] on @mesh grid_axes = [0]
// CHECK: pcc.add %[[S]], %{{.*}} : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
func.func @gemm_bias(%a: tensor<4x8xf32> {pcc.sharding = #pcc.sharding<@mesh, [[], [0]]>}) -> tensor<4x6xf32> {
  %w = pcc.weight "w" {pcc.sharding = [#pcc.sharding<@mesh, [[], [0]]>]} : tensor<6x8xf32>
  %b = pcc.weight "b" : tensor<6xf32>
  %y = pcc.gemm %a, %w, %b {transB = true} : (tensor<4x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

shard.grid @mesh(shape = 2)
// A split moving from one dimension to another (sequence split to head
// split, as around Ulysses attention) is one all-to-all, not a gather and a
// slice.
// CHECK-LABEL: func.func @move_split
// CHECK: shard.all_to_all %{{.*}} on @mesh grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x8xf32> -> tensor<4x4xf32>
// CHECK-NOT: shard.all_gather
func.func @move_split(%x: tensor<4x8xf32> {pcc.sharding = #pcc.sharding<@mesh, [[0], []]>})
    -> (tensor<4x8xf32> {pcc.sharding = #pcc.sharding<@mesh, [[], [0]]>}) {
  %y = pcc.relu %x {pcc.sharding = [#pcc.sharding<@mesh, [[0], []]>]} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
