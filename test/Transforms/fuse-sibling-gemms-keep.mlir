// RUN: pcc-opt --pcc-fuse-sibling-gemms="keep=k.w,v.b" %s | FileCheck %s

// A training step's frozen initializers stay apart: K (frozen weight) and
// V (frozen bias) keep their own products; Q and O, both trained, join.
// CHECK-LABEL: func @frozen
// CHECK: pcc.weight "q.w+o.w" concat ["q.w", "o.w"] axis 1 sizes [16, 16] : tensor<32x32xf32>
// CHECK-NEXT: pcc.matmul
// CHECK: pcc.weight "k.w" : tensor<32x16xf32>
// CHECK-NEXT: pcc.matmul
// CHECK-NEXT: pcc.weight "v.w" : tensor<32x16xf32>
// CHECK-NEXT: pcc.matmul
// CHECK-NEXT: pcc.weight "v.b" : tensor<16xf32>
// CHECK-NOT: pcc.matmul
func.func @frozen(%x: tensor<4x32xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %wq = pcc.weight "q.w" : tensor<32x16xf32>
  %q = pcc.matmul %x, %wq : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  %wk = pcc.weight "k.w" : tensor<32x16xf32>
  %k = pcc.matmul %x, %wk : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  %wv = pcc.weight "v.w" : tensor<32x16xf32>
  %v = pcc.matmul %x, %wv : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  %bv = pcc.weight "v.b" : tensor<16xf32>
  %v1 = pcc.add %v, %bv : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %wo = pcc.weight "o.w" : tensor<32x16xf32>
  %o = pcc.matmul %x, %wo : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  return %q, %k, %v1, %o : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}
