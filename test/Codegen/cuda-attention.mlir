// On GPU ranks a tensor-core attention between the head split and merge
// transposes reads and writes [B, S, H, D] in place (heads = 2 in the
// call): no strided copies are left; its causal mask is computed from
// indices.
// RUN: pcc-translate --pcc-to-cuda %s | FileCheck %s

// CHECK-LABEL: // unit: model.cu
// CHECK-NOT: stridedCopy
// CHECK: masks{{[0-9]+}}.band = true;
// CHECK: attention16<BFloat16>(in0, in1, in2, {{.*}}, 4, 128, 128, 64, static_cast<float>(1.25000000000000000e-01), false, masks{{[0-9]+}}, 2);
// CHECK-NOT: stridedCopy
func.func @main(%q: tensor<2x128x2x64xbf16>, %k: tensor<2x128x2x64xbf16>, %v: tensor<2x128x2x64xbf16>) -> tensor<2x128x2x64xbf16> {
  %ones = pcc.constant dense<true> : tensor<128x128xi1>
  %keep = pcc.trilu %ones {upper = false, k = 0 : i64} : tensor<128x128xi1>
  %hide = pcc.not %keep : tensor<128x128xi1>
  %qt = pcc.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x128x2x64xbf16>) -> tensor<2x2x128x64xbf16>
  %kt = pcc.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x128x2x64xbf16>) -> tensor<2x2x128x64xbf16>
  %vt = pcc.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x128x2x64xbf16>) -> tensor<2x2x128x64xbf16>
  %o = pcc.attention %qt, %kt, %vt hide %hide {scale = 0.125 : f64, fill = 0xFFF0000000000000 : f64} : (tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<128x128xi1>) -> tensor<2x2x128x64xbf16>
  %m = pcc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x128x64xbf16>) -> tensor<2x128x2x64xbf16>
  return %m : tensor<2x128x2x64xbf16>
}
