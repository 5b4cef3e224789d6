// The CUDA target's code: the CPU target's program on device pointers.
// A fused chain is a kernel (grid-stride loop, output coordinates from the
// flat index, four elements a thread where they pack, the CPU loop's body
// with CUDA's math functions), launched on the rank's stream; weights are
// read where deviceWeight uploaded them; a returned result is made in its
// output buffer (no copy at the end).
// RUN: pcc-translate --pcc-to-cuda %s | FileCheck %s

// CHECK-LABEL: // unit: model.cu
// CHECK: #include "pccrt/CudaModel.h"
// CHECK: // fused: add gelu mul
// CHECK-NEXT: __global__ void [[K:fused[0-9]+]](const float *l0, const float *l1, const float *l2, float *out) {
// Four elements a thread where the innermost extent allows: leaves along
// it (l0, l1) load as one access, the one broadcast along it (l2) once.
// CHECK-NEXT: if (packAligned<4>(l0, l1, out)) {
// CHECK-NEXT: for (unsigned p = blockIdx.x * unsigned(blockDim.x) + threadIdx.x; p < 8; p += unsigned(gridDim.x) * blockDim.x) {
// CHECK-NEXT: unsigned rest = p * 4;
// CHECK-NEXT: const unsigned i1 = rest % 8;
// CHECK-NEXT: rest /= 8;
// CHECK-NEXT: const unsigned i0 = rest % 4;
// CHECK-NEXT: rest /= 4;
// CHECK-NEXT: const auto x0 = loadPack<4>(l0 + (i0 * 8 + i1 * 1));
// CHECK-NEXT: const auto x1 = loadPack<4>(l1 + (i1 * 1));
// CHECK-NEXT: Pack<float, 4> y;
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (int e = 0; e < 4; ++e) {
// CHECK-NEXT: const float a0 = x0.v[e];
// CHECK-NEXT: const float a1 = x1.v[e];
// CHECK-NEXT: const float a2 = l2[i0 * 1];
// CHECK-NEXT: const float [[A:t[0-9]+]] = (a0 + a1);
// CHECK-NEXT: const float [[G:t[0-9]+]] = float(0.5) * [[A]] * (float(1) + tanhf(
// CHECK-NEXT: const float [[P:t[0-9]+]] = ([[G]] * a2);
// CHECK-NEXT: y.v[e] = [[P]];
// CHECK-NEXT: }
// CHECK-NEXT: storePack(out + p * 4, y);
// CHECK-NEXT: }
// CHECK-NEXT: return;
// CHECK-NEXT: }
// Otherwise an element a thread, in 32-bit index arithmetic.
// CHECK-NEXT: for (unsigned i = blockIdx.x * unsigned(blockDim.x) + threadIdx.x; i < 32; i += unsigned(gridDim.x) * blockDim.x) {
// CHECK-NEXT: unsigned rest = i;
// CHECK-NEXT: const unsigned i1 = rest % 8;
// CHECK-NEXT: rest /= 8;
// CHECK-NEXT: const unsigned i0 = rest % 4;
// CHECK-NEXT: rest /= 4;
// CHECK-NEXT: const float a0 = l0[i0 * 8 + i1 * 1];
// CHECK-NEXT: const float a1 = l1[i1 * 1];
// CHECK-NEXT: const float a2 = l2[i0 * 1];
// CHECK: out[i] = {{t[0-9]+}};
// CHECK: bool part0(
// CHECK: const float *v0 = reinterpret_cast<const float *>(deviceWeight(weights, 0, 256));
// CHECK: float *out0 = static_cast<float *>(outputs[0]);
// CHECK: gemmF32(false, false, 4, 8, 8, 1.0f, in0, 8, v0, 8, 0.0f, [[M:v[0-9]+]], 8);
// CHECK-NEXT: [[K]]<<<gridSize(8), 256, 0, rankStream()>>>([[M]], in1, in2, out0);
// CHECK-NEXT: checkLaunch("[[K]]");
// CHECK-NOT: copyBytes
// CHECK-NOT: __builtin_
func.func @main(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %w = pcc.weight "w" : tensor<8x8xf32>
  %m = pcc.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a = pcc.add %m, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %g = pcc.gelu %a {approximate = "tanh"} : tensor<4x8xf32>
  %s = pcc.mul %g, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
