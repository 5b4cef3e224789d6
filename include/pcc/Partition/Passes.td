//===- Passes.td - sharding and SPMD partitioning passes ---*- tablegen -*-===//

#ifndef PCC_PARTITION_PASSES_TD
#define PCC_PARTITION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ApplyStrategy : Pass<"pcc-apply-strategy", "mlir::ModuleOp"> {
  let summary = "Create the device grid for a forced strategy and shard the model by it";
  let description = [{
    Creates `shard.grid @mesh` with one axis per parallel dimension larger
    than 1 (named by `pcc.axis_names`: "dp", "tp"), then annotates every value
    with a `#pcc.sharding`:

    - data parallel (`dp`): every model input whose leading dimension is the
      batch is split over the dp axis; everything downstream follows;
    - Megatron 1D tensor parallel (`tp`, `tp-mode=1d`): a linear layer whose
      input is whole on the tp axis is made column-parallel (its weight's
      output columns split; a fused Q|K|V projection is split per group so
      each device holds whole heads), and one whose input arrives split on
      its contracted dimension becomes row-parallel (a partial sum, reduced
      where a whole value is needed); embedding tables are split by
      vocabulary.

    With `tp-layout=planned`, ops annotated by the planner with
    `pcc.planned_sharding` (per-operand layouts on a one-axis grid whose
    axis 0 stands for tp) run on those layouts instead: each is mapped onto
    the tp axis, merged with the dp splits that reach the op, and pinned on
    the op as `pcc.operand_sharding`.

    Splits that do not divide a dimension are not made: that part of the
    model runs whole on every device of the axis, never wrong.
  }];
  let options = [
    Option<"dp", "dp", "int64_t", "1", "Data-parallel degree">,
    Option<"tp", "tp", "int64_t", "1", "Tensor-parallel degree">,
    Option<"tpMode", "tp-mode", "std::string", "\"1d\"",
           "Tensor-parallel scheme (1d: Megatron)">,
    Option<"tpLayout", "tp-layout", "std::string", "\"megatron\"",
           "Per-op layouts on the tp axis: megatron, or planned (the "
           "planner's pcc.planned_sharding)">,
  ];
  let dependentDialects = ["::pcc::PCCDialect", "::mlir::shard::ShardDialect"];
}

def PropagateSharding : Pass<"pcc-propagate-sharding", "mlir::ModuleOp"> {
  let summary = "Annotate every value with a sharding, from those of inputs and weights";
  let description = [{
    Walks @main in order and gives every op result the layout its op's
    sharding rule computes from the operands' layouts (see
    lib/pcc/Partition/ShardingRules.cpp). Existing annotations on function
    arguments and weights are the seeds. Needs the module's `shard.grid`.
  }];
  let dependentDialects = ["::pcc::PCCDialect", "::mlir::shard::ShardDialect"];
}

def Partition : Pass<"pcc-partition", "mlir::ModuleOp"> {
  let summary = "Rewrite the annotated global program into the per-device (SPMD) program";
  let description = [{
    Gives every value its local (per-device) shape, rewrites shape
    attributes accordingly, loads each device's shard of every split weight,
    and inserts `shard` collectives wherever a value's layout differs from
    the layout its user computes on: all_reduce / reduce_scatter for partial
    sums, all_gather for splits that must be undone, all_slice (no
    communication) for new splits. Function arguments and results keep their
    `pcc.sharding` so the runtime can split inputs and assemble outputs.
  }];
  let dependentDialects = ["::pcc::PCCDialect", "::mlir::shard::ShardDialect"];
}

#endif // PCC_PARTITION_PASSES_TD
