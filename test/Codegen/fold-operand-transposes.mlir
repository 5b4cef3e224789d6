// GEMMs read 2-D transposes through their transA / transB flags
// (FoldOperandTransposes.cpp): no strided copy of the matrix, and no
// buffer for it in the arena.
// RUN: pcc-translate --pcc-to-cpp --split-input-file %s | FileCheck %s

// nn.Linear as a training export writes it, MatMul(x, Transpose(W)): one
// GEMM reading W [6, 8] with transB, the batch's rows kept (2 x 4).
// CHECK-LABEL: // unit: model.cpp
// CHECK-NOT: stridedCopy
// CHECK: // pcc.gemm
// CHECK-NEXT: gemmF32(false, true, 8, 6, 8, {{.*}}, in0, 8, in1, 8, {{.*}}, out0, 6);
// CHECK-NOT: stridedCopy
func.func @main(%x: tensor<2x4x8xf32>, %w: tensor<6x8xf32>) -> tensor<2x4x6xf32> {
  %t = pcc.transpose %w {perm = array<i64: 1, 0>} : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %y = pcc.matmul %x, %t : (tensor<2x4x8xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32>
  return %y : tensor<2x4x6xf32>
}

// -----

// A Gemm's transposed operands flip its flags: A^T read as transA, and a
// transposed B^T (transB of a transpose) read as B.
// CHECK-LABEL: // unit: model.cpp
// CHECK-NOT: stridedCopy
// CHECK: // pcc.gemm
// CHECK-NEXT: gemmF32(true, false, 4, 6, 8, {{.*}}, in0, 4, in1, 6, {{.*}}, out0, 6);
func.func @main(%a: tensor<8x4xf32>, %b: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %at = pcc.transpose %a {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %bt = pcc.transpose %b {perm = array<i64: 1, 0>} : (tensor<8x6xf32>) -> tensor<6x8xf32>
  %y = pcc.gemm %at, %bt {transB = true} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// A transpose also read by an op that is not a GEMM stays for that reader;
// the GEMM still reads the matrix itself.
// CHECK-LABEL: // unit: model.cpp
// CHECK: // pcc.transpose
// CHECK-NEXT: static const int64_t shape
// CHECK: // pcc.gemm
// CHECK-NEXT: gemmF32(false, true, 4, 6, 8, {{.*}}, in0, 8, in1, 8, {{.*}}, out0, 6);
func.func @main(%x: tensor<4x8xf32>, %w: tensor<6x8xf32>) -> (tensor<4x6xf32>, tensor<8x6xf32>) {
  %t = pcc.transpose %w {perm = array<i64: 1, 0>} : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %y = pcc.matmul %x, %t : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %n = pcc.neg %t : tensor<8x6xf32>
  return %y, %n : tensor<4x6xf32>, tensor<8x6xf32>
}

