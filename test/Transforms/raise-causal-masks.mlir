// RUN: pcc-opt %s -pcc-raise-causal-masks -split-input-file | FileCheck %s

// torch.tril(ones) folded to a constant, negated: hide_from = 1, and the
// mask's ops go.
// CHECK-LABEL: func @tril_constant
// CHECK-NOT: pcc.not
// CHECK: pcc.attention %{{.*}}, %{{.*}}, %{{.*}} {fill = 0xFFF0000000000000 : f64, hide_from = 1 : i64, scale = 1.250000e-01 : f64}
func.func @tril_constant(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %keep = pcc.constant dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
  %hide = pcc.not %keep : tensor<4x4xi1>
  %o = pcc.attention %q, %k, %v hide %hide {scale = 0.125 : f64, fill = 0xFFF0000000000000 : f64} : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<4x4xi1>) -> tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// -----

// Trilu of a ones tensor (a splat: how a ones initializer imports), then
// `== 0` on its float form, reshaped to [1, 1, S, S].
// CHECK-LABEL: func @trilu_equal_zero
// CHECK-NOT: pcc.trilu
// CHECK: pcc.attention {{.*}}hide_from = 1 : i64
func.func @trilu_equal_zero(%q: tensor<2x2x128x8xf32>, %k: tensor<2x2x128x8xf32>, %v: tensor<2x2x128x8xf32>) -> tensor<2x2x128x8xf32> {
  %ones = pcc.constant dense<1.0> : tensor<128x128xf32>
  %zero = pcc.constant dense<0.0> : tensor<f32>
  %tril = pcc.trilu %ones {upper = false, k = 0 : i64} : tensor<128x128xf32>
  %eq = pcc.equal %tril, %zero : (tensor<128x128xf32>, tensor<f32>) -> tensor<128x128xi1>
  %r = pcc.reshape %eq {shape = array<i64: 1, 1, 128, 128>} : (tensor<128x128xi1>) -> tensor<1x1x128x128xi1>
  %o = pcc.attention %q, %k, %v hide %r {fill = 0xFFF0000000000000 : f64} : (tensor<2x2x128x8xf32>, tensor<2x2x128x8xf32>, tensor<2x2x128x8xf32>, tensor<1x1x128x128xi1>) -> tensor<2x2x128x8xf32>
  return %o : tensor<2x2x128x8xf32>
}

// -----

// triu(ones, 1) cast to bool hides directly; a buffer sliced at an offset
// shifts the band (GPT-2's bias[:, :, k - q : k, :k] with 2 past keys).
// CHECK-LABEL: func @triu_cast
// CHECK: pcc.attention {{.*}}hide_from = 1 : i64
// CHECK-LABEL: func @sliced_buffer
// CHECK: pcc.attention {{.*}}hide_from = 3 : i64
func.func @triu_cast(%q: tensor<4x96x8xf32>, %k: tensor<4x96x8xf32>, %v: tensor<4x96x8xf32>) -> tensor<4x96x8xf32> {
  %ones = pcc.constant dense<1> : tensor<96x96xi64>
  %triu = pcc.trilu %ones {upper = true, k = 1 : i64} : tensor<96x96xi64>
  %hide = pcc.cast %triu {to = i1} : tensor<96x96xi64> -> tensor<96x96xi1>
  %o = pcc.attention %q, %k, %v hide %hide {fill = -1.0e9 : f64} : (tensor<4x96x8xf32>, tensor<4x96x8xf32>, tensor<4x96x8xf32>, tensor<96x96xi1>) -> tensor<4x96x8xf32>
  return %o : tensor<4x96x8xf32>
}
func.func @sliced_buffer(%q: tensor<4x6x8xf32>, %k: tensor<4x8x8xf32>, %v: tensor<4x8x8xf32>) -> tensor<4x6x8xf32> {
  %ones = pcc.constant dense<true> : tensor<16x16xi1>
  %tril = pcc.trilu %ones {upper = false, k = 0 : i64} : tensor<16x16xi1>
  %keep = pcc.slice %tril {starts = array<i64: 2, 0>, sizes = array<i64: 6, 8>, steps = array<i64: 1, 1>} : (tensor<16x16xi1>) -> tensor<6x8xi1>
  %hide = pcc.not %keep : tensor<6x8xi1>
  %o = pcc.attention %q, %k, %v hide %hide {fill = 0xFFF0000000000000 : f64} : (tensor<4x6x8xf32>, tensor<4x8x8xf32>, tensor<4x8x8xf32>, tensor<6x8xi1>) -> tensor<4x6x8xf32>
  return %o : tensor<4x6x8xf32>
}

