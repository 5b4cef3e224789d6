// A tensor-core attention with mask operands reads its heads in place too
// (`seq_first`): Megatron-style exports add a -10000 triangle, BERT-style
// ones a per-sequence padding mask. Problem b of the kernel is head
// b % heads of sequence b / heads, so a mask's batch table runs over
// [B, H]: a [2, 1, 1, 128] padding mask gives sequence 0's row to both of
// its heads, then sequence 1's; a [128, 128] triangle is one for all.
// RUN: pcc-translate --pcc-to-cuda %s | FileCheck %s

// CHECK-LABEL: // unit: model.cu
// CHECK-NOT: stridedCopy
// CHECK: static const int64_t addBatch[[A:[0-9]+]][] = {0, 0, 128, 128};
// CHECK: masks[[A]].addRow = 0;
// CHECK: attention16<BFloat16>(in0, in1, in2, {{.*}}, 4, 128, 128, 64, {{.*}}, masks[[A]], 2);
// CHECK: static const int64_t addBatch[[B:[0-9]+]][] = {0, 0, 0, 0};
// CHECK: masks[[B]].addRow = 128;
// CHECK: attention16<BFloat16>({{.*}}, 4, 128, 128, 64, {{.*}}, masks[[B]], 2);
// CHECK-NOT: stridedCopy
func.func @main(%q: tensor<2x128x2x64xbf16>, %k: tensor<2x128x2x64xbf16>, %v: tensor<2x128x2x64xbf16>, %pad: tensor<2x1x1x128xbf16>, %tri: tensor<128x128xbf16>) -> (tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>) {
  %qt = pcc.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x128x2x64xbf16>) -> tensor<2x2x128x64xbf16>
  %kt = pcc.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x128x2x64xbf16>) -> tensor<2x2x128x64xbf16>
  %vt = pcc.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x128x2x64xbf16>) -> tensor<2x2x128x64xbf16>
  %o = pcc.attention %qt, %kt, %vt mask %pad {scale = 0.125 : f64} : (tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x1x1x128xbf16>) -> tensor<2x2x128x64xbf16>
  %m = pcc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x128x64xbf16>) -> tensor<2x128x2x64xbf16>
  %o2 = pcc.attention %qt, %kt, %vt mask %tri {scale = 0.125 : f64} : (tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<128x128xbf16>) -> tensor<2x2x128x64xbf16>
  %m2 = pcc.transpose %o2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x128x64xbf16>) -> tensor<2x128x2x64xbf16>
  return %m, %m2 : tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>
}
