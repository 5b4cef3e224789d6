// Interleaved 1F1B on the CPU target: four stages on a pp axis of two
// devices (virtual_stages = 2). Stage s runs on device s % 2: sends and
// receives name the peer device, the run function switches on the stage
// the runtime is computing (its chunk's), stages 2 and 3 work in arenas of
// their own after stages 0 and 1's (their values live across each other's
// runs), outputs and trained tensors name their device, and the model
// tells the runtime it has 2 chunks per device.
// RUN: pcc-translate --pcc-to-cpp %s | FileCheck %s

// CHECK: bool part0(
// CHECK: sendToStage(mesh, 0, 1, v1, 128, 0);
// CHECK: bool part1(
// CHECK: recvFromStage(mesh, 0, 0, v{{[0-9]+}}, 128, 0);
// CHECK: sendToStage(mesh, 0, 0, v{{[0-9]+}}, 128, 1);
// CHECK: bool part2(
// CHECK: recvFromStage(mesh, 0, 1, v{{[0-9]+}}, 128, 1);
// CHECK: sendToStage(mesh, 0, 1, v{{[0-9]+}}, 128, 2);
// CHECK: bool part3(
// CHECK: recvFromStage(mesh, 0, 0, v{{[0-9]+}}, 128, 2);
// CHECK: switch (pipelineStage(mesh)) {
// CHECK-NEXT: case 0:
// CHECK-NEXT: if (!part0(inputs, outputs, arena, weights, mesh))
// CHECK: case 1:
// CHECK-NEXT: if (!part1(inputs, outputs, arena, weights, mesh))
// CHECK: case 2:
// CHECK-NEXT: if (!part2(inputs, outputs, arena + [[OFF0:[0-9]+]], weights, mesh))
// CHECK: case 3:
// CHECK-NEXT: if (!part3(inputs, outputs, arena + [[OFF1:[0-9]+]], weights, mesh))
// CHECK: const int32_t outputStages[] = {1};
// CHECK: run, PCC_BUILD_FINGERPRINT, 0, outputStages, 1, false, false, 0, nullptr, nullptr, nullptr, nullptr, false, false, 2, nullptr, nullptr, nullptr, false};
module attributes {pcc.partitioned, pcc.plan = #pcc.plan<axes = ["pp"], sizes = [2], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 2, train = false, virtual_stages = 2>} {
  shard.grid @mesh(shape = 2x2) {pcc.axis_names = ["pp", "mb"]}
  func.func @main(%arg0: tensor<2x16xf32> {pcc.sharding = #pcc.sharding<@mesh, [[1], []]>}) -> (tensor<2x16xf32> {pcc.sharding = #pcc.sharding<@mesh, [[1], []]>, pcc.stage = 3 : i64}) {
    %w0 = pcc.weight "w0" {pcc.stage = 0 : i64} : tensor<16x16xf32>
    %0 = pcc.matmul %arg0, %w0 {pcc.stage = 0 : i64} : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    pcc.send %0 {grid = @mesh, grid_axis = 0 : i64, pcc.stage = 0 : i64, tag = 0 : i64, to_stage = 1 : i64} : tensor<2x16xf32>
    %r1 = pcc.recv {from_stage = 0 : i64, grid = @mesh, grid_axis = 0 : i64, pcc.stage = 1 : i64, tag = 0 : i64} : tensor<2x16xf32>
    %w1 = pcc.weight "w1" {pcc.stage = 1 : i64} : tensor<16x16xf32>
    %1 = pcc.matmul %r1, %w1 {pcc.stage = 1 : i64} : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    pcc.send %1 {grid = @mesh, grid_axis = 0 : i64, pcc.stage = 1 : i64, tag = 1 : i64, to_stage = 2 : i64} : tensor<2x16xf32>
    %r2 = pcc.recv {from_stage = 1 : i64, grid = @mesh, grid_axis = 0 : i64, pcc.stage = 2 : i64, tag = 1 : i64} : tensor<2x16xf32>
    %w2 = pcc.weight "w2" {pcc.stage = 2 : i64} : tensor<16x16xf32>
    %2 = pcc.matmul %r2, %w2 {pcc.stage = 2 : i64} : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    pcc.send %2 {grid = @mesh, grid_axis = 0 : i64, pcc.stage = 2 : i64, tag = 2 : i64, to_stage = 3 : i64} : tensor<2x16xf32>
    %r3 = pcc.recv {from_stage = 2 : i64, grid = @mesh, grid_axis = 0 : i64, pcc.stage = 3 : i64, tag = 2 : i64} : tensor<2x16xf32>
    %w3 = pcc.weight "w3" {pcc.stage = 3 : i64} : tensor<16x16xf32>
    %3 = pcc.matmul %r3, %w3 {pcc.stage = 3 : i64} : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    return %3 : tensor<2x16xf32>
  }
}
