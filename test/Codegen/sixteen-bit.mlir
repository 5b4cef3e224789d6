// fp16 and bf16 on the CPU target: stored in 16 bits (pccrt::Half,
// pccrt::BFloat16), computed in float. Kernels that run on f32 (the GEMM,
// the layer norm) get their float operands widened and their results
// narrowed by casts, which fuse into the neighbouring loops; every 16-bit
// result inside a fused chain rounds as if it were stored.
// RUN: pcc-translate --pcc-to-cpp %s | FileCheck %s

// CHECK: const BFloat16 *in0 = static_cast<const BFloat16 *>(inputs[0]);
// CHECK: const Half *in3 = static_cast<const Half *>(inputs[3]);
// CHECK: const BFloat16 *v0 = reinterpret_cast<const BFloat16 *>(weights + 0);
// CHECK: BFloat16 *out0 = static_cast<BFloat16 *>(outputs[0]);
// CHECK: Half *out1 = static_cast<Half *>(outputs[1]);
// CHECK: { // fused: cast
// CHECK-NEXT: for (int64_t i = 0; i < 32; ++i) {
// CHECK-NEXT: const float a0 = in0[i];
// CHECK-NEXT: const float [[X:t[0-9]+]] = static_cast<float>(a0);
// CHECK: { // fused: cast
// CHECK: const float a0 = v0[i];
// CHECK: // pcc.matmul
// CHECK-NEXT: gemmF32(false, false, 4, 8, 8, 1.0f, [[XA:v[0-9]+]], 8, [[WA:v[0-9]+]], 8, 0.0f, [[MA:v[0-9]+]], 8);
// CHECK: { // fused: cast add cast
// CHECK: const float a0 = [[MA]][i0 * 8 + i1 * 1];
// CHECK-NEXT: const float a1 = in2[i1 * 1];
// CHECK-NEXT: const float [[M:t[0-9]+]] = roundToBFloat16(static_cast<float>(a0));
// CHECK-NEXT: const float [[A:t[0-9]+]] = roundToBFloat16(([[M]] + a1));
// CHECK-NEXT: const float [[W:t[0-9]+]] = static_cast<float>([[A]]);
// CHECK: // pcc.layer_norm
// CHECK-NEXT: layerNorm<float>(
// CHECK: { // fused: cast
// CHECK: = roundToBFloat16(static_cast<float>(a0));
// CHECK-NEXT: out0[i] =
// CHECK: { // fused: exp cast cast tanh
// CHECK-NEXT: for (int64_t i = 0; i < 32; ++i) {
// CHECK-NEXT: const float a0 = in3[i];
// CHECK-NEXT: const float [[E:t[0-9]+]] = roundToHalf(__builtin_expf(a0));
// CHECK-NEXT: const float [[F:t[0-9]+]] = static_cast<float>([[E]]);
// CHECK-NEXT: const float [[H:t[0-9]+]] = roundToHalf(static_cast<float>([[F]]));
// CHECK-NEXT: const float [[TT:t[0-9]+]] = roundToHalf(pccTanh([[H]]));
// CHECK-NEXT: out1[i] = [[TT]];
func.func @main(%x: tensor<4x8xbf16>, %g: tensor<8xbf16>, %b: tensor<8xbf16>, %h: tensor<4x8xf16>) -> (tensor<4x8xbf16>, tensor<4x8xf16>) {
  %w = pcc.weight "w" : tensor<8x8xbf16>
  %m = pcc.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %a = pcc.add %m, %b : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %ln = pcc.layer_norm %a, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %e = pcc.exp %h : tensor<4x8xf16>
  %c = pcc.cast %e {to = f32} : tensor<4x8xf16> -> tensor<4x8xf32>
  %r = pcc.cast %c {to = f16} : tensor<4x8xf32> -> tensor<4x8xf16>
  %t = pcc.tanh %r : tensor<4x8xf16>
  return %ln, %t : tensor<4x8xbf16>, tensor<4x8xf16>
}
