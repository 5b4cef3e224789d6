// ScatterND on the CPU target: the data copied to the result, then each
// index tuple's slice updated in order; the addressed dimensions go in a
// static table, a bad index ends the step.
// RUN: pcc-translate --pcc-to-cpp %s | FileCheck %s

// CHECK: // pcc.scatter_nd
// CHECK-NEXT: static const int64_t scatterDims[[ID:[0-9]+]][] = {2, 16};
// CHECK-NEXT: if (!scatterND<float>(in0, in1, in2, out0, 2048, 5, 2, scatterDims[[ID]], 64, ScatterReduction::Mul))
// CHECK-NEXT: return false;
func.func @main(%x: tensor<2x16x64xf32>, %at: tensor<5x2xi64>, %u: tensor<5x64xf32>) -> tensor<2x16x64xf32> {
  %0 = pcc.scatter_nd %x, %at, %u {reduction = "mul"} : (tensor<2x16x64xf32>, tensor<5x2xi64>, tensor<5x64xf32>) -> tensor<2x16x64xf32>
  return %0 : tensor<2x16x64xf32>
}
