// RUN: pcc-opt %s -canonicalize -split-input-file | FileCheck %s
// Folders evaluate the shape arithmetic torch.onnx.export leaves behind.

// CHECK-LABEL: func @shape_arith
func.func @shape_arith() -> tensor<3xi64> {
  // CHECK-NEXT: %[[C:.*]] = pcc.constant dense<[2, 16, 64]> : tensor<3xi64>
  // CHECK-NEXT: return %[[C]]
  %shape = pcc.constant dense<[2, 16, 4, 16]> : tensor<4xi64>
  %i = pcc.constant dense<[0, 1]> : tensor<2xi64>
  %lead = pcc.gather %shape, %i {axis = 0 : i64} : (tensor<4xi64>, tensor<2xi64>) -> tensor<2xi64>
  %h = pcc.slice %shape {starts = array<i64: 2>, sizes = array<i64: 1>, steps = array<i64: 1>} : (tensor<4xi64>) -> tensor<1xi64>
  %d = pcc.slice %shape {starts = array<i64: 3>, sizes = array<i64: 1>, steps = array<i64: 1>} : (tensor<4xi64>) -> tensor<1xi64>
  %hd = pcc.mul %h, %d : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %r = pcc.concat %lead, %hd {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  return %r : tensor<3xi64>
}

// -----

// CHECK-LABEL: func @causal_mask
func.func @causal_mask() -> tensor<3x3xi1> {
  // CHECK-NEXT: pcc.constant dense<{{\[}}[false, true, true], [false, false, true], [false, false, false]]> : tensor<3x3xi1>
  %ones = pcc.constant dense<true> : tensor<3x3xi1>
  %tril = pcc.trilu %ones {upper = false, k = 0 : i64} : tensor<3x3xi1>
  %mask = pcc.not %tril : tensor<3x3xi1>
  return %mask : tensor<3x3xi1>
}

// -----

// CHECK-LABEL: func @broadcast_compare_where
func.func @broadcast_compare_where() -> tensor<2x3xi64> {
  // CHECK-NEXT: pcc.constant dense<{{\[}}[1, 7, 7], [1, 1, 7]]> : tensor<2x3xi64>
  %a = pcc.constant dense<[[0], [1]]> : tensor<2x1xi64>
  %b = pcc.constant dense<[0, 1, 2]> : tensor<3xi64>
  %c = pcc.less %a, %b : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %seven = pcc.constant dense<7> : tensor<i64>
  %one = pcc.constant dense<1> : tensor<i64>
  %r = pcc.where %c, %seven, %one : (tensor<2x3xi1>, tensor<i64>, tensor<i64>) -> tensor<2x3xi64>
  return %r : tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func @float_scalars
func.func @float_scalars() -> (tensor<f32>, tensor<3xi64>, tensor<2xf32>) {
  // CHECK-DAG: pcc.constant dense<8.000000e+00> : tensor<f32>
  // CHECK-DAG: pcc.constant dense<[-1, 2, 0]> : tensor<3xi64>
  // CHECK-DAG: pcc.constant dense<[2.500000e-01, 1.000000e+00]> : tensor<2xf32>
  %x = pcc.constant dense<64.0> : tensor<f32>
  %s = pcc.sqrt %x : tensor<f32>
  %f = pcc.constant dense<[-1.7, 2.9, 0.2]> : tensor<3xf32>
  %i = pcc.cast %f {to = i64} : tensor<3xf32> -> tensor<3xi64>
  %n = pcc.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %d = pcc.constant dense<4.0> : tensor<f32>
  %q = pcc.div %n, %d : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  return %s, %i, %q : tensor<f32>, tensor<3xi64>, tensor<2xf32>
}

// -----

// Integer division by zero is left for the runtime to report.
// CHECK-LABEL: func @no_fold_div_zero
func.func @no_fold_div_zero() -> tensor<i64> {
  // CHECK: pcc.div
  %a = pcc.constant dense<4> : tensor<i64>
  %z = pcc.constant dense<0> : tensor<i64>
  %r = pcc.div %a, %z : (tensor<i64>, tensor<i64>) -> tensor<i64>
  return %r : tensor<i64>
}

// -----

// CHECK-LABEL: func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
func.func @identities(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<6xf32>) {
  // CHECK-NEXT: %[[R:.*]] = pcc.reshape %[[X]] {shape = array<i64: 6>}
  // CHECK-NEXT: return %[[X]], %[[R]]
  %t = pcc.transpose %x {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = pcc.expand %t {shape = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %r1 = pcc.reshape %x {shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %r2 = pcc.reshape %r1 {shape = array<i64: 6>} : (tensor<3x2xf32>) -> tensor<6xf32>
  return %e, %r2 : tensor<2x3xf32>, tensor<6xf32>
}

// -----

// CHECK-LABEL: func @transpose_expand_consts
func.func @transpose_expand_consts() -> (tensor<3x2xi64>, tensor<2x2xi64>) {
  // CHECK-DAG: pcc.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi64>
  // CHECK-DAG: pcc.constant dense<{{\[}}[1, 2], [1, 2]]> : tensor<2x2xi64>
  %a = pcc.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %t = pcc.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %b = pcc.constant dense<[1, 2]> : tensor<2xi64>
  %e = pcc.expand %b {shape = array<i64: 2, 1>} : (tensor<2xi64>) -> tensor<2x2xi64>
  return %t, %e : tensor<3x2xi64>, tensor<2x2xi64>
}
