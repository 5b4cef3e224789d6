// RUN: pcc-opt %s -pcc-raise-composites -split-input-file | FileCheck %s

// A GPT block's causal attention: Kt by a transpose of the [B, S, H, D]
// keys, scaled by Mul, hidden by Where against -inf.
// CHECK-LABEL: func @causal
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x16x4x8xf32>, %[[V:.*]]: tensor<2x4x16x8xf32>, %[[C:.*]]: tensor<16x16xi1>)
// CHECK: %[[KT:.*]] = pcc.transpose %[[K]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK: %[[A:.*]] = pcc.attention %[[Q]], %[[KT]], %[[V]] hide %[[C]] {fill = 0xFFF0000000000000 : f64, scale = 1.250000e-01 : f64}
// CHECK-NEXT: return %[[A]]
func.func @causal(%q: tensor<2x4x16x8xf32>, %k: tensor<2x16x4x8xf32>, %v: tensor<2x4x16x8xf32>, %c: tensor<16x16xi1>) -> tensor<2x4x16x8xf32> {
  %s = pcc.constant dense<0.125> : tensor<f32>
  %ninf = pcc.constant dense<0xFF800000> : tensor<f32>
  %kt = pcc.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x16x4x8xf32>) -> tensor<2x4x8x16xf32>
  %0 = pcc.matmul %q, %kt : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  %1 = pcc.mul %0, %s : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %2 = pcc.where %c, %ninf, %1 : (tensor<16x16xi1>, tensor<f32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %3 = pcc.softmax %2 {axis = 3 : i64} : tensor<2x4x16x16xf32>
  %4 = pcc.matmul %3, %v : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
  return %4 : tensor<2x4x16x8xf32>
}

// -----

// nn.MultiheadAttention: q / sqrt(d) before the product stays outside;
// the additive padding mask is the mask operand; the keep-mask form of
// Where (scores where the condition holds) hides its negation.
// CHECK-LABEL: func @mha
// CHECK: %[[QS:.*]] = pcc.div
// CHECK: %[[NOT:.*]] = pcc.not %{{.*}} : tensor<16x16xi1>
// CHECK: pcc.attention %[[QS]], %{{.*}}, %{{.*}} mask %{{.*}} hide %[[NOT]] {divide, fill = -1.000000e+04 : f64, scale = 2.000000e+00 : f64}
// CHECK-NOT: pcc.softmax
func.func @mha(%q: tensor<8x16x8xf32>, %kt: tensor<8x8x16xf32>, %v: tensor<8x16x8xf32>, %m: tensor<8x1x16xf32>, %keep: tensor<16x16xi1>) -> tensor<8x16x8xf32> {
  %r = pcc.constant dense<2.82842708> : tensor<f32>
  %two = pcc.constant dense<2.0> : tensor<f32>
  %big = pcc.constant dense<-1.0e4> : tensor<f32>
  %qs = pcc.div %q, %r : (tensor<8x16x8xf32>, tensor<f32>) -> tensor<8x16x8xf32>
  %0 = pcc.matmul %qs, %kt : (tensor<8x16x8xf32>, tensor<8x8x16xf32>) -> tensor<8x16x16xf32>
  %1 = pcc.div %0, %two : (tensor<8x16x16xf32>, tensor<f32>) -> tensor<8x16x16xf32>
  %2 = pcc.where %keep, %1, %big : (tensor<16x16xi1>, tensor<8x16x16xf32>, tensor<f32>) -> tensor<8x16x16xf32>
  %3 = pcc.add %2, %m : (tensor<8x16x16xf32>, tensor<8x1x16xf32>) -> tensor<8x16x16xf32>
  %4 = pcc.softmax %3 {axis = 2 : i64} : tensor<8x16x16xf32>
  %5 = pcc.matmul %4, %v : (tensor<8x16x16xf32>, tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  return %5 : tensor<8x16x8xf32>
}

// -----

// Scores used twice (returned as attention weights): raising would compute
// them twice, so the chain stays.
// CHECK-LABEL: func @scores_escape
// CHECK-NOT: pcc.attention
func.func @scores_escape(%q: tensor<4x16x8xf32>, %kt: tensor<4x8x16xf32>, %v: tensor<4x16x8xf32>) -> (tensor<4x16x8xf32>, tensor<4x16x16xf32>) {
  %0 = pcc.matmul %q, %kt : (tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<4x16x16xf32>
  %1 = pcc.softmax %0 {axis = 2 : i64} : tensor<4x16x16xf32>
  %2 = pcc.matmul %1, %v : (tensor<4x16x16xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  return %2, %1 : tensor<4x16x8xf32>, tensor<4x16x16xf32>
}

// -----

// A softmax over another axis is not attention.
// CHECK-LABEL: func @other_axis
// CHECK-NOT: pcc.attention
func.func @other_axis(%q: tensor<4x16x8xf32>, %kt: tensor<4x8x16xf32>, %v: tensor<4x16x8xf32>) -> tensor<4x16x8xf32> {
  %0 = pcc.matmul %q, %kt : (tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<4x16x16xf32>
  %1 = pcc.softmax %0 {axis = 1 : i64} : tensor<4x16x16xf32>
  %2 = pcc.matmul %1, %v : (tensor<4x16x16xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  return %2 : tensor<4x16x8xf32>
}
