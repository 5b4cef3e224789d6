// RUN: pcc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(pcc-pad-vocabulary{tensor-degree=2 multiple=4}))' | FileCheck %s

// A tied head with a trained bias and a cross-entropy: 37 rows padded to
// 40 (a multiple of 4 x 2). The log-softmax and the sum read the pad
// columns hidden; the one-hot's constant repeats its last column; the
// logits returned are sliced back to 37.
// CHECK-LABEL: func.func @tied
// CHECK-SAME: -> (tensor<2x4x40xf32> {pcc.unpadded = array<i64: 2, 4, 37>}, tensor<f32>)
// CHECK-SAME: pcc.padded_vocabulary = array<i64: 37, 40, 8>
// CHECK: %[[W:.*]] = pcc.weight "wte" unpadded [37, 16] : tensor<40x16xf32>
// CHECK: %[[B:.*]] = pcc.weight "bias" unpadded [37] : tensor<40xf32>
// CHECK: pcc.gather %[[W]], %{{.*}} : (tensor<40x16xf32>, tensor<2x4xi64>) -> tensor<2x4x16xf32>
// CHECK: %[[WT:.*]] = pcc.transpose %[[W]] {{.*}} -> tensor<16x40xf32>
// CHECK: %[[L:.*]] = pcc.matmul %{{.*}}, %[[WT]] {{.*}} -> tensor<2x4x40xf32>
// CHECK: %[[LB:.*]] = pcc.add %[[L]], %[[B]] {{.*}} -> tensor<2x4x40xf32>
// CHECK: %[[R:.*]] = pcc.reshape %[[LB]] {shape = array<i64: 8, 40>}
// CHECK: %[[M:.*]] = pcc.constant dense<{{\[\[}}true, {{.*}}, true, false, false, false]]> : tensor<1x40xi1>
// CHECK: %[[LOW:.*]] = pcc.constant dense<-3.40282347E+38> : tensor<1x1xf32>
// CHECK: %[[H:.*]] = pcc.where %[[M]], %[[R]], %[[LOW]]
// CHECK: %[[LP:.*]] = pcc.log_softmax %[[H]] {axis = 1 : i64} : tensor<8x40xf32>
// CHECK: %[[POS:.*]] = pcc.constant dense<{{\[\[}}0, 1, {{.*}}, 35, 36, 36, 36, 36]]> : tensor<1x40xi64>
// CHECK: %[[EQ:.*]] = pcc.equal %{{.*}}, %[[POS]] {{.*}} -> tensor<8x40xi1>
// CHECK: %[[OH:.*]] = pcc.cast %[[EQ]] {to = f32} : tensor<8x40xi1> -> tensor<8x40xf32>
// CHECK: %[[P:.*]] = pcc.mul %[[LP]], %[[OH]]
// CHECK: %[[ZERO:.*]] = pcc.constant dense<0.000000e+00> : tensor<1x1xf32>
// CHECK: %[[HP:.*]] = pcc.where %{{.*}}, %[[P]], %[[ZERO]]
// CHECK: %[[S:.*]] = pcc.reduce_sum %[[HP]]
// CHECK: return %[[LB]], %[[S]] : tensor<2x4x40xf32>, tensor<f32>
func.func @tied(%ids: tensor<2x4xi64>, %labels: tensor<8xi64>) -> (tensor<2x4x37xf32>, tensor<f32>) {
  %w = pcc.weight "wte" : tensor<37x16xf32>
  %b = pcc.weight "bias" : tensor<37xf32>
  %x = pcc.gather %w, %ids {axis = 0 : i64} : (tensor<37x16xf32>, tensor<2x4xi64>) -> tensor<2x4x16xf32>
  %wt = pcc.transpose %w {perm = array<i64: 1, 0>} : (tensor<37x16xf32>) -> tensor<16x37xf32>
  %l = pcc.matmul %x, %wt : (tensor<2x4x16xf32>, tensor<16x37xf32>) -> tensor<2x4x37xf32>
  %lb = pcc.add %l, %b : (tensor<2x4x37xf32>, tensor<37xf32>) -> tensor<2x4x37xf32>
  %r = pcc.reshape %lb {shape = array<i64: 8, 37>} : (tensor<2x4x37xf32>) -> tensor<8x37xf32>
  %lp = pcc.log_softmax %r {axis = 1 : i64} : tensor<8x37xf32>
  %pos = pcc.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36]]> : tensor<1x37xi64>
  %lr = pcc.reshape %labels {shape = array<i64: 8, 1>} : (tensor<8xi64>) -> tensor<8x1xi64>
  %eq = pcc.equal %lr, %pos : (tensor<8x1xi64>, tensor<1x37xi64>) -> tensor<8x37xi1>
  %oh = pcc.cast %eq {to = f32} : tensor<8x37xi1> -> tensor<8x37xf32>
  %pr = pcc.mul %lp, %oh : (tensor<8x37xf32>, tensor<8x37xf32>) -> tensor<8x37xf32>
  %s = pcc.reduce_sum %pr {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x37xf32>) -> tensor<f32>
  return %lb, %s : tensor<2x4x37xf32>, tensor<f32>
}

