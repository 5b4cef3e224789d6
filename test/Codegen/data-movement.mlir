// Data movement on the CPU target: strided copies, splits, concatenation,
// gathers and triangles.
// RUN: pcc-translate --pcc-to-cpp %s | FileCheck %s

// A transpose reads its input with permuted strides.
// CHECK: // pcc.transpose
// CHECK-NEXT: static const int64_t shape0[] = {2, 64, 16};
// CHECK-NEXT: static const int64_t strides0[] = {1024, 1, 64};
// CHECK-NEXT: stridedCopy(4, reinterpret_cast<const char *>(in0), reinterpret_cast<char *>(out0), 3, shape0, 0, strides0);
// A negative step starts at element 15 x 64 and walks back two rows a step.
// CHECK: // pcc.slice
// CHECK: static const int64_t strides1[] = {1024, -128, 1};
// CHECK-NEXT: stridedCopy(4, {{.*}}, 3, shape1, 960, strides1);
// CHECK: // pcc.split
// CHECK: static const int64_t sizes2[] = {16, 48};
// CHECK-NEXT: split(4, reinterpret_cast<const char *>(in0), 2, parts2, sizes2, 32, 1);
// CHECK: // pcc.concat
// CHECK: static const int64_t sizes3[] = {48, 16};
// CHECK-NEXT: concat(4, 2, parts3, sizes3, reinterpret_cast<char *>(out2), 32, 1);
// Out-of-range ids end the run with an error instead of reading outside.
// CHECK: // pcc.gather
// CHECK-NEXT: if (!gather(4, reinterpret_cast<const char *>(in1), in2, reinterpret_cast<char *>(out3), 1, 128, 32, 64))
// CHECK-NEXT: return false;
// CHECK: // pcc.trilu
// CHECK-NEXT: trilu<float>(in0, out4, 2, 16, 64, false, 1);
func.func @main(%x: tensor<2x16x64xf32>, %e: tensor<128x64xf32>, %ids: tensor<2x16xi64>) -> (tensor<2x64x16xf32>, tensor<2x8x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>) {
  %0 = pcc.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x16x64xf32>) -> tensor<2x64x16xf32>
  %1 = pcc.slice %x {starts = array<i64: 0, 15, 0>, sizes = array<i64: 2, 8, 64>, steps = array<i64: 1, -2, 1>} : (tensor<2x16x64xf32>) -> tensor<2x8x64xf32>
  %2:2 = pcc.split %x {axis = 2 : i64, sizes = array<i64: 16, 48>} : (tensor<2x16x64xf32>) -> (tensor<2x16x16xf32>, tensor<2x16x48xf32>)
  %3 = pcc.concat %2#1, %2#0 {axis = 2 : i64} : (tensor<2x16x48xf32>, tensor<2x16x16xf32>) -> tensor<2x16x64xf32>
  %4 = pcc.gather %e, %ids {axis = 0 : i64} : (tensor<128x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  %5 = pcc.trilu %x {upper = false, k = 1 : i64} : tensor<2x16x64xf32>
  return %0, %1, %3, %4, %5 : tensor<2x64x16xf32>, tensor<2x8x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>
}
