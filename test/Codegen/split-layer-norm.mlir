// A layer norm over a hidden dimension split on a 2D tensor grid.
// RUN: pcc-translate --pcc-to-cpp %s | FileCheck %s

// A layer norm whose 8 local features are one of 2 blocks (stat_axes): the
// row sums are all-reduced over the group of axis 1, normalised by 16.
// CHECK-LABEL: // unit: model.cpp
// CHECK: // pcc.layer_norm
// CHECK-NEXT: layerNormSplitF32(in0, in1, in2, out0, 4, 8, 16, {{.*}}, mesh, 0, reinterpret_cast<double *>(arena + {{[0-9]+}}));
module {
  shard.grid @mesh(shape = 2x2)
  func.func @main(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
    %y = pcc.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32, stat_axes = array<i64: 1>} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}