// -----

// A mask that hides nothing goes; one that hides everything, a lower band,
// a pattern that is no band, a mask broadcast over rows, a mask from an
// argument and ring attention keep their operand.
// CHECK-LABEL: func @kept
// CHECK: pcc.attention %{{.*}}, %{{.*}}, %{{.*}} {fill
// CHECK-NOT: hide_from
// CHECK-COUNT-5: hide %
// CHECK: hide %{{.*}} {fill = 0xFFF0000000000000 : f64, ring_axes = array<i64: 0>}
func.func @kept(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %arg: tensor<4x4xi1>) -> tensor<2x4x8xf32> {
  %none = pcc.constant dense<false> : tensor<4x4xi1>
  %all = pcc.constant dense<true> : tensor<4x4xi1>
  %lower = pcc.constant dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
  %odd = pcc.constant dense<[[false, true, false, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %row = pcc.constant dense<[[false, false, true, true]]> : tensor<1x4xi1>
  %o1 = pcc.attention %q, %k, %v hide %none {fill = 0xFFF0000000000000 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x4xi1>) -> tensor<2x4x8xf32>
  %o2 = pcc.attention %o1, %k, %v hide %all {fill = 0xFFF0000000000000 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x4xi1>) -> tensor<2x4x8xf32>
  %o3 = pcc.attention %o2, %k, %v hide %lower {fill = 0xFFF0000000000000 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x4xi1>) -> tensor<2x4x8xf32>
  %o4 = pcc.attention %o3, %k, %v hide %odd {fill = 0xFFF0000000000000 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x4xi1>) -> tensor<2x4x8xf32>
  %o5 = pcc.attention %o4, %k, %v hide %row {fill = 0xFFF0000000000000 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<1x4xi1>) -> tensor<2x4x8xf32>
  %o6 = pcc.attention %o5, %k, %v hide %arg {fill = 0xFFF0000000000000 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x4xi1>) -> tensor<2x4x8xf32>
  %triu = pcc.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %o7 = pcc.attention %o6, %k, %v hide %triu {fill = 0xFFF0000000000000 : f64, ring_axes = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x4xi1>) -> tensor<2x4x8xf32>
  return %o7 : tensor<2x4x8xf32>
}

// -----

// Hugging Face's fill, torch.finfo(float32).min: every row keeps a key, so
// the hidden scores' exp is exactly 0 and the fill becomes -inf (the kernels
// skip those pairs). A band hiding row 0's every key keeps its finite fill:
// that row's softmax is over fills, not empty.
// CHECK-LABEL: func @finite_fill
// CHECK: pcc.attention {{.*}}{fill = 0xFFF0000000000000 : f64, hide_from = 1 : i64
// CHECK-LABEL: func @finite_fill_empty_row
// CHECK: pcc.attention {{.*}}{fill = -3.4028234663852886E+38 : f64, hide_from = 0 : i64
func.func @finite_fill(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %keep = pcc.constant dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
  %hide = pcc.not %keep : tensor<4x4xi1>
  %o = pcc.attention %q, %k, %v hide %hide {fill = -3.4028234663852886E+38 : f64} : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<4x4xi1>) -> tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}
func.func @finite_fill_empty_row(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %keep = pcc.constant dense<[[false, false, false, false], [true, false, false, false], [true, true, false, false], [true, true, true, false]]> : tensor<4x4xi1>
  %hide = pcc.not %keep : tensor<4x4xi1>
  %o = pcc.attention %q, %k, %v hide %hide {fill = -3.4028234663852886E+38 : f64} : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<4x4xi1>) -> tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}
