// Reductions on the CPU target: (outer, reduced, inner) blocks.
// RUN: pcc-translate --pcc-to-cpp %s | FileCheck %s

// Axes {0, 2} are not adjacent: two passes through scratch at the arena's
// start (2 x the input's 8192 bytes is reserved for it).
// CHECK: // pcc.reduce_sum
// CHECK-NEXT: reduce<float>(ReduceKind::Sum, in0, reinterpret_cast<float *>(arena + 0), 32, 64, 1);
// CHECK-NEXT: reduce<float>(ReduceKind::Sum, reinterpret_cast<float *>(arena + 0), out0, 1, 2, 16);
// CHECK: // pcc.reduce_mean
// CHECK-NEXT: reduce<float>(ReduceKind::Mean, in0, out1, 32, 64, 1);
// CHECK: // pcc.argmax
// CHECK-NEXT: argReduce<float>(true, in0, out2, 32, 64, 1);
// Integer reductions use the element type's kernel.
// CHECK: // pcc.reduce_max
// CHECK-NEXT: reduce<int64_t>(ReduceKind::Max, in1, out3, 2, 16, 64);
// TopK over a middle axis: (outer, n, inner) lines, values and indices.
// CHECK: // pcc.topk
// CHECK-NEXT: topK<float>(in0, out4, out5, 2, 16, 64, 3, false);
func.func @main(%x: tensor<2x16x64xf32>, %i: tensor<2x16x64xi64>) -> (tensor<16xf32>, tensor<2x16x1xf32>, tensor<2x16xi64>, tensor<2x64xi64>, tensor<2x3x64xf32>, tensor<2x3x64xi64>) {
  %0 = pcc.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x16x64xf32>) -> tensor<16xf32>
  %1 = pcc.reduce_mean %x {axes = array<i64: 2>} : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %2 = pcc.argmax %x {axis = 2 : i64, keepdims = false} : (tensor<2x16x64xf32>) -> tensor<2x16xi64>
  %3 = pcc.reduce_max %i {axes = array<i64: 1>, keepdims = false} : (tensor<2x16x64xi64>) -> tensor<2x64xi64>
  %4:2 = pcc.topk %x {axis = 1 : i64, k = 3 : i64, largest = false} : (tensor<2x16x64xf32>) -> (tensor<2x3x64xf32>, tensor<2x3x64xi64>)
  return %0, %1, %2, %3, %4#0, %4#1 : tensor<16xf32>, tensor<2x16x1xf32>, tensor<2x16xi64>, tensor<2x64xi64>, tensor<2x3x64xf32>, tensor<2x3x64xi64>
}
