// Pointwise chains on the CPU target: a chain runs as one loop at its last
// op (Fusion.h); an op with several users ends its chain.
// RUN: pcc-translate --pcc-to-cpp %s | FileCheck %s

// The add feeds both gelu and softmax, so it is its own loop; a broadcast
// operand is read through its own strides (the bias by column only).
// CHECK: { // fused: add
// CHECK-NEXT: for (int64_t i0 = 0; i0 < 4; ++i0)
// CHECK-NEXT: for (int64_t i1 = 0; i1 < 6; ++i1)
// CHECK: const float a0 = in0[i0 * 6 + i1 * 1];
// CHECK-NEXT: const float a1 = in1[i1 * 1];
// CHECK-NEXT: const float t0 = (a0 + a1);
// Same-shape operands need one flat index.
// CHECK: { // fused: gelu where
// CHECK-NEXT: for (int64_t i = 0; i < 24; ++i) {
// CHECK-NEXT: const float a0 = v0[i];
// CHECK-NEXT: const bool a1 = in2[i];
// CHECK-NEXT: const float a2 = in0[i];
// CHECK-NEXT: const float t1 = float(0.5) * a0 * (float(1) + pccTanh(
// CHECK-NEXT: const float t2 = (a1 ? t1 : a2);
// CHECK-NEXT: out0[i] = t2;
// CHECK: // pcc.softmax
// CHECK-NEXT: softmax<float>(v0, out1, 4, 6, 1, false);
// Integer division never traps: by zero it is 0, the minimum by -1 wraps.
// CHECK: { // fused: div
// CHECK: const int32_t t3 = (a1 == 0 ? int32_t(0) : a1 == int32_t(-1) ? int32_t(0ull - static_cast<unsigned long long>(a0)) : int32_t(a0 / a1));
// Unsigned division has no -1.
// CHECK: { // fused: div
// CHECK: const uint8_t t4 = (a0 == 0 ? uint8_t(0) : uint8_t(a0 / a0));
// The exact GELU and erf through pccErf, which the loop vectorises.
// CHECK: { // fused: gelu erf add
// CHECK: const float t5 = float(0.5) * a0 * (float(1) + pccErf(a0 * float(0.7071067811865476)));
// CHECK-NEXT: const float t6 = pccErf(a0);
func.func @main(%x: tensor<4x6xf32>, %b: tensor<6xf32>, %m: tensor<4x6xi1>, %i: tensor<4xi32>, %j: tensor<4xi32>, %u: tensor<4xui8>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xi32>, tensor<4xui8>, tensor<4x6xf32>) {
  %0 = pcc.add %x, %b : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %1 = pcc.gelu %0 {approximate = "tanh"} : tensor<4x6xf32>
  %2 = pcc.where %m, %1, %x : (tensor<4x6xi1>, tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %3 = pcc.softmax %0 {axis = 1 : i64} : tensor<4x6xf32>
  %4 = pcc.div %i, %j : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %5 = pcc.div %u, %u : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %6 = pcc.gelu %x {approximate = "none"} : tensor<4x6xf32>
  %7 = pcc.erf %x : tensor<4x6xf32>
  %8 = pcc.add %6, %7 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %2, %3, %4, %5, %8 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xi32>, tensor<4xui8>, tensor<4x6xf32>
}