// -----

// A separate head as Gemm (transB) with its bias: both padded on the
// vocabulary's rows. A mean over the vocabulary reads the logits sliced
// back (a mean of pad columns would divide by 40); a softmax over
// another axis carries them; a sum over the batch keeps them apart.
// CHECK-LABEL: func.func @gemm_head
// CHECK-SAME: -> (tensor<8x1xf32>, tensor<40xf32> {pcc.unpadded = array<i64: 37>}, tensor<8x16xf32>)
// CHECK: %[[W:.*]] = pcc.weight "head" unpadded [37, 16] : tensor<40x16xf32>
// CHECK: %[[B:.*]] = pcc.weight "head_bias" unpadded [37] : tensor<40xf32>
// CHECK: %[[L:.*]] = pcc.gemm %{{.*}}, %[[W]], %[[B]] {transB = true} {{.*}} -> tensor<8x40xf32>
// CHECK: %[[C:.*]] = pcc.slice %[[L]] {{.*}} -> tensor<8x37xf32>
// CHECK: pcc.reduce_mean %[[C]] {axes = array<i64: 1>
// CHECK: %[[SM:.*]] = pcc.softmax %[[L]] {axis = 0 : i64} : tensor<8x40xf32>
// CHECK: %[[SUM:.*]] = pcc.reduce_sum %[[SM]] {axes = array<i64: 0>, keepdims = false} {{.*}} -> tensor<40xf32>
// CHECK: return %{{.*}}, %[[SUM]], %{{.*}} : tensor<8x1xf32>, tensor<40xf32>, tensor<8x16xf32>
func.func @gemm_head(%ids: tensor<8xi64>, %h: tensor<8x16xf32>) -> (tensor<8x1xf32>, tensor<37xf32>, tensor<8x16xf32>) {
  %e = pcc.weight "wte" : tensor<37x16xf32>
  %w = pcc.weight "head" : tensor<37x16xf32>
  %b = pcc.weight "head_bias" : tensor<37xf32>
  %x = pcc.gather %e, %ids {axis = 0 : i64} : (tensor<37x16xf32>, tensor<8xi64>) -> tensor<8x16xf32>
  %l = pcc.gemm %h, %w, %b {transB = true} : (tensor<8x16xf32>, tensor<37x16xf32>, tensor<37xf32>) -> tensor<8x37xf32>
  %m = pcc.reduce_mean %l {axes = array<i64: 1>, keepdims = true} : (tensor<8x37xf32>) -> tensor<8x1xf32>
  %sm = pcc.softmax %l {axis = 0 : i64} : tensor<8x37xf32>
  %s = pcc.reduce_sum %sm {axes = array<i64: 0>, keepdims = false} : (tensor<8x37xf32>) -> tensor<37xf32>
  return %m, %s, %x : tensor<8x1xf32>, tensor<37xf32>, tensor<8x16xf32>
}

// -----

// A vocabulary the degree divides is left alone.
// CHECK-LABEL: func.func @divides
// CHECK-NOT: padded_vocabulary
// CHECK: pcc.weight "wte" : tensor<38x16xf32>
func.func @divides(%ids: tensor<8xi64>) -> tensor<8x16xf32> {
  %e = pcc.weight "wte" : tensor<38x16xf32>
  %x = pcc.gather %e, %ids {axis = 0 : i64} : (tensor<38x16xf32>, tensor<8xi64>) -> tensor<8x16xf32>
  return %x : tensor<8x16xf32>
}

// -----

// A maximum over the batch (keepdims by default) keeps the columns apart:
// returned padded.
// CHECK-LABEL: func.func @max_over_batch
// CHECK-SAME: -> (tensor<1x40xf32> {pcc.unpadded = array<i64: 1, 37>}, tensor<8x16xf32>)
// CHECK: pcc.reduce_max %{{.*}} {axes = array<i64: 0>} : (tensor<8x40xf32>) -> tensor<1x40xf32>
func.func @max_over_batch(%ids: tensor<8xi64>, %h: tensor<8x16xf32>) -> (tensor<1x37xf32>, tensor<8x16xf32>) {
  %e = pcc.weight "wte" : tensor<37x16xf32>
  %w = pcc.weight "head" : tensor<37x16xf32>
  %x = pcc.gather %e, %ids {axis = 0 : i64} : (tensor<37x16xf32>, tensor<8xi64>) -> tensor<8x16xf32>
  %l = pcc.gemm %h, %w {transB = true} : (tensor<8x16xf32>, tensor<37x16xf32>) -> tensor<8x37xf32>
  %s = pcc.reduce_max %l {axes = array<i64: 0>} : (tensor<8x37xf32>) -> tensor<1x37xf32>
  return %s, %x : tensor<1x37xf32>, tensor<8x16xf32>
}
