// pcc-apply-plan applies the module's plan (#pcc.plan): it creates the grid
// with the plan's axes in rank order and seeds the layouts. A module without
// a plan, a plan the partitioner cannot apply yet, and a malformed plan are
// each one error.
// RUN: sed -e 's/PLAN/#pcc.plan<axes = ["dp", "tp"], sizes = [2, 2], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 1, train = false>/' %s \
// RUN:   | pcc-opt --pcc-apply-plan | FileCheck %s --check-prefix=OK
// RUN: sed -e 's/attributes {pcc.plan = PLAN} //' %s | not pcc-opt --pcc-apply-plan 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: sed -e 's/PLAN/#pcc.plan<axes = ["pp", "dp"], sizes = [2, 2], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 4, train = false>/' %s \
// RUN:   | not pcc-opt --pcc-apply-plan 2>&1 | FileCheck %s --check-prefix=PP
// RUN: sed -e 's/PLAN/#pcc.plan<axes = ["sp", "tp"], sizes = [2, 2], tensor_mode = "1d", tensor_layout = "megatron-sp", microbatches = 1, train = false>/' %s \
// RUN:   | not pcc-opt --pcc-apply-plan 2>&1 | FileCheck %s --check-prefix=SP
// RUN: sed -e 's/PLAN/#pcc.plan<axes = ["sp"], sizes = [2], tensor_mode = "1d", tensor_layout = "megatron", sequence_mode = "zigzag", microbatches = 1, train = false>/' %s \
// RUN:   | not pcc-opt --pcc-apply-plan 2>&1 | FileCheck %s --check-prefix=SPMODE
// RUN: sed -e 's/PLAN/#pcc.plan<axes = ["tp"], sizes = [2], tensor_mode = "2d", tensor_layout = "megatron", microbatches = 1, train = false>/' %s \
// RUN:   | not pcc-opt --pcc-apply-plan 2>&1 | FileCheck %s --check-prefix=GRID
// RUN: sed -e 's/PLAN/#pcc.plan<axes = ["tp", "dp"], sizes = [2, 2], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 1, train = false>/' %s \
// RUN:   | not pcc-opt --pcc-apply-plan 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: sed -e 's/PLAN/#pcc.plan<axes = ["dp"], sizes = [0], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 1, train = false>/' %s \
// RUN:   | not pcc-opt --pcc-apply-plan 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: sed -e 's/PLAN/#pcc.plan<axes = ["dp"], sizes = [2], tensor_mode = "1d", tensor_layout = "megatron", microbatches = 0, train = false>/' %s \
// RUN:   | not pcc-opt --pcc-apply-plan 2>&1 | FileCheck %s --check-prefix=MB

module attributes {pcc.plan = PLAN} {
  func.func @main(%x: tensor<4x16xf32>) -> tensor<4x32xf32> {
    %w = pcc.weight "fc.w" : tensor<16x32xf32>
    %y = pcc.matmul %x, %w : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
    return %y : tensor<4x32xf32>
  }
}

// OK: shard.grid @mesh(shape = 2x2) {pcc.axis_names = ["dp", "tp"]}
// OK: func.func @main(%{{.*}}: tensor<4x16xf32> {pcc.sharding = #pcc.sharding<@mesh, {{\[}}[0], []]>})
// OK: pcc.matmul {{.*}}pcc.sharding = [#pcc.sharding<@mesh, {{\[}}[0], [1]]>]
// NONE: error: module has no plan (pcc.plan = #pcc.plan<...>)
// A pipeline's microbatches split the batch with dp: 4 rows cannot make
// 4 microbatches x 2 groups.
// PP: error: batch size 4 of input 'input' does not divide into 8 parts (2 data-parallel groups x 4 microbatches); use a --dp and --microbatches whose product divides it
// SP: error: plan sp 2 (ulysses) x tp 2 cannot run yet: --sp and --sequence-parallel both split the sequence; choose one
// SPMODE: error: unknown sequence_mode 'zigzag' (ulysses or ring)
// GRID: error: plan tp 2 cannot run yet: tp 2 is not a tensor grid of mode 2d (2d: q x q, 2.5d: q x q x depth, 3d: q x q x q)
// ORDER: error: axis 'dp' is not a role in rank order (pp, dp, sp, tp), or repeats
// SIZE: error: axis 'dp' has size 0
// MB: error: microbatches must be at least 1, got 0
