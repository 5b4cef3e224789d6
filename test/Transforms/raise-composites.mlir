// RUN: pcc-opt %s -pcc-raise-composites -split-input-file | FileCheck %s

// torch 1.13 exports nn.GELU() as x * 0.5 * (1 + erf(x / sqrt(2))).
// CHECK-LABEL: func @gelu_erf
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[G:.*]] = pcc.gelu %[[X]] : tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_erf(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sqrt2 = pcc.constant dense<1.41421354> : tensor<f32>
  %one = pcc.constant dense<1.0> : tensor<f32>
  %half = pcc.constant dense<0.5> : tensor<f32>
  %0 = pcc.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = pcc.erf %0 : tensor<4x8xf32>
  %2 = pcc.add %1, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = pcc.mul %x, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = pcc.mul %3, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// A different constant means a different function: leave it alone.
// CHECK-LABEL: func @not_gelu
// CHECK-NOT: pcc.gelu
func.func @not_gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = pcc.constant dense<1.5> : tensor<f32>
  %one = pcc.constant dense<1.0> : tensor<f32>
  %half = pcc.constant dense<0.5> : tensor<f32>
  %0 = pcc.div %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = pcc.erf %0 : tensor<4x8xf32>
  %2 = pcc.add %1, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = pcc.mul %x, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = pcc.mul %3, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// nn.LayerNorm before opset 17.
// CHECK-LABEL: func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[LN:.*]] = pcc.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32}
// CHECK-NEXT: return %[[LN]]
func.func @layer_norm(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %two = pcc.constant dense<2.0> : tensor<f32>
  %eps = pcc.constant dense<1.0e-5> : tensor<f32>
  %mean = pcc.reduce_mean %x {axes = array<i64: 2>} : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %d = pcc.sub %x, %mean : (tensor<2x16x64xf32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %sq = pcc.pow %d, %two : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %var = pcc.reduce_mean %sq {axes = array<i64: 2>} : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %ve = pcc.add %var, %eps : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16x1xf32>
  %s = pcc.sqrt %ve : tensor<2x16x1xf32>
  %n = pcc.div %d, %s : (tensor<2x16x64xf32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %m = pcc.mul %n, %g : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %y = pcc.add %m, %b : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

// Statistics over a leading axis are not a layer norm.
// CHECK-LABEL: func @not_trailing
// CHECK-NOT: pcc.layer_norm
func.func @not_trailing(%x: tensor<2x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x16xf32> {
  %two = pcc.constant dense<2.0> : tensor<f32>
  %eps = pcc.constant dense<1.0e-5> : tensor<f32>
  %mean = pcc.reduce_mean %x {axes = array<i64: 0>} : (tensor<2x16xf32>) -> tensor<1x16xf32>
  %d = pcc.sub %x, %mean : (tensor<2x16xf32>, tensor<1x16xf32>) -> tensor<2x16xf32>
  %sq = pcc.pow %d, %two : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %var = pcc.reduce_mean %sq {axes = array<i64: 0>} : (tensor<2x16xf32>) -> tensor<1x16xf32>
  %ve = pcc.add %var, %eps : (tensor<1x16xf32>, tensor<f32>) -> tensor<1x16xf32>
  %s = pcc.sqrt %ve : tensor<1x16xf32>
  %n = pcc.div %d, %s : (tensor<2x16xf32>, tensor<1x16xf32>) -> tensor<2x16xf32>
  %m = pcc.mul %n, %g : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %y = pcc.add %m, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// The centered value has a third user: raising would duplicate work.
// CHECK-LABEL: func @extra_use
// CHECK-NOT: pcc.layer_norm
func.func @extra_use(%x: tensor<2x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<2x16xf32>, tensor<2x16xf32>) {
  %two = pcc.constant dense<2.0> : tensor<f32>
  %eps = pcc.constant dense<1.0e-5> : tensor<f32>
  %mean = pcc.reduce_mean %x {axes = array<i64: 1>} : (tensor<2x16xf32>) -> tensor<2x1xf32>
  %d = pcc.sub %x, %mean : (tensor<2x16xf32>, tensor<2x1xf32>) -> tensor<2x16xf32>
  %sq = pcc.pow %d, %two : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %var = pcc.reduce_mean %sq {axes = array<i64: 1>} : (tensor<2x16xf32>) -> tensor<2x1xf32>
  %ve = pcc.add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = pcc.sqrt %ve : tensor<2x1xf32>
  %n = pcc.div %d, %s : (tensor<2x16xf32>, tensor<2x1xf32>) -> tensor<2x16xf32>
  %m = pcc.mul %n, %g : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %y = pcc.add %m, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  return %y, %d : tensor<2x16xf32>, tensor<2x16xf32>
}
