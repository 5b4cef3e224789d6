// Buckets of a gradient step whose all-reduces follow all the gradients:
// the builder inserts right after the last gradient of a bucket, before an
// all-reduce the bucket replaces (erased only once the bucket is built).
// RUN: pcc-opt %s --pcc-bucket-gradients=bucket-bytes=20 | FileCheck %s --check-prefix=TWO
// Two buckets of two (at most 20 bytes each), each right after its last
// gradient.
shard.grid @mesh2(shape = 2)
// TWO-LABEL: func.func @four
// TWO: pcc.exp
// TWO: %[[J1:.*]] = pcc.concat {{.*}} -> tensor<4xf32>
// TWO-NEXT: shard.all_reduce %[[J1]] on @mesh2 grid_axes = [0] : tensor<4xf32>
// TWO: pcc.relu
// TWO: %[[J2:.*]] = pcc.concat {{.*}} -> tensor<4xf32>
// TWO-NEXT: shard.all_reduce %[[J2]] on @mesh2 grid_axes = [0] : tensor<4xf32>
// TWO-NOT: shard.all_reduce
func.func @four(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %g0 = pcc.neg %a : tensor<2xf32>
  %g1 = pcc.exp %a : tensor<2xf32>
  %g2 = pcc.tanh %a : tensor<2xf32>
  %g3 = pcc.relu %a : tensor<2xf32>
  %r0 = shard.all_reduce %g0 on @mesh2 grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
  %r1 = shard.all_reduce %g1 on @mesh2 grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
  %r2 = shard.all_reduce %g2 on @mesh2 grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
  %r3 = shard.all_reduce %g3 on @mesh2 grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
  %u0 = pcc.sub %a, %r0 {pcc.optimizer} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %u1 = pcc.sub %a, %r1 {pcc.optimizer} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %u2 = pcc.sub %a, %r2 {pcc.optimizer} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %u3 = pcc.sub %a, %r3 {pcc.optimizer} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %u0, %u1, %u2, %u3 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
