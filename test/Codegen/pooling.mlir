// Pooling on the CPU target: one runtime kernel call per op.
// RUN: pcc-translate --pcc-to-cpp %s | FileCheck %s

// CHECK: // pcc.max_pool
// CHECK-NEXT: pool2dF32(true, in0, out0, 16, 16, 16, 8, 8, 2, 2, 2, 2, 0, 0, 1, 1, false, 0, 0);
// Ceil mode with end padding: 6 x 6 windows of 3 x 3.
// CHECK: // pcc.average_pool
// CHECK-NEXT: pool2dF32(false, in0, out1, 16, 16, 16, 6, 6, 3, 3, 3, 3, 0, 0, 1, 1, false, 1, 1);
// CHECK: // pcc.global_average_pool
// CHECK-NEXT: globalAvgPoolF32(in0, out2, 16, 256);
func.func @main(%x: tensor<2x8x16x16xf32>) -> (tensor<2x8x8x8xf32>, tensor<2x8x6x6xf32>, tensor<2x8x1x1xf32>) {
  %1 = pcc.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x8x16x16xf32>) -> tensor<2x8x8x8xf32>
  %2 = pcc.average_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<2x8x16x16xf32>) -> tensor<2x8x6x6xf32>
  %3 = pcc.global_average_pool %x : (tensor<2x8x16x16xf32>) -> tensor<2x8x1x1xf32>
  return %1, %2, %3 : tensor<2x8x8x8xf32>, tensor<2x8x6x6xf32>, tensor<2x8x1x1xf32>
}
