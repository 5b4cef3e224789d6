// RUN: pcc-opt --pcc-convert-precision=precision=bf16 %s | FileCheck %s
// RUN: pcc-opt --pcc-convert-precision=precision=fp32 %s | FileCheck %s --check-prefix=F32
// RUN: not pcc-opt --pcc-convert-precision=precision=fp8 %s 2>&1 | FileCheck %s --check-prefix=ERR

// Float tensors inside take bf16; the signature stays: a cast at entry and
// one before the return. Weights keep their file's type (`from f32`),
// float constants round now, integer ones stay, casts to a float retarget.
// CHECK: module attributes {pcc.precision = "bf16"}
// CHECK-LABEL: func @main(%arg0: tensor<2x4xf32>, %arg1: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2xi64>)
// CHECK-NEXT: %[[X:.*]] = pcc.cast %arg0 {to = bf16} : tensor<2x4xf32> -> tensor<2x4xbf16>
// CHECK-NEXT: %[[W:.*]] = pcc.weight "w" from f32 : tensor<4x3xbf16>
// CHECK-NEXT: %[[C:.*]] = pcc.constant dense<3.140630e+00> : tensor<3xbf16>
// CHECK-NEXT: %[[I:.*]] = pcc.constant dense<1> : tensor<2xi64>
// CHECK-NEXT: %[[M:.*]] = pcc.matmul %[[X]], %[[W]] : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xbf16>
// CHECK-NEXT: %[[K:.*]] = pcc.cast %arg1 {to = bf16} : tensor<2xi64> -> tensor<2xbf16>
// CHECK: %[[Y:.*]] = pcc.add %[[M]], %[[C]]
// CHECK-NEXT: %[[S:.*]] = pcc.add %arg1, %[[I]]
// CHECK-NEXT: %[[R:.*]] = pcc.cast %[[Y]] {to = f32} : tensor<2x3xbf16> -> tensor<2x3xf32>
// CHECK-NEXT: return %[[R]], %[[S]]

// Back to fp32: the weight loses nothing it did not have.
// F32: module attributes {pcc.precision = "fp32"}
// F32-NOT: pcc.cast %arg0
// F32: pcc.weight "w" : tensor<4x3xf32>

// ERR: precision must be fp32, tf32, bf16 or fp16, got 'fp8'
module {
func.func @main(%x: tensor<2x4xf32>, %i: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2xi64>) {
  %w = pcc.weight "w" : tensor<4x3xf32>
  %c = pcc.constant dense<3.14159> : tensor<3xf32>
  %one = pcc.constant dense<1> : tensor<2xi64>
  %m = pcc.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %k = pcc.cast %i {to = f32} : tensor<2xi64> -> tensor<2xf32>
  %y = pcc.add %m, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %s = pcc.add %i, %one : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %y, %s : tensor<2x3xf32>, tensor<2xi64>
}
}
