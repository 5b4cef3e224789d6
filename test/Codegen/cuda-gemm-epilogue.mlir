// GPU ranks apply a 16-bit GEMM's bias and residual adds in cuBLASLt's
// epilogue (gemmEpilogue16), not in a kernel that reads the product again:
// a matmul + bias + residual chain, a matmul + residual, and a Gemm's own
// bias (no copy of it into the result first). A chain with more than adds
// (bias + GELU) keeps its fused kernel; f32 GEMMs keep cuBLAS's gemmF32.
// RUN: pcc-translate --pcc-to-cuda %s | FileCheck %s

// CHECK-LABEL: // unit: model.cu
// CHECK-LABEL: bool part0(
// CHECK-NOT: <<<
// CHECK: pcc.matmul with its epilogue (cuBLASLt): bias addend
// CHECK-NEXT: gemmEpilogue16<BFloat16>(false, false, 16, 32, 32, static_cast<float>(1.00000000000000000e+00), in0, 32, [[W:v[0-9]+]], 32, [[B:v[0-9]+]], in0, [[Y:v[0-9]+]], 32);
// CHECK: pcc.matmul with its epilogue (cuBLASLt): addend
// CHECK-NEXT: gemmEpilogue16<BFloat16>(false, false, 16, 32, 32, static_cast<float>(1.00000000000000000e+00), [[Y]], 32, [[W]], 32, nullptr, [[Y]], {{v[0-9]+}}, 32);
// CHECK: pcc.gemm with its epilogue (cuBLASLt): bias
// CHECK-NEXT: gemmEpilogue16<BFloat16>(false, true, 16, 32, 32, static_cast<float>(5.00000000000000000e-01), {{v[0-9]+}}, 32, [[W]], 32, [[B]], nullptr, {{v[0-9]+}}, 32);
// CHECK-NOT: stridedCopy
// CHECK: gemm16<BFloat16>(false, false, 16, 32, 32,
// CHECK-NEXT: fused{{[0-9]+}}<<<
// CHECK: gemmF32(
// CHECK-NOT: gemmEpilogue16
func.func @main(%x: tensor<2x8x32xbf16>, %xf: tensor<16x32xf32>) -> (tensor<16x32xbf16>, tensor<16x32xf32>) {
  %w = pcc.weight "w" : tensor<32x32xbf16>
  %b = pcc.weight "b" : tensor<32xbf16>
  %wf = pcc.weight "wf" : tensor<32x32xf32>
  %bf = pcc.weight "bf" : tensor<32xf32>
  %p = pcc.matmul %x, %w : (tensor<2x8x32xbf16>, tensor<32x32xbf16>) -> tensor<2x8x32xbf16>
  %pb = pcc.add %p, %b : (tensor<2x8x32xbf16>, tensor<32xbf16>) -> tensor<2x8x32xbf16>
  %y = pcc.add %x, %pb : (tensor<2x8x32xbf16>, tensor<2x8x32xbf16>) -> tensor<2x8x32xbf16>
  %q = pcc.matmul %y, %w : (tensor<2x8x32xbf16>, tensor<32x32xbf16>) -> tensor<2x8x32xbf16>
  %z = pcc.add %q, %y : (tensor<2x8x32xbf16>, tensor<2x8x32xbf16>) -> tensor<2x8x32xbf16>
  %z2 = pcc.reshape %z {shape = array<i64: 16, 32>} : (tensor<2x8x32xbf16>) -> tensor<16x32xbf16>
  %g = pcc.gemm %z2, %w, %b {transB = true, alpha = 0.5 : f32, beta = 1.0 : f32} : (tensor<16x32xbf16>, tensor<32x32xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  %h = pcc.matmul %g, %w : (tensor<16x32xbf16>, tensor<32x32xbf16>) -> tensor<16x32xbf16>
  %hb = pcc.add %h, %b : (tensor<16x32xbf16>, tensor<32xbf16>) -> tensor<16x32xbf16>
  %o = pcc.gelu %hb : tensor<16x32xbf16>
  %f = pcc.matmul %xf, %wf : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %fb = pcc.add %f, %bf : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
  return %o, %fb : tensor<16x32xbf16>, tensor<16x32xf32>
}
