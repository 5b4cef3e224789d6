// A pipelined per-device program on the CPU target: one group of parts per
// stage, chosen by the device's coordinate on the pp axis; sends and
// receives over the pp axis's group; each stage copies out the outputs it
// returns. The microbatch axis (1) is named to the runtime, which runs the
// program once per microbatch.
// RUN: pcc-translate --pcc-to-cpp %s | FileCheck %s

// CHECK: bool part0(
// CHECK: gemmF32(false, false, 2, 16, 16, 1.0f, in0, 16, v0, 16, 0.0f, v1, 16);
// CHECK: // pcc.send
// CHECK-NEXT: sendToStage(mesh, 0, 1, v2, 128, 0);
// CHECK-NEXT: // pcc.send
// CHECK-NEXT: sendToStage(mesh, 0, 1, v1, 128, 1);
// CHECK-NEXT: __builtin_memcpy(outputs[1], v2, 128);
// CHECK-NEXT: return true;
// Stage 1 reads the same weights-file entry as stage 0.
// CHECK: bool part1(
// CHECK-NOT: inputs[0]
// CHECK: const float *v3 = reinterpret_cast<const float *>(weights + 0);
// CHECK: // pcc.recv
// CHECK-NEXT: recvFromStage(mesh, 0, 0, v4, 128, 0);
// CHECK-NEXT: // pcc.recv
// CHECK-NEXT: recvFromStage(mesh, 0, 0, v5, 128, 1);
// CHECK: __builtin_memcpy(outputs[0], v7, 128);
// CHECK: const char *const meshAxes[] = {"pp", "mb", "dp", };
// CHECK: switch (pipelineStage(mesh)) {
// CHECK-NEXT: case 0:
// CHECK-NEXT: if (!part0(inputs, outputs, arena, weights, mesh))
// CHECK: case 1:
// CHECK-NEXT: if (!part1(inputs, outputs, arena, weights, mesh))
// CHECK: const int32_t outputStages[] = {1, 0};
// CHECK: run, PCC_BUILD_FINGERPRINT, 0, outputStages, 1, false, false, 0, nullptr, nullptr, nullptr, nullptr, false, false, 1, nullptr, nullptr, nullptr, false};
module attributes {pcc.partitioned, pcc.plan = #pcc.plan<axes = ["pp", "dp"], sizes = [2, 2], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 2, train = false>} {
  shard.grid @mesh(shape = 2x2x2) {pcc.axis_names = ["pp", "mb", "dp"]}
  func.func @main(%arg0: tensor<2x16xf32> {pcc.sharding = #pcc.sharding<@mesh, [[1, 2], []]>}) -> (tensor<2x16xf32> {pcc.sharding = #pcc.sharding<@mesh, [[1, 2], []]>, pcc.stage = 1 : i64}, tensor<2x16xf32> {pcc.sharding = #pcc.sharding<@mesh, [[1, 2], []]>, pcc.stage = 0 : i64}) {
    %0 = pcc.weight "w" {pcc.stage = 0 : i64} : tensor<16x16xf32>
    %1 = pcc.matmul %arg0, %0 {pcc.stage = 0 : i64} : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %2 = pcc.relu %1 {pcc.stage = 0 : i64} : tensor<2x16xf32>
    %3 = pcc.weight "w" {pcc.stage = 1 : i64} : tensor<16x16xf32>
    pcc.send %2 {grid = @mesh, grid_axis = 0 : i64, pcc.stage = 0 : i64, tag = 0 : i64, to_stage = 1 : i64} : tensor<2x16xf32>
    pcc.send %1 {grid = @mesh, grid_axis = 0 : i64, pcc.stage = 0 : i64, tag = 1 : i64, to_stage = 1 : i64} : tensor<2x16xf32>
    %4 = pcc.recv {from_stage = 0 : i64, grid = @mesh, grid_axis = 0 : i64, pcc.stage = 1 : i64, tag = 0 : i64} : tensor<2x16xf32>
    %5 = pcc.recv {from_stage = 0 : i64, grid = @mesh, grid_axis = 0 : i64, pcc.stage = 1 : i64, tag = 1 : i64} : tensor<2x16xf32>
    %6 = pcc.matmul %4, %3 {pcc.stage = 1 : i64} : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %7 = pcc.add %6, %5 {pcc.stage = 1 : i64} : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
    return %7, %2 : tensor<2x16xf32>, tensor<2x16xf32>
  }
}

