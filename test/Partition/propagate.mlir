// pcc-propagate-sharding gives every value the layout its op's sharding rule
// computes from the seeds (arguments and weights): the batch split follows
// through everything; a column-split weight splits the product's columns, an
// elementwise op keeps them; a row-split weight makes a partial sum over tp;
// reshapes carry splits and partial sums; softmax needs its values whole on
// tp (the partitioner reduces them first) and keeps the batch split.
// RUN: pcc-opt %s --pcc-propagate-sharding | FileCheck %s

shard.grid @mesh(shape = 2x2) {pcc.axis_names = ["dp", "tp"]}
func.func @main(%x: tensor<4x8x16xf32> {pcc.sharding = #pcc.sharding<@mesh, [[0], [], []]>}) -> tensor<4x8x32xf32> {
  %w = pcc.weight "fc.w" {pcc.sharding = [#pcc.sharding<@mesh, [[], [1]]>]} : tensor<16x32xf32>
  %w2 = pcc.weight "fc2.w" {pcc.sharding = [#pcc.sharding<@mesh, [[1], []]>]} : tensor<32x32xf32>
  %y = pcc.matmul %x, %w : (tensor<4x8x16xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
  %r = pcc.relu %y : tensor<4x8x32xf32>
  %z = pcc.matmul %r, %w2 : (tensor<4x8x32xf32>, tensor<32x32xf32>) -> tensor<4x8x32xf32>
  %s = pcc.reshape %z {shape = array<i64: 32, 32>} : (tensor<4x8x32xf32>) -> tensor<32x32xf32>
  %t = pcc.reshape %s {shape = array<i64: 4, 8, 32>} : (tensor<32x32xf32>) -> tensor<4x8x32xf32>
  %p = pcc.softmax %t {axis = 2 : i64} : tensor<4x8x32xf32>
  return %p : tensor<4x8x32xf32>
}

// CHECK: func.func @main(%{{.*}}: tensor<4x8x16xf32> {pcc.sharding = #pcc.sharding<@mesh, {{\[}}[0], [], []]>}) -> (tensor<4x8x32xf32> {pcc.sharding = #pcc.sharding<@mesh, {{\[}}[0], [], []]>})
// CHECK: pcc.matmul {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[0], [], [1]]>]
// CHECK: pcc.relu {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[0], [], [1]]>]
// CHECK: pcc.matmul {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[0], [], []], partial = [1]>]
// CHECK: pcc.reshape {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[0], []], partial = [1]>]
// CHECK: pcc.reshape {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[0], [], []], partial = [1]>]
// CHECK: pcc.softmax {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[0], [], []]>]
