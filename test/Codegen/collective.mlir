// Collectives and split weights on the CPU target, for a per-device program
// on a 2 x 2 grid.
// RUN: pcc-translate --pcc-to-cpp --split-input-file %s | FileCheck %s --check-prefixes=CHECK,A2A

// A weight split over grid axis 1 is read at its block: the entry's offset
// plus its 128-byte stride times this device's block index.
// CHECK: static const DimSplit split0[] = {{[{][{]}}1, {1, 0, 0, 0}, 1}, {0, {0, 0, 0, 0}, 1}, };
// CHECK-NEXT: const float *v1 = reinterpret_cast<const float *>(weights + 0 + 128 * blockIndex(mesh, 2, split0));
// Communication groups are numbered by first use: group 0 is grid axis 1,
// group 1 grid axis 0.
// CHECK: // shard.all_slice
// CHECK-NEXT: allSlice(mesh, 0, in0, v0, 2, 16);
// CHECK: // pcc.matmul
// CHECK: // shard.all_reduce
// CHECK-NEXT: allReduceSum(mesh, 0, static_cast<DType>(1), v2, v3, 12);
// CHECK: // shard.all_gather
// CHECK-NEXT: allGather(mesh, 1, v3, out0, 1, 48);
// CHECK: const int64_t meshShape[] = {2, 2};
// CHECK: const GroupDesc groups[] = {
// CHECK-NEXT: {1, {1, 0, 0, 0}},
// CHECK-NEXT: {1, {0, 0, 0, 0}},
// CHECK: static const ModelInfo info = {"main", 1, inputDescs, 1, outputDescs, {{[0-9]+}}u, 256u, 2, meshShape, meshAxes, 2, groups, run, PCC_BUILD_FINGERPRINT, -1, nullptr, -1, false, false, 0, nullptr, nullptr, nullptr, nullptr, false, false, 1, nullptr, nullptr, nullptr, false};
module attributes {pcc.partitioned} {
  shard.grid @mesh(shape = 2x2)
  func.func @main(%arg0: tensor<2x8xf32> {pcc.sharding = #pcc.sharding<@mesh, [[0], []]>}) -> (tensor<4x6xf32> {pcc.sharding = #pcc.sharding<@mesh, [[], []]>}) {
    %all_slice = shard.all_slice %arg0 on @mesh grid_axes = [1] slice_axis = 1 : tensor<2x8xf32> -> tensor<2x4xf32>
    %0 = pcc.weight "w" {pcc.sharding = [#pcc.sharding<@mesh, [[1], []]>]} : tensor<4x6xf32>
    %1 = pcc.matmul %all_slice, %0 : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
    %all_reduce = shard.all_reduce %1 on @mesh grid_axes = [1] : tensor<2x6xf32> -> tensor<2x6xf32>
    %all_gather = shard.all_gather %all_reduce on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x6xf32> -> tensor<4x6xf32>
    return %all_gather : tensor<4x6xf32>
  }
}

// -----

// An all-to-all names its input's shape and the two dimensions: the split
// moves from dimension 0 (concatenated) to dimension 1 (split).
// A2A: static const int64_t shape{{[0-9]+}}[] = {2, 8};
// A2A-NEXT: allToAll(mesh, 0, in0, out0, 4, 2, shape{{[0-9]+}}, 1, 0);
module attributes {pcc.partitioned} {
  shard.grid @mesh(shape = 2)
  func.func @main(%arg0: tensor<2x8xf32> {pcc.sharding = #pcc.sharding<@mesh, [[0], []]>}) -> (tensor<4x4xf32> {pcc.sharding = #pcc.sharding<@mesh, [[], [0]]>}) {
    %0 = shard.all_to_all %arg0 on @mesh grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x8xf32> -> tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
}
