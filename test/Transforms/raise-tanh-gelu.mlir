// RUN: pcc-opt %s -pcc-raise-composites -split-input-file | FileCheck %s

// Hugging Face's gelu_new after a bias add, as torch exports it:
// (x * 0.5) * (1 + tanh(0.7978845608 * (x + 0.044715 * pow(x, 3)))).
// CHECK-LABEL: func @gelu_new
// CHECK: %[[X:.*]] = pcc.add %arg0, %arg1
// CHECK-NEXT: %[[G:.*]] = pcc.gelu %[[X]] {approximate = "tanh"} : tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_new(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %one = pcc.constant dense<1.0> : tensor<f32>
  %c = pcc.constant dense<0.797884583> : tensor<f32>
  %k = pcc.constant dense<4.471500e-02> : tensor<f32>
  %three = pcc.constant dense<3.0> : tensor<f32>
  %half = pcc.constant dense<0.5> : tensor<f32>
  %x = pcc.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %0 = pcc.mul %x, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = pcc.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = pcc.mul %1, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = pcc.add %x, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = pcc.mul %3, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %5 = pcc.tanh %4 : tensor<4x8xf32>
  %6 = pcc.add %5, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %7 = pcc.mul %0, %6 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %7 : tensor<4x8xf32>
}

// -----

// Megatron's bias_gelu in f16: x * 0.5 * (1 + tanh(0.79788456 * x *
// (1 + 0.044715 * x * x))); the constants are f16-rounded.
// CHECK-LABEL: func @megatron_f16
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf16>)
// CHECK-NEXT: %[[G:.*]] = pcc.gelu %[[X]] {approximate = "tanh"} : tensor<4x8xf16>
// CHECK-NEXT: return %[[G]]
func.func @megatron_f16(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %one = pcc.constant dense<1.0> : tensor<f16>
  %c = pcc.constant dense<0.79788456> : tensor<f16>
  %k = pcc.constant dense<4.471500e-02> : tensor<f16>
  %half = pcc.constant dense<0.5> : tensor<f16>
  %0 = pcc.mul %x, %half : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %1 = pcc.mul %x, %c : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %2 = pcc.mul %x, %k : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %3 = pcc.mul %2, %x : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %4 = pcc.add %3, %one : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %5 = pcc.mul %1, %4 : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %6 = pcc.tanh %5 : tensor<4x8xf16>
  %7 = pcc.add %6, %one : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %8 = pcc.mul %0, %7 : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  return %8 : tensor<4x8xf16>
}

// -----

// 0.04 instead of 0.044715 is another function: left alone.
// CHECK-LABEL: func @wrong_constant
// CHECK-NOT: pcc.gelu
func.func @wrong_constant(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %one = pcc.constant dense<1.0> : tensor<f32>
  %c = pcc.constant dense<0.797884583> : tensor<f32>
  %k = pcc.constant dense<4.0e-02> : tensor<f32>
  %three = pcc.constant dense<3.0> : tensor<f32>
  %half = pcc.constant dense<0.5> : tensor<f32>
  %0 = pcc.mul %x, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = pcc.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = pcc.mul %1, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = pcc.add %x, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = pcc.mul %3, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %5 = pcc.tanh %4 : tensor<4x8xf32>
  %6 = pcc.add %5, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %7 = pcc.mul %0, %6 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %7 : tensor<4x8xf32>
}

// -----

// The tanh's result is also a model output: raising would lose it.
// CHECK-LABEL: func @intermediate_read_elsewhere
// CHECK-NOT: pcc.gelu
func.func @intermediate_read_elsewhere(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %one = pcc.constant dense<1.0> : tensor<f32>
  %c = pcc.constant dense<0.797884583> : tensor<f32>
  %k = pcc.constant dense<4.471500e-02> : tensor<f32>
  %three = pcc.constant dense<3.0> : tensor<f32>
  %half = pcc.constant dense<0.5> : tensor<f32>
  %0 = pcc.mul %x, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = pcc.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = pcc.mul %1, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = pcc.add %x, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = pcc.mul %3, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %5 = pcc.tanh %4 : tensor<4x8xf32>
  %6 = pcc.add %5, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %7 = pcc.mul %0, %6 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %7, %5 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Integer products are never GELU (and must not be taken for one).
// CHECK-LABEL: func @integers
// CHECK: pcc.mul
func.func @integers(%x: tensor<4xi64>, %y: tensor<4xi64>) -> tensor<4xi64> {
  %0 = pcc.mul %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
