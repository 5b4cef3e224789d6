// RUN: pcc-opt --pcc-split-merged-heads --split-input-file %s | FileCheck %s

// nn.MultiheadAttention's [S, B, H*D] -> [S, B*H, D] views: the merged axis
// becomes [B, H] through the transposes, the scaling and the attention, up
// to the reshape that ends the chain, which keeps its output.
// CHECK-LABEL: func @mha
// CHECK: %[[Q:.*]] = pcc.reshape %arg0 {shape = array<i64: 17, 4, 2, 16>} : (tensor<17x4x32xf32>) -> tensor<17x4x2x16xf32>
// CHECK-NEXT: %[[QT:.*]] = pcc.transpose %[[Q]] {perm = array<i64: 1, 2, 0, 3>} : (tensor<17x4x2x16xf32>) -> tensor<4x2x17x16xf32>
// CHECK-NEXT: pcc.div %[[QT]], %{{.*}} : (tensor<4x2x17x16xf32>, tensor<f32>) -> tensor<4x2x17x16xf32>
// CHECK: %[[A:.*]] = pcc.attention {{.*}} -> tensor<4x2x17x16xf32>
// CHECK-NEXT: %[[O:.*]] = pcc.transpose %[[A]] {perm = array<i64: 2, 0, 1, 3>} : (tensor<4x2x17x16xf32>) -> tensor<17x4x2x16xf32>
// CHECK-NEXT: pcc.reshape %[[O]] {shape = array<i64: 68, 32>} : (tensor<17x4x2x16xf32>) -> tensor<68x32xf32>
func.func @mha(%x: tensor<17x4x32xf32>, %k: tensor<17x4x32xf32>, %v: tensor<17x4x32xf32>) -> tensor<68x32xf32> {
  %c = pcc.constant dense<4.0> : tensor<f32>
  %0 = pcc.reshape %x {shape = array<i64: 17, 8, 16>} : (tensor<17x4x32xf32>) -> tensor<17x8x16xf32>
  %1 = pcc.transpose %0 {perm = array<i64: 1, 0, 2>} : (tensor<17x8x16xf32>) -> tensor<8x17x16xf32>
  %2 = pcc.div %1, %c : (tensor<8x17x16xf32>, tensor<f32>) -> tensor<8x17x16xf32>
  %3 = pcc.reshape %k {shape = array<i64: 17, 8, 16>} : (tensor<17x4x32xf32>) -> tensor<17x8x16xf32>
  %4 = pcc.transpose %3 {perm = array<i64: 1, 0, 2>} : (tensor<17x8x16xf32>) -> tensor<8x17x16xf32>
  %5 = pcc.reshape %v {shape = array<i64: 17, 8, 16>} : (tensor<17x4x32xf32>) -> tensor<17x8x16xf32>
  %6 = pcc.transpose %5 {perm = array<i64: 1, 0, 2>} : (tensor<17x8x16xf32>) -> tensor<8x17x16xf32>
  %7 = pcc.attention %2, %4, %6 : (tensor<8x17x16xf32>, tensor<8x17x16xf32>, tensor<8x17x16xf32>) -> tensor<8x17x16xf32>
  %8 = pcc.transpose %7 {perm = array<i64: 1, 0, 2>} : (tensor<8x17x16xf32>) -> tensor<17x8x16xf32>
  %9 = pcc.reshape %8 {shape = array<i64: 68, 32>} : (tensor<17x8x16xf32>) -> tensor<68x32xf32>
  return %9 : tensor<68x32xf32>
}

// -----

// The unfused form: batched matmuls and a softmax over the last axis,
// which moves with the new axis.
// CHECK-LABEL: func @matmuls
// CHECK: pcc.matmul {{.*}} -> tensor<2x3x5x5xf32>
// CHECK-NEXT: pcc.softmax {{.*}}axis = 3
// CHECK-SAME: tensor<2x3x5x5xf32>
// CHECK-NEXT: pcc.matmul {{.*}} -> tensor<2x3x5x4xf32>
// CHECK-NEXT: pcc.reshape {{.*}} : (tensor<2x3x5x4xf32>) -> tensor<6x20xf32>
func.func @matmuls(%q: tensor<2x12x5xf32>, %k: tensor<2x12x5xf32>) -> tensor<6x20xf32> {
  %0 = pcc.reshape %q {shape = array<i64: 6, 4, 5>} : (tensor<2x12x5xf32>) -> tensor<6x4x5xf32>
  %1 = pcc.transpose %0 {perm = array<i64: 0, 2, 1>} : (tensor<6x4x5xf32>) -> tensor<6x5x4xf32>
  %2 = pcc.reshape %k {shape = array<i64: 6, 4, 5>} : (tensor<2x12x5xf32>) -> tensor<6x4x5xf32>
  %3 = pcc.matmul %1, %2 : (tensor<6x5x4xf32>, tensor<6x4x5xf32>) -> tensor<6x5x5xf32>
  %4 = pcc.softmax %3 {axis = 2 : i64} : tensor<6x5x5xf32>
  %5 = pcc.matmul %4, %1 : (tensor<6x5x5xf32>, tensor<6x5x4xf32>) -> tensor<6x5x4xf32>
  %6 = pcc.reshape %5 {shape = array<i64: 6, 20>} : (tensor<6x5x4xf32>) -> tensor<6x20xf32>
  return %6 : tensor<6x20xf32>
}

