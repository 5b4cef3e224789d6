// RUN: pcc-opt --pcc-convert-precision=precision=bf16 %s | FileCheck %s
// RUN: pcc-opt --pcc-convert-precision=precision=fp16 %s | FileCheck %s --check-prefix=F16

// A scalar output's loss tail stays f32, as torch.autocast runs losses:
// the ops only the loss reads, back to the GEMM (16 bits, widened once);
// the target input is read as it came, unrounded; the tail's constant
// keeps its f32 value. The GEMM's other reader (output 1) is 16-bit.
// CHECK-LABEL: func @main(%arg0: tensor<2x4xf32>, %arg1: tensor<2x3xf32>) -> (tensor<f32>, tensor<2x3xf32>)
// CHECK-NEXT: %[[X:.*]] = pcc.cast %arg0 {to = bf16} : tensor<2x4xf32> -> tensor<2x4xbf16>
// CHECK-NOT: pcc.cast %arg1
// CHECK: %[[M:.*]] = pcc.matmul %[[X]], %{{.*}} -> tensor<2x3xbf16>
// CHECK-NEXT: %[[W:.*]] = pcc.cast %[[M]] {to = f32} : tensor<2x3xbf16> -> tensor<2x3xf32>
// CHECK-NEXT: %[[D:.*]] = pcc.sub %[[W]], %arg1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[C:.*]] = pcc.constant dense<3.141590e+00> : tensor<f32>
// CHECK-NEXT: %[[S:.*]] = pcc.mul %[[D]], %[[C]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[L:.*]] = pcc.reduce_mean %[[S]] {{.*}} -> tensor<f32>
// CHECK-NEXT: %[[Y:.*]] = pcc.relu %[[M]] : tensor<2x3xbf16>
// CHECK-NEXT: %[[R:.*]] = pcc.cast %[[Y]] {to = f32} : tensor<2x3xbf16> -> tensor<2x3xf32>
// CHECK-NEXT: return %[[L]], %[[R]]

// fp16 alike.
// F16: pcc.matmul {{.*}} -> tensor<2x3xf16>
// F16-NEXT: pcc.cast {{.*}} {to = f32} : tensor<2x3xf16> -> tensor<2x3xf32>
// F16: pcc.reduce_mean {{.*}} -> tensor<f32>
module {
func.func @main(%x: tensor<2x4xf32>, %t: tensor<2x3xf32>) -> (tensor<f32>, tensor<2x3xf32>) {
  %w = pcc.weight "w" : tensor<4x3xf32>
  %m = pcc.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %d = pcc.sub %m, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = pcc.constant dense<3.14159> : tensor<f32>
  %s = pcc.mul %d, %c : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %l = pcc.reduce_mean %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  %y = pcc.relu %m : tensor<2x3xf32>
  return %l, %y : tensor<f32>, tensor<2x3xf32>
}
}
