// Matrix products and convolutions become BLAS GEMMs (the CPU target).
// RUN: pcc-translate --pcc-to-cpp --split-input-file %s | FileCheck %s

// A batched left operand times a matrix is one GEMM with the batch folded
// into M (2 x 4 rows).
// CHECK-LABEL: // unit: model.cpp
// CHECK: // pcc.matmul
// CHECK-NEXT: gemmF32(false, false, 8, 6, 8, 1.0f, in0, 8, in1, 6, 0.0f, out0, 6);
func.func @main(%x: tensor<2x4x8xf32>, %w: tensor<8x6xf32>) -> tensor<2x4x6xf32> {
  %y = pcc.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32>
  return %y : tensor<2x4x6xf32>
}

// -----

// Gemm broadcasts C into the result (a strided copy reading C's row
// again for every row), then accumulates alpha A B^T onto beta C.
// CHECK-LABEL: // unit: model.cpp
// CHECK: // pcc.gemm
// CHECK-NEXT: static const int64_t shape[[ID:[0-9]+]][] = {4, 6};
// CHECK-NEXT: static const int64_t strides[[ID]][] = {0, 1};
// CHECK-NEXT: stridedCopy(4, reinterpret_cast<const char *>(in2), reinterpret_cast<char *>(out0), 2, shape[[ID]], 0, strides[[ID]]);
// CHECK-NEXT: gemmF32(false, true, 4, 6, 8, static_cast<float>(5.{{0+}}e-01), in0, 8, in1, 8, static_cast<float>(2.{{0+}}e+00), out0, 6);
func.func @main(%a: tensor<4x8xf32>, %b: tensor<6x8xf32>, %c: tensor<6xf32>) -> tensor<4x6xf32> {
  %y = pcc.gemm %a, %b, %c {transB = true, alpha = 0.5 : f32, beta = 2.0 : f32} : (tensor<4x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// A convolution runs im2col into scratch (3 channels x 3 x 3 kernel x 16 x 16
// pixels x 4 bytes = 27648 bytes at the arena's start); its output, which
// the function returns, is made in the output buffer.
// CHECK-LABEL: // unit: model.cpp
// CHECK: float *out0 = static_cast<float *>(outputs[0]);
// CHECK: // pcc.conv
// CHECK-NEXT: conv2dF32(in0, in1, in2, out0, 2, 3, 16, 16, 8, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1, 1, reinterpret_cast<float *>(arena + 0));
func.func @main(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>, %s: tensor<8xf32>) -> tensor<2x8x16x16xf32> {
  %0 = pcc.conv %x, %w, %s {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<2x8x16x16xf32>
  return %0 : tensor<2x8x16x16xf32>
}

// -----

// A SUMMA product on a 2 x 2 grid (rows: axis 0, columns: axis 1): the
// left blocks are broadcast along the devices of a grid row (the group over
// axis 1), the weight blocks along a column (the group over axis 0); scratch
// holds one panel of each.
// CHECK-LABEL: // unit: model.cpp
// CHECK: // pcc.matmul
// CHECK-NEXT: summaF32(in0, in1, out0, 8, 4, 6, false, static_cast<float>(1.{{0+}}e+00), static_cast<float>(0.{{0+}}e+00), mesh, 0, 1, reinterpret_cast<float *>(arena + {{[0-9]+}}));
module {
  shard.grid @mesh(shape = 2x2)
  func.func @main(%x: tensor<2x4x4xf32>, %w: tensor<4x6xf32>) -> tensor<2x4x6xf32> {
    %y = pcc.matmul %x, %w {summa_axes = array<i64: 0, 1>} : (tensor<2x4x4xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
    return %y : tensor<2x4x6xf32>
  }
}
