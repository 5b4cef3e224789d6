// The CUDA target's code: the CPU target's program on device pointers.
// A fused chain is a kernel (grid-stride loop, output coordinates from the
// flat index, the CPU loop's body with CUDA's math functions), launched on
// the rank's stream; weights are read where deviceWeight uploaded them;
// outputs leave by a device copy.
// RUN: pcc-translate --pcc-to-cuda %s | FileCheck %s

// CHECK-LABEL: // unit: model.cu
// CHECK: #include "pccrt/CudaModel.h"
// CHECK: // fused: add gelu
// CHECK-NEXT: __global__ void [[K:fused[0-9]+]](const float *l0, const float *l1, float *out) {
// CHECK-NEXT: for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < 32; i += int64_t(gridDim.x) * blockDim.x) {
// CHECK-NEXT: int64_t rest = i;
// CHECK-NEXT: const int64_t i1 = rest % 8;
// CHECK-NEXT: rest /= 8;
// CHECK-NEXT: const int64_t i0 = rest % 4;
// CHECK-NEXT: rest /= 4;
// CHECK-NEXT: const float a0 = l0[i0 * 8 + i1 * 1];
// CHECK-NEXT: const float a1 = l1[i1 * 1];
// CHECK-NEXT: const float [[A:t[0-9]+]] = (a0 + a1);
// CHECK-NEXT: const float [[G:t[0-9]+]] = float(0.5) * [[A]] * (float(1) + tanhf(
// CHECK-NEXT: out[i] = [[G]];
// CHECK: bool part0(
// CHECK: const float *v0 = reinterpret_cast<const float *>(deviceWeight(weights, 0, 256));
// CHECK: gemmF32(false, false, 4, 8, 8, 1.0f, in0, 8, v0, 8, 0.0f, [[M:v[0-9]+]], 8);
// CHECK-NEXT: [[K]]<<<gridSize(32), 256, 0, rankStream()>>>([[M]], in1, [[Y:v[0-9]+]]);
// CHECK-NEXT: checkLaunch("[[K]]");
// CHECK-NEXT: copyBytes(outputs[0], [[Y]], 128);
// CHECK-NOT: __builtin_
func.func @main(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %w = pcc.weight "w" : tensor<8x8xf32>
  %m = pcc.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a = pcc.add %m, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %g = pcc.gelu %a {approximate = "tanh"} : tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}
