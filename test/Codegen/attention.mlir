// Attention is one call of the blocked kernel; masks are described by
// per-batch offsets and row / key-column strides (0 where they broadcast).
// RUN: pcc-translate --pcc-to-cpp --split-input-file %s | FileCheck %s

// A [B=2, H=2] causal attention: the [16, 16] mask is the same for every
// batch and head.
// CHECK-LABEL: // unit: model.cpp
// CHECK: // pcc.attention
// CHECK-NEXT: AttentionMasks masks[[ID:[0-9]+]];
// CHECK-NEXT: static const int64_t hideBatch[[ID]][] = {0, 0, 0, 0};
// CHECK-NEXT: masks[[ID]].hide = in3;
// CHECK-NEXT: masks[[ID]].hideBatch = hideBatch[[ID]];
// CHECK-NEXT: masks[[ID]].hideRow = 16;
// CHECK-NEXT: masks[[ID]].hideCol = 1;
// CHECK-NEXT: masks[[ID]].fill = -__builtin_inff();
// CHECK-NEXT: attentionF32(in0, in1, in2, out0, 4, 16, 16, 8, 8, static_cast<float>(1.25{{0+}}e-01), false, masks[[ID]], mesh, -1, reinterpret_cast<float *>(arena + {{[0-9]+}}));
func.func @main(%q: tensor<2x2x16x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %c: tensor<16x16xi1>) -> tensor<2x2x16x8xf32> {
  %o = pcc.attention %q, %k, %v hide %c {scale = 0.125 : f64, fill = 0xFFF0000000000000 : f64} : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<16x16xi1>) -> tensor<2x2x16x8xf32>
  return %o : tensor<2x2x16x8xf32>
}

// -----

// A padding mask [B, 1, 1, Sk] broadcasts over heads and query rows; with
// ring_axes the kernel passes key blocks around the group of grid axis 0.
// CHECK-LABEL: // unit: model.cpp
// CHECK: static const int64_t addBatch{{[0-9]+}}[] = {0, 0, 16, 16};
// CHECK: addRow = 0;
// CHECK: addCol = 1;
// CHECK: attentionF32(in0, in1, in2, out0, 4, 8, 8, 8, 4, static_cast<float>(1.{{0+}}e+00), false, masks{{[0-9]+}}, mesh, 0, reinterpret_cast<float *>(arena + {{[0-9]+}}));
module {
  shard.grid @mesh(shape = 2)
  func.func @main(%q: tensor<2x2x8x8xf32>, %k: tensor<2x2x8x8xf32>, %v: tensor<2x2x8x4xf32>, %m: tensor<2x1x1x16xf32>) -> tensor<2x2x8x4xf32> {
    %o = pcc.attention %q, %k, %v mask %m {ring_axes = array<i64: 0>} : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32>, tensor<2x1x1x16xf32>) -> tensor<2x2x8x4xf32>
    return %o : tensor<2x2x8x4xf32>
  }
}
