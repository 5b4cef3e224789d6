// RUN: pcc-opt %s | pcc-opt | FileCheck %s
// Round trip: every op prints in a form that parses back to itself.

// CHECK-LABEL: func @values
func.func @values() -> (tensor<2xi64>, tensor<8x4xf32>, tensor<4xf32>) {
  // CHECK-NEXT: pcc.constant dense<[2, 16]> : tensor<2xi64>
  %0 = pcc.constant dense<[2, 16]> : tensor<2xi64>
  // CHECK-NEXT: pcc.weight "w" : tensor<8x4xf32>
  %1 = pcc.weight "w" : tensor<8x4xf32>
  // CHECK-NEXT: pcc.weight "b" external <"w.bin", offset = 16, length = 16> : tensor<4xf32>
  %2 = pcc.weight "b" external <"w.bin", offset = 16, length = 16> : tensor<4xf32>
  // A weight converted by --precision; external data has the file's type.
  // CHECK-NEXT: pcc.weight "h" external <"w.bin", offset = 32, length = 16> from f32 : tensor<4xbf16>
  %3 = pcc.weight "h" external <"w.bin", offset = 32, length = 16> from f32 : tensor<4xbf16>
  return %0, %1, %2 : tensor<2xi64>, tensor<8x4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func @elementwise
func.func @elementwise(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %c: tensor<2x3xi1>) -> tensor<2x3xf32> {
  // CHECK-NEXT: pcc.add %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = pcc.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: pcc.gelu %{{.*}} {approximate = "tanh"} : tensor<2x3xf32>
  %1 = pcc.gelu %0 {approximate = "tanh"} : tensor<2x3xf32>
  // CHECK-NEXT: pcc.less %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %2 = pcc.less %1, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: pcc.and
  %3 = pcc.and %2, %c : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: pcc.where
  %4 = pcc.where %3, %x, %y : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: pcc.clip %{{.*}} {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32}
  %5 = pcc.clip %4 {min = 0.0 : f32, max = 6.0 : f32} : tensor<2x3xf32>
  // CHECK-NEXT: pcc.cast %{{.*}} {to = i64} : tensor<2x3xf32> -> tensor<2x3xi64>
  %6 = pcc.cast %5 {to = i64} : tensor<2x3xf32> -> tensor<2x3xi64>
  return %5 : tensor<2x3xf32>
}

// CHECK-LABEL: func @contractions
func.func @contractions(%x: tensor<2x16x64xf32>, %w: tensor<64x256xf32>, %v: tensor<64xf32>,
                        %a: tensor<4x64xf32>, %b: tensor<128x64xf32>, %bias: tensor<128xf32>) {
  // CHECK-NEXT: pcc.matmul {{.*}} -> tensor<2x16x256xf32>
  %0 = pcc.matmul %x, %w : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  // CHECK-NEXT: pcc.matmul {{.*}} -> tensor<2x16xf32>
  %1 = pcc.matmul %x, %v : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16xf32>
  // CHECK-NEXT: pcc.gemm {{.*}} {transB = true} {{.*}} -> tensor<4x128xf32>
  %2 = pcc.gemm %a, %b, %bias {transB = true} : (tensor<4x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<4x128xf32>
  // Rows kept: A [2, 16, 64] by B [64, 256] (a linear layer's input
  // gradient, dy W^T, in place).
  // CHECK-NEXT: pcc.gemm {{.*}} -> tensor<2x16x256xf32>
  %3 = pcc.gemm %x, %w : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  // Rows contracted: x^T dy over every token (a weight's gradient).
  // CHECK-NEXT: pcc.gemm {{.*}} {transA = true} {{.*}} -> tensor<64x256xf32>
  %4 = pcc.gemm %x, %3 {transA = true} : (tensor<2x16x64xf32>, tensor<2x16x256xf32>) -> tensor<64x256xf32>
  return
}

// CHECK-LABEL: func @cnn
func.func @cnn(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>, %s: tensor<8xf32>) -> tensor<2x8x1x1xf32> {
  // CHECK-NEXT: pcc.conv {{.*}} -> tensor<2x8x16x16xf32>
  %0 = pcc.conv %x, %w, %s {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<2x8x16x16xf32>
  // CHECK-NEXT: pcc.batch_norm
  %1 = pcc.batch_norm %0, %s, %s, %s, %s {epsilon = 1.0e-5 : f32} : (tensor<2x8x16x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x16x16xf32>
  // CHECK-NEXT: pcc.max_pool {{.*}} -> tensor<2x8x8x8xf32>
  %2 = pcc.max_pool %1 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x8x16x16xf32>) -> tensor<2x8x8x8xf32>
  // CHECK-NEXT: pcc.average_pool {{.*}} -> tensor<2x8x3x3xf32>
  %3 = pcc.average_pool %2 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<2x8x8x8xf32>) -> tensor<2x8x3x3xf32>
  // CHECK-NEXT: pcc.global_average_pool {{.*}} -> tensor<2x8x1x1xf32>
  %4 = pcc.global_average_pool %3 : (tensor<2x8x3x3xf32>) -> tensor<2x8x1x1xf32>
  return %4 : tensor<2x8x1x1xf32>
}

// CHECK-LABEL: func @norms_and_reductions
func.func @norms_and_reductions(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>) {
  // CHECK-NEXT: pcc.layer_norm
  %0 = pcc.layer_norm %x, %g, %g {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK-NEXT: pcc.softmax %{{.*}} {axis = 2 : i64} : tensor<2x16x64xf32>
  %1 = pcc.softmax %0 {axis = 2 : i64} : tensor<2x16x64xf32>
  // CHECK-NEXT: pcc.reduce_mean {{.*}} -> tensor<2x16x1xf32>
  %2 = pcc.reduce_mean %1 {axes = array<i64: 2>} : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  // CHECK-NEXT: pcc.reduce_sum {{.*}} -> tensor<16xf32>
  %3 = pcc.reduce_sum %1 {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x16x64xf32>) -> tensor<16xf32>
  // CHECK-NEXT: pcc.argmax {{.*}} -> tensor<2x16xi64>
  %4 = pcc.argmax %1 {axis = 2 : i64, keepdims = false} : (tensor<2x16x64xf32>) -> tensor<2x16xi64>
  // CHECK-NEXT: pcc.topk {{.*}} -> (tensor<2x3x64xf32>, tensor<2x3x64xi64>)
  %5:2 = pcc.topk %1 {axis = 1 : i64, k = 3 : i64, largest = false} : (tensor<2x16x64xf32>) -> (tensor<2x3x64xf32>, tensor<2x3x64xi64>)
  return
}

// CHECK-LABEL: func @scatter
func.func @scatter(%x: tensor<2x16x64xf32>, %at: tensor<5x2xi64>, %u: tensor<5x64xf32>) -> tensor<2x16x64xf32> {
  // CHECK-NEXT: pcc.scatter_nd {{.*}} {reduction = "add"}
  %0 = pcc.scatter_nd %x, %at, %u {reduction = "add"} : (tensor<2x16x64xf32>, tensor<5x2xi64>, tensor<5x64xf32>) -> tensor<2x16x64xf32>
  return %0 : tensor<2x16x64xf32>
}

// CHECK-LABEL: func @movement
func.func @movement(%x: tensor<2x16x64xf32>, %ids: tensor<2x16xi64>, %e: tensor<128x64xf32>) {
  // CHECK-NEXT: pcc.reshape {{.*}} -> tensor<2x16x4x16xf32>
  %0 = pcc.reshape %x {shape = array<i64: 2, 16, 4, 16>} : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  // CHECK-NEXT: pcc.transpose {{.*}} -> tensor<2x4x16x16xf32>
  %1 = pcc.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  // CHECK-NEXT: pcc.split {{.*}} -> (tensor<2x16x16xf32>, tensor<2x16x48xf32>)
  %2:2 = pcc.split %x {axis = 2 : i64, sizes = array<i64: 16, 48>} : (tensor<2x16x64xf32>) -> (tensor<2x16x16xf32>, tensor<2x16x48xf32>)
  // CHECK-NEXT: pcc.concat {{.*}} -> tensor<2x16x64xf32>
  %3 = pcc.concat %2#1, %2#0 {axis = 2 : i64} : (tensor<2x16x48xf32>, tensor<2x16x16xf32>) -> tensor<2x16x64xf32>
  // CHECK-NEXT: pcc.slice {{.*}} -> tensor<2x8x64xf32>
  %4 = pcc.slice %3 {starts = array<i64: 0, 15, 0>, sizes = array<i64: 2, 8, 64>, steps = array<i64: 1, -2, 1>} : (tensor<2x16x64xf32>) -> tensor<2x8x64xf32>
  // CHECK-NEXT: pcc.gather {{.*}} -> tensor<2x16x64xf32>
  %5 = pcc.gather %e, %ids {axis = 0 : i64} : (tensor<128x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  // CHECK-NEXT: pcc.expand {{.*}} -> tensor<3x2x16x64xf32>
  %6 = pcc.expand %5 {shape = array<i64: 3, 1, 1, 1>} : (tensor<2x16x64xf32>) -> tensor<3x2x16x64xf32>
  // CHECK-NEXT: pcc.trilu %{{.*}} {k = 1 : i64, upper = false} : tensor<2x16x64xf32>
  %7 = pcc.trilu %5 {upper = false, k = 1 : i64} : tensor<2x16x64xf32>
  return
}

shard.grid @mesh(shape = 2x4)
// CHECK-LABEL: func.func @sharding_attr
// CHECK-SAME: pcc.sharding = #pcc.sharding<@mesh, {{\[\[}}0], []]>
// CHECK: pcc.weight "w" {pcc.sharding = [#pcc.sharding<@mesh, {{\[\[}}], [1]/3]>]}
// CHECK: pcc.sharding = [#pcc.sharding<@mesh, {{\[\[}}0], []], partial = [1]>]
func.func @sharding_attr(%x: tensor<4x16xf32> {pcc.sharding = #pcc.sharding<@mesh, [[0], []]>}) -> tensor<4x48xf32> {
  %w = pcc.weight "w" {pcc.sharding = [#pcc.sharding<@mesh, [[], [1]/3]>]} : tensor<16x48xf32>
  %y = pcc.matmul %x, %w {pcc.sharding = [#pcc.sharding<@mesh, [[0], []], partial = [1]>]} : (tensor<4x16xf32>, tensor<16x48xf32>) -> tensor<4x48xf32>
  return %y : tensor<4x48xf32>
}
