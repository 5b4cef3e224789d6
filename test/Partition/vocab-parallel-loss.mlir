// A cross-entropy over a vocabulary-parallel head (Megatron's
// vocabulary-parallel cross-entropy), as pcc imports one: the log-softmax
// runs on each device's block of the vocabulary, its lines' statistics
// gathered (stat_axes); the one-hot of the labels, made from an input and a
// constant alone, is made in the block its first reader asks for (its
// pointwise ops pinned to cut the constant), not made whole and cut; the
// picked log-probabilities are partial sums, reduced once (one number a
// token).
// RUN: pcc-opt %s --pcc-propagate-sharding | FileCheck %s --check-prefix=LAYOUT
// RUN: pcc-opt %s --pcc-propagate-sharding --pcc-partition | FileCheck %s --check-prefix=SPMD

shard.grid @mesh(shape = 2) {pcc.axis_names = ["tp"]}
func.func @main(%h: tensor<8x16xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
  %w = pcc.weight "head.w" {pcc.sharding = [#pcc.sharding<@mesh, [[], [0]]>]} : tensor<16x8xf32>
  %logits = pcc.matmul %h, %w : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %logp = pcc.log_softmax %logits {axis = 1 : i64} : tensor<8x8xf32>
  %l = pcc.reshape %labels {shape = array<i64: 8, 1>} : (tensor<8xi64>) -> tensor<8x1xi64>
  %iota = pcc.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
  %eq = pcc.equal %l, %iota : (tensor<8x1xi64>, tensor<1x8xi64>) -> tensor<8x8xi1>
  %onehot = pcc.cast %eq {to = f32} : tensor<8x8xi1> -> tensor<8x8xf32>
  %m = pcc.mul %logp, %onehot : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %picked = pcc.reduce_sum %m {axes = array<i64: 1>, keepdims = false} : (tensor<8x8xf32>) -> tensor<8xf32>
  %mean = pcc.reduce_mean %picked {axes = array<i64: 0>, keepdims = false} : (tensor<8xf32>) -> tensor<f32>
  %loss = pcc.neg %mean : tensor<f32>
  return %loss : tensor<f32>
}

// LAYOUT: pcc.log_softmax {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[], [0]]>]
// LAYOUT: pcc.equal {{.*}}pcc.operand_sharding = [#pcc.sharding<@mesh, {{\[}}[], []]>, #pcc.sharding<@mesh, {{\[}}[], [0]]>], pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[], [0]]>]
// LAYOUT: pcc.cast {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[], [0]]>]
// LAYOUT: pcc.mul {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[], [0]]>]
// LAYOUT: pcc.reduce_sum {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[]], partial = [0]>]

// SPMD-NOT: shard.all_gather
// SPMD: %[[LOGITS:.*]] = pcc.matmul {{.*}} -> tensor<8x4xf32>
// SPMD: pcc.log_softmax %[[LOGITS]] {axis = 1 : i64, stat_axes = array<i64: 0>} : tensor<8x4xf32>
// SPMD: pcc.equal {{.*}} : (tensor<8x1xi64>, tensor<1x4xi64>) -> tensor<8x4xi1>
// SPMD: shard.all_reduce {{.*}} : tensor<8xf32> -> tensor<8xf32>
// SPMD-NOT: shard.all_gather
