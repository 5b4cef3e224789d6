// An embedding's gradient, as gather's gradient rule writes it (a one-hot
// of the indices against the classes, contracted with the output
// gradient's rows), runs on CPU ranks as the scatter-add it stands for
// (ScatterEmbeddingGradients.cpp): no [tokens, rows] one-hot, no GEMM.
// Indices outside the device's rows (the first class it holds, and
// `rows` after) add zeros to row 0.
// RUN: pcc-translate --pcc-to-cpp --split-input-file %s | FileCheck %s

// CHECK-LABEL: // unit: model.cpp
// CHECK-NOT: gemmF32
// CHECK: // pcc.scatter_nd
// CHECK: scatterND<float>({{.*}}, 1, 64, 6, 1, scatterDims{{[0-9]+}}, 8, ScatterReduction::Add)
// CHECK-NOT: gemmF32
func.func @main(%idx: tensor<2x3xi64>, %dy: tensor<2x3x8xf32>) -> tensor<8x8xf32> {
  %classes = pcc.constant dense<[[[0, 1, 2, 3, 4, 5, 6, 7]]]> : tensor<1x1x8xi64>
  %at = pcc.reshape %idx {shape = array<i64: 2, 3, 1>} : (tensor<2x3xi64>) -> tensor<2x3x1xi64>
  %eq = pcc.equal %classes, %at : (tensor<1x1x8xi64>, tensor<2x3x1xi64>) -> tensor<2x3x8xi1>
  %hot = pcc.cast %eq {to = f32} : tensor<2x3x8xi1> -> tensor<2x3x8xf32>
  %dw = pcc.gemm %hot, %dy {transA = true} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<8x8xf32>
  return %dw : tensor<8x8xf32>
}

// -----

// Classes that are not consecutive are no row range: the product stays.
// CHECK-LABEL: // unit: model.cpp
// CHECK-NOT: scatterND
// CHECK: gemmF32(true, false
func.func @main(%idx: tensor<2x3xi64>, %dy: tensor<2x3x8xf32>) -> tensor<4x8xf32> {
  %classes = pcc.constant dense<[[[0, 2, 4, 6]]]> : tensor<1x1x4xi64>
  %at = pcc.reshape %idx {shape = array<i64: 2, 3, 1>} : (tensor<2x3xi64>) -> tensor<2x3x1xi64>
  %eq = pcc.equal %classes, %at : (tensor<1x1x4xi64>, tensor<2x3x1xi64>) -> tensor<2x3x4xi1>
  %hot = pcc.cast %eq {to = f32} : tensor<2x3x4xi1> -> tensor<2x3x4xf32>
  %dw = pcc.gemm %hot, %dy {transA = true} : (tensor<2x3x4xf32>, tensor<2x3x8xf32>) -> tensor<4x8xf32>
  return %dw : tensor<4x8xf32>
}
