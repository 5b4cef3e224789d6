// ScatterND on the CPU target: the data copied to the result, then each
// index tuple's slice updated in order; the addressed dimensions go in a
// static table, a bad index ends the step. With batch_dims, each batch
// entry's block is scattered by its own tuples.
// RUN: pcc-translate --pcc-to-cpp %s | FileCheck %s

// CHECK: // pcc.scatter_nd
// CHECK-NEXT: static const int64_t scatterDims[[ID:[0-9]+]][] = {2, 16};
// CHECK-NEXT: if (!scatterND<float>(in0, in1, in2, {{.*}}, 1, 2048, 5, 2, scatterDims[[ID]], 64, ScatterReduction::Mul))
// CHECK-NEXT: return false;
// CHECK: // pcc.scatter_nd
// CHECK-NEXT: static const int64_t scatterDims[[ID2:[0-9]+]][] = {16};
// CHECK-NEXT: if (!scatterND<float>(in3, in4, in5, {{.*}}, 4, 1024, 3, 1, scatterDims[[ID2]], 64, ScatterReduction::None))
// CHECK-NEXT: return false;
func.func @main(%x: tensor<2x16x64xf32>, %at: tensor<5x2xi64>, %u: tensor<5x64xf32>,
                %y: tensor<4x16x64xf32>, %bat: tensor<4x3x1xi64>, %bu: tensor<4x3x64xf32>) -> (tensor<2x16x64xf32>, tensor<4x16x64xf32>) {
  %0 = pcc.scatter_nd %x, %at, %u {reduction = "mul"} : (tensor<2x16x64xf32>, tensor<5x2xi64>, tensor<5x64xf32>) -> tensor<2x16x64xf32>
  %1 = pcc.scatter_nd %y, %bat, %bu {batch_dims = 1} : (tensor<4x16x64xf32>, tensor<4x3x1xi64>, tensor<4x3x64xf32>) -> tensor<4x16x64xf32>
  return %0, %1 : tensor<2x16x64xf32>, tensor<4x16x64xf32>
}
