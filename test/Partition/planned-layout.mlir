// pcc-apply-plan with tensor_layout = "planned" runs each op on the layouts the
// planner recorded (pcc.planned_sharding, axis 0 standing for tp): here a
// sequence split on tp. The planned layout is mapped onto the tp axis,
// merged with the dp batch split, pinned on the op, and the partitioner
// reshards to it (a free slice) instead of following the operands; the
// result stays split (the runtime assembles it).
// RUN: sed -e 's/AXES/"dp", "tp"/' -e 's/SIZES/2, 2/' -e 's/LAYOUT/planned/' %s | pcc-opt --pcc-apply-plan | FileCheck %s --check-prefix=ANNOT
// RUN: sed -e 's/AXES/"dp", "tp"/' -e 's/SIZES/2, 2/' -e 's/LAYOUT/planned/' %s | pcc-opt --pcc-apply-plan --pcc-partition | FileCheck %s --check-prefix=SPMD
// RUN: sed -e 's/AXES/"tp"/' -e 's/SIZES/2/' -e 's/LAYOUT/bogus/' %s | not pcc-opt --pcc-apply-plan 2>&1 | FileCheck %s --check-prefix=BAD

module attributes {pcc.plan = #pcc.plan<axes = [AXES], sizes = [SIZES], tensor_mode = "1d", tensor_layout = "LAYOUT", microbatches = 1, train = false>} {
  func.func @main(%x: tensor<4x8x16xf32>) -> tensor<4x8x32xf32> {
    %w = pcc.weight "fc.w" : tensor<16x32xf32>
    %y = pcc.matmul %x, %w {pcc.planned_sharding = [#pcc.sharding<@plan, [[], [0], []]>, #pcc.sharding<@plan, [[], []]>]} : (tensor<4x8x16xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
    %z = pcc.relu %y {pcc.planned_sharding = [#pcc.sharding<@plan, [[], [0], []]>]} : tensor<4x8x32xf32>
    return %z : tensor<4x8x32xf32>
  }
}

// ANNOT: pcc.matmul
// ANNOT-SAME: pcc.operand_sharding = [#pcc.sharding<@mesh, {{\[}}[0], [1], []]>, #pcc.sharding<@mesh, {{\[}}[], []]>]
// ANNOT-SAME: pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[0], [1], []]>]
// ANNOT: pcc.relu
// ANNOT-NOT: pcc.operand_sharding
// ANNOT-SAME: pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[0], [1], []]>]

// SPMD: func.func @main(%{{.*}}: tensor<2x8x16xf32> {{.*}} -> (tensor<2x4x32xf32> {pcc.sharding = #pcc.sharding<@mesh, {{\[}}[0], [1], []]>})
// SPMD: shard.all_slice %{{.*}} grid_axes = [1] slice_axis = 1 : tensor<2x8x16xf32> -> tensor<2x4x16xf32>
// SPMD: pcc.matmul {{.*}} : (tensor<2x4x16xf32>, tensor<16x32xf32>) -> tensor<2x4x32xf32>
// SPMD-NOT: pcc.operand_sharding
// SPMD-NOT: pcc.planned_sharding
// SPMD-NOT: shard.all_gather

// BAD: unknown tensor_layout 'bogus' (megatron, megatron-sp or planned)
