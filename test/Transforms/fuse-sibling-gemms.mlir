// RUN: pcc-opt --pcc-fuse-sibling-gemms --split-input-file --verify-diagnostics %s | FileCheck %s

// Separate Q, K, V projections (GQA-sized K and V) with bias adds, written
// in either operand order: one product by the joined weight, one add of the
// joined bias, a split handing each reader its part.
// CHECK-LABEL: func @qkv
// CHECK: %[[W:.*]] = pcc.weight "q.w+k.w+v.w" concat ["q.w", "k.w", "v.w"] axis 1 sizes [32, 16, 16] : tensor<32x64xf32>
// CHECK-NEXT: %[[M:.*]] = pcc.matmul %arg0, %[[W]] : (tensor<2x8x32xf32>, tensor<32x64xf32>) -> tensor<2x8x64xf32>
// CHECK-NEXT: %[[B:.*]] = pcc.weight "q.b+k.b+v.b" concat ["q.b", "k.b", "v.b"] axis 0 sizes [32, 16, 16] : tensor<64xf32>
// CHECK-NEXT: %[[A:.*]] = pcc.add %[[B]], %[[M]]
// CHECK-NEXT: %[[S:.*]]:3 = pcc.split %[[A]] {axis = 2 : i64, sizes = array<i64: 32, 16, 16>}
// CHECK-NOT: pcc.matmul
// CHECK: return %[[S]]#0, %[[S]]#1, %[[S]]#2
func.func @qkv(%x: tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %wq = pcc.weight "q.w" : tensor<32x32xf32>
  %q = pcc.matmul %x, %wq : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %bq = pcc.weight "q.b" : tensor<32xf32>
  %q1 = pcc.add %bq, %q : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %wk = pcc.weight "k.w" : tensor<32x16xf32>
  %k = pcc.matmul %x, %wk : (tensor<2x8x32xf32>, tensor<32x16xf32>) -> tensor<2x8x16xf32>
  %bk = pcc.weight "k.b" : tensor<16xf32>
  %k1 = pcc.add %k, %bk : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %wv = pcc.weight "v.w" : tensor<32x16xf32>
  %v = pcc.matmul %x, %wv : (tensor<2x8x32xf32>, tensor<32x16xf32>) -> tensor<2x8x16xf32>
  %bv = pcc.weight "v.b" : tensor<16xf32>
  %v1 = pcc.add %bv, %v : (tensor<16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %q1, %k1, %v1 : tensor<2x8x32xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
}

// -----

// A training-mode export reads [out, in] weights through transposes: they
// join along their rows, read through one transpose. Without a bias on
// every product the adds stay, on the parts.
// CHECK-LABEL: func @transposed
// CHECK: %[[W:.*]] = pcc.weight "a+b" concat ["a", "b"] axis 0 sizes [16, 32] : tensor<48x32xf32>
// CHECK-NEXT: %[[T:.*]] = pcc.transpose %[[W]] {perm = array<i64: 1, 0>} : (tensor<48x32xf32>) -> tensor<32x48xf32>
// CHECK-NEXT: %[[M:.*]] = pcc.matmul %arg0, %[[T]] : (tensor<8x32xf32>, tensor<32x48xf32>) -> tensor<8x48xf32>
// CHECK-NEXT: %[[S:.*]]:2 = pcc.split %[[M]] {axis = 1 : i64, sizes = array<i64: 16, 32>}
// CHECK: pcc.add %[[S]]#0, %{{.*}}
// CHECK: return {{.*}}, %[[S]]#1
func.func @transposed(%x: tensor<8x32xf32>) -> (tensor<8x16xf32>, tensor<8x32xf32>) {
  %wa = pcc.weight "a" : tensor<16x32xf32>
  %ta = pcc.transpose %wa {perm = array<i64: 1, 0>} : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %a = pcc.matmul %x, %ta : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %ba = pcc.weight "a.bias" : tensor<16xf32>
  %a1 = pcc.add %a, %ba : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %wb = pcc.weight "b" : tensor<32x32xf32>
  %tb = pcc.transpose %wb {perm = array<i64: 1, 0>} : (tensor<32x32xf32>) -> tensor<32x32xf32>
  %b = pcc.matmul %x, %tb : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
  return %a1, %b : tensor<8x16xf32>, tensor<8x32xf32>
}

// -----

// Not joined: a weight read elsewhere too (a tied embedding), a weight in
// another precision, a product by an activation, one read transposed beside
// one that is not; the two plain f32 products of one precision are.
// CHECK-LABEL: func @apart
// CHECK-DAG: %[[T:.*]] = pcc.weight "tied" : tensor<32x16xf32>
// CHECK-DAG: %[[H:.*]] = pcc.weight "half" : tensor<32x16xf16>
// CHECK-DAG: pcc.weight "p+q" concat ["p", "q"] axis 1 sizes [16, 16] : tensor<32x32xf32>
// CHECK-DAG: pcc.matmul %arg0, %[[T]]
// CHECK-DAG: pcc.matmul %arg1, %[[H]]
// CHECK-DAG: pcc.matmul %arg0, %arg2
// CHECK-DAG: pcc.weight "r" : tensor<8x32xf32>
func.func @apart(%x: tensor<4x32xf32>, %xh: tensor<4x32xf16>, %y: tensor<32x8xf32>) -> (tensor<4x16xf32>, tensor<32x16xf32>, tensor<4x16xf16>, tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x8xf32>) {
  %t = pcc.weight "tied" : tensor<32x16xf32>
  %a = pcc.matmul %x, %t : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  %t2 = pcc.add %t, %t : (tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<32x16xf32>
  %h = pcc.weight "half" : tensor<32x16xf16>
  %b = pcc.matmul %xh, %h : (tensor<4x32xf16>, tensor<32x16xf16>) -> tensor<4x16xf16>
  %c = pcc.matmul %x, %y : (tensor<4x32xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
  %p = pcc.weight "p" : tensor<32x16xf32>
  %d = pcc.matmul %x, %p : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  %q = pcc.weight "q" : tensor<32x16xf32>
  %e = pcc.matmul %x, %q : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  %r = pcc.weight "r" : tensor<8x32xf32>
  %rt = pcc.transpose %r {perm = array<i64: 1, 0>} : (tensor<8x32xf32>) -> tensor<32x8xf32>
  %f = pcc.matmul %x, %rt : (tensor<4x32xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
  return %a, %t2, %b, %c, %d, %e, %f : tensor<4x16xf32>, tensor<32x16xf32>, tensor<4x16xf16>, tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x8xf32>
}

// -----

// A value two layers read (an encoder's output, read by each decoder
// layer's K and V): products whose results meet, through ops of each
// alone, are joined (each layer's K and V, at their product); the layers'
// meet only past those, through other activations, and are not.
// CHECK-LABEL: func @layers
// CHECK: pcc.weight "k0+v0" concat ["k0", "v0"] axis 1 sizes [16, 16]
// CHECK: pcc.weight "k1+v1" concat ["k1", "v1"] axis 1 sizes [16, 16]
// CHECK-NOT: concat
func.func @layers(%x: tensor<4x32xf32>) -> tensor<4x16xf32> {
  %wk0 = pcc.weight "k0" : tensor<32x16xf32>
  %k0 = pcc.matmul %x, %wk0 : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  %wv0 = pcc.weight "v0" : tensor<32x16xf32>
  %v0 = pcc.matmul %x, %wv0 : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  %a0 = pcc.mul %k0, %v0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %a1 = pcc.neg %a0 : tensor<4x16xf32>
  %wk1 = pcc.weight "k1" : tensor<32x16xf32>
  %k1 = pcc.matmul %x, %wk1 : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  %wv1 = pcc.weight "v1" : tensor<32x16xf32>
  %v1 = pcc.matmul %x, %wv1 : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  %b0 = pcc.mul %k1, %v1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %b1 = pcc.add %b0, %a1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %b1 : tensor<4x16xf32>
}

// -----

// The verifier: a joined weight names two or more initializers, whole.
func.func @bad() -> tensor<4x8xf32> {
  // expected-error @+1 {{concat needs two or more initializers}}
  %w = pcc.weight "x" concat ["x"] axis 1 sizes [8] : tensor<4x8xf32>
  return %w : tensor<4x8xf32>
}

// -----

func.func @bad_unpadded() -> tensor<4x8xf32> {
  // expected-error @+1 {{joins whole initializers}}
  %w = pcc.weight "x+y" unpadded [4, 6] concat ["x", "y"] axis 1 sizes [4, 4] : tensor<4x8xf32>
  return %w : tensor<4x8xf32>
}

// -----

func.func @bad_sizes() -> tensor<4x8xf32> {
  // expected-error @+1 {{concat sizes must be positive and add up to a multiple of axis 1}}
  %w = pcc.weight "x+y" concat ["x", "y"] axis 1 sizes [4, 3] : tensor<4x8xf32>
  return %w : tensor<4x8xf32>
}

// -----

// A training state of a joined weight (saved as the parts' states), and a
// device's block of one split over two devices along the joined axis.
// CHECK-LABEL: func @state_and_block
// CHECK: pcc.weight "x+y.exp_avg" zeros concat ["x.exp_avg", "y.exp_avg"] axis 1 sizes [4, 4]
// CHECK: pcc.weight "x+y" concat ["x", "y"] axis 1 sizes [4, 4] : tensor<4x4xf32>
func.func @state_and_block() -> (tensor<4x8xf32>, tensor<4x4xf32>) {
  %s = pcc.weight "x+y.exp_avg" zeros concat ["x.exp_avg", "y.exp_avg"] axis 1 sizes [4, 4] : tensor<4x8xf32>
  %w = pcc.weight "x+y" concat ["x", "y"] axis 1 sizes [4, 4] : tensor<4x4xf32>
  return %s, %w : tensor<4x8xf32>, tensor<4x4xf32>
}
