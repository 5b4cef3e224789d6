// A fused QKV projection's [B, S, 3 H D] result, split into Q, K and V:
// on GPU ranks the tensor-core attention reads the heads of each block in
// place (from heads 0, 2 and 4 of six, rows 384 elements apart), and the
// split goes.
// RUN: pcc-translate --pcc-to-cuda %s | FileCheck %s

// CHECK-LABEL: // unit: model.cu
// CHECK-NOT: split(
// CHECK: attention16<BFloat16>(in0, in0 + 128, in0 + 256, {{.*}}, 4, 128, 128, 64, static_cast<float>(1.25000000000000000e-01), false, masks{{[0-9]+}}, 2, 384, 384, 384);
// CHECK-NOT: split(
func.func @main(%qkv: tensor<2x128x384xbf16>) -> tensor<2x128x2x64xbf16> {
  %q, %k, %v = pcc.split %qkv {axis = 2 : i64, sizes = array<i64: 128, 128, 128>} : (tensor<2x128x384xbf16>) -> (tensor<2x128x128xbf16>, tensor<2x128x128xbf16>, tensor<2x128x128xbf16>)
  %q4 = pcc.reshape %q {shape = array<i64: 2, 128, 2, 64>} : (tensor<2x128x128xbf16>) -> tensor<2x128x2x64xbf16>
  %k4 = pcc.reshape %k {shape = array<i64: 2, 128, 2, 64>} : (tensor<2x128x128xbf16>) -> tensor<2x128x2x64xbf16>
  %v4 = pcc.reshape %v {shape = array<i64: 2, 128, 2, 64>} : (tensor<2x128x128xbf16>) -> tensor<2x128x2x64xbf16>
  %qt = pcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x128x2x64xbf16>) -> tensor<2x2x128x64xbf16>
  %kt = pcc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x128x2x64xbf16>) -> tensor<2x2x128x64xbf16>
  %vt = pcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x128x2x64xbf16>) -> tensor<2x2x128x64xbf16>
  %o = pcc.attention %qt, %kt, %vt {scale = 0.125 : f64} : (tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>) -> tensor<2x2x128x64xbf16>
  %m = pcc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x128x64xbf16>) -> tensor<2x128x2x64xbf16>
  return %m : tensor<2x128x2x64xbf16>
}

