// Softmax and normalisations on the CPU target: rows x axis x inner blocks.
// RUN: pcc-translate --pcc-to-cpp %s | FileCheck %s

// The last axis: 32 rows of 16, inner 1.
// CHECK: // pcc.softmax
// CHECK-NEXT: softmax<float>(in0, out0, 32, 16, 1, false);
// A middle axis: 4 outer, 8 along it, 16 inner.
// CHECK: // pcc.log_softmax
// CHECK-NEXT: softmax<float>(in0, out1, 4, 8, 16, true);
// CHECK: // pcc.layer_norm
// CHECK-NEXT: layerNorm<float>(in0, in1, 16, in2, 16, out2, 32, 16, static_cast<float>(9.99999974737875164e-06));
// CHECK: // pcc.batch_norm
// CHECK-NEXT: batchNorm<float>(in3, in4, in4, in4, in4, out3, 2, 8, 16, static_cast<float>(9.99999974737875164e-06));
func.func @main(%x: tensor<4x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %y: tensor<2x8x4x4xf32>, %s: tensor<8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<2x8x4x4xf32>) {
  %0 = pcc.softmax %x {axis = 2 : i64} : tensor<4x8x16xf32>
  %1 = pcc.log_softmax %x {axis = 1 : i64} : tensor<4x8x16xf32>
  %2 = pcc.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
  %3 = pcc.batch_norm %y, %s, %s, %s, %s {epsilon = 1.0e-5 : f32} : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
  return %0, %1, %2, %3 : tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<2x8x4x4xf32>
}

