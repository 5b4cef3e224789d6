// GPU ranks keep 16-bit tensors 16-bit where the runtime has 16-bit
// kernels: matrix products (gemm16 on tensor cores) and layer norm
// (layerNorm16, f32 statistics); a 16-bit product whose only use widens it
// to f32 writes f32 itself (the model's f32 logits), without a cast kernel.
// RUN: pcc-translate --pcc-to-cuda %s | FileCheck %s

// CHECK-LABEL: // unit: model.cu
// CHECK-NOT: __global__
// CHECK: layerNorm16<BFloat16>(
// CHECK: gemm16<BFloat16, float>(false, false, 8, 16, 32,
// CHECK-NOT: __global__
// CHECK-NOT: gemm16
func.func @main(%x: tensor<8x32xbf16>, %g: tensor<32xbf16>, %b: tensor<32xbf16>, %w: tensor<32x16xbf16>) -> tensor<8x16xf32> {
  %n = pcc.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<8x32xbf16>, tensor<32xbf16>, tensor<32xbf16>) -> tensor<8x32xbf16>
  %y = pcc.matmul %n, %w : (tensor<8x32xbf16>, tensor<32x16xbf16>) -> tensor<8x16xbf16>
  %z = pcc.cast %y {to = f32} : tensor<8x16xbf16> -> tensor<8x16xf32>
  return %z : tensor<8x16xf32>
}