// -----

// Left alone: a flattening before a GEMM (the merged axis is a matrix
// row), and a merged axis a function result holds.
// CHECK-LABEL: func @kept
// CHECK: pcc.reshape %arg0 {shape = array<i64: 8, 16>}
// CHECK: pcc.reshape %arg0 {shape = array<i64: 2, 8, 8>}
// CHECK-NEXT: pcc.transpose {{.*}} -> tensor<8x2x8xf32>
func.func @kept(%x: tensor<2x4x16xf32>, %w: tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<8x2x8xf32>) {
  %0 = pcc.reshape %x {shape = array<i64: 8, 16>} : (tensor<2x4x16xf32>) -> tensor<8x16xf32>
  %1 = pcc.matmul %0, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %2 = pcc.reshape %x {shape = array<i64: 2, 8, 8>} : (tensor<2x4x16xf32>) -> tensor<2x8x8xf32>
  %3 = pcc.transpose %2 {perm = array<i64: 1, 0, 2>} : (tensor<2x8x8xf32>) -> tensor<8x2x8xf32>
  return %1, %3 : tensor<8x16xf32>, tensor<8x2x8xf32>
}

// -----

// Left alone: an expand (its shape names the merged axis), and a pointwise
// op that broadcasts the merged value to a higher rank.
// CHECK-LABEL: func @broadcasts
// CHECK: pcc.reshape %arg0 {shape = array<i64: 8, 16>}
// CHECK: pcc.reshape %arg0 {shape = array<i64: 8, 16>}
func.func @broadcasts(%x: tensor<2x4x16xf32>, %y: tensor<3x8x16xf32>) -> (tensor<3x8x16xf32>, tensor<3x8x16xf32>) {
  %0 = pcc.reshape %x {shape = array<i64: 8, 16>} : (tensor<2x4x16xf32>) -> tensor<8x16xf32>
  %1 = pcc.expand %0 {shape = array<i64: 3, 8, 16>} : (tensor<8x16xf32>) -> tensor<3x8x16xf32>
  %2 = pcc.reshape %x {shape = array<i64: 8, 16>} : (tensor<2x4x16xf32>) -> tensor<8x16xf32>
  %3 = pcc.add %2, %y : (tensor<8x16xf32>, tensor<3x8x16xf32>) -> tensor<3x8x16xf32>
  %4 = pcc.reshape %3 {shape = array<i64: 3, 8, 16>} : (tensor<3x8x16xf32>) -> tensor<3x8x16xf32>
  return %1, %4 : tensor<3x8x16xf32>, tensor<3x8x16xf32>
}

// -----

// Hugging Face's Conv1D: a [B, S, d] input viewed as [B*S, d] rows of a
// GEMM and viewed back. The GEMM reads its rows in place (rank > 2), so the
// merged axis becomes [B, S] and a sequence split keeps through it.
// CHECK-LABEL: func @conv1d
// CHECK: %[[X:.*]] = pcc.reshape %arg0 {shape = array<i64: 2, 4, 16>} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[Y:.*]] = pcc.gemm %[[X]], %arg1, %arg2 : (tensor<2x4x16xf32>, tensor<16x48xf32>, tensor<48xf32>) -> tensor<2x4x48xf32>
// CHECK-NEXT: pcc.reshape %[[Y]] {shape = array<i64: 2, 4, 48>} : (tensor<2x4x48xf32>) -> tensor<2x4x48xf32>
func.func @conv1d(%x: tensor<2x4x16xf32>, %w: tensor<16x48xf32>, %b: tensor<48xf32>) -> tensor<2x4x48xf32> {
  %0 = pcc.reshape %x {shape = array<i64: 8, 16>} : (tensor<2x4x16xf32>) -> tensor<8x16xf32>
  %1 = pcc.gemm %0, %w, %b : (tensor<8x16xf32>, tensor<16x48xf32>, tensor<48xf32>) -> tensor<8x48xf32>
  %2 = pcc.reshape %1 {shape = array<i64: 2, 4, 48>} : (tensor<8x48xf32>) -> tensor<2x4x48xf32>
  return %2 : tensor<2x4x48xf32>
}

// -----

// Left alone: a GEMM whose merged rows are contracted (transA), and one
// whose result a function result holds.
// CHECK-LABEL: func @gemm_kept
// CHECK: pcc.reshape %arg0 {shape = array<i64: 8, 16>}
// CHECK: pcc.gemm {{.*}} -> tensor<16x16xf32>
// CHECK: pcc.reshape %arg0 {shape = array<i64: 8, 16>}
// CHECK: pcc.gemm {{.*}} -> tensor<8x48xf32>
func.func @gemm_kept(%x: tensor<2x4x16xf32>, %w: tensor<16x48xf32>) -> (tensor<16x16xf32>, tensor<8x48xf32>) {
  %0 = pcc.reshape %x {shape = array<i64: 8, 16>} : (tensor<2x4x16xf32>) -> tensor<8x16xf32>
  %1 = pcc.gemm %0, %0 {transA = true} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  %2 = pcc.reshape %x {shape = array<i64: 8, 16>} : (tensor<2x4x16xf32>) -> tensor<8x16xf32>
  %3 = pcc.gemm %2, %w : (tensor<8x16xf32>, tensor<16x48xf32>) -> tensor<8x48xf32>
  return %1, %3 : tensor<16x16xf32>, tensor<8x48xf32>
}
