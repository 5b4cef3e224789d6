//===- Passes.td - sharding and SPMD partitioning passes ---*- tablegen -*-===//

#ifndef PCC_PARTITION_PASSES_TD
#define PCC_PARTITION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ApplyPlan : Pass<"pcc-apply-plan", "mlir::ModuleOp"> {
  let summary = "Create the device grid of the module's plan and shard the model by it";
  let description = [{
    Reads the module's plan (`pcc.plan = #pcc.plan<...>`: see PCCAttrs.td),
    creates `shard.grid @mesh` with its axes (named by `pcc.axis_names`:
    "dp", "tp"), then annotates every value with a `#pcc.sharding`:

    - data parallel (`dp`): every model input whose leading dimension is the
      batch is split over the dp axis; everything downstream follows;
    - Megatron 1D tensor parallel (`tp`, `tensor_layout = "megatron"`): a
      linear layer whose input is whole on the tp axis is made
      column-parallel (its weight's output columns split; a fused Q|K|V
      projection is split per group so each device holds whole heads), and
      one whose input arrives split on its contracted dimension becomes
      row-parallel (a partial sum, reduced where a whole value is needed);
      embedding tables are split by vocabulary.
    - with `tensor_layout = "planned"`, ops annotated by the planner with
      `pcc.planned_sharding` (per-operand layouts on the tp axis alone,
      written as axis 0) run on those layouts instead: each is mapped onto
      the tp axis, merged with the dp splits that reach the op, and pinned on
      the op as `pcc.operand_sharding`.

    Splits that do not divide a dimension are not made: that part of the
    model runs whole on every device of the axis, never wrong.
    - pipeline (`pp`): the ops are cut into contiguous stages (`pcc.stage`:
      the planner's cut, recorded as `pcc.planned_stage`, or balanced by
      work); with several microbatches the grid gets a time axis `mb` after
      `pp` and the batch is split over (`mb`, `dp`): each run computes one
      microbatch.
    Plans this pass cannot apply yet (sequence axes, 2D/2.5D/3D tensor
    modes) are errors naming the part that cannot run.
  }];
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

def BucketGradients : Pass<"pcc-bucket-gradients", "mlir::func::FuncOp"> {
  let summary = "Sum a training step's gradients in few all-reduces (buckets)";
  let description = [{
    On the per-device program of a training step: the all-reduces that sum
    gradients for the optimizer (their users carry `pcc.optimizer`) over
    the same grid axes are joined into buckets of at most `bucket-bytes`:
    each gradient flattened (a reshape, no copy) and concatenated, one
    all-reduce per bucket placed after its last gradient, and the sums
    sliced back out. The values are the same (each element is summed over
    the same devices); the step makes one collective call per bucket
    instead of one per parameter, as PyTorch DDP's buckets do, and as the
    planner prices the gradient all-reduce.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"25 << 20",
           "Largest bucket, in bytes (PyTorch DDP's default: 25 MiB)">,
  ];
  let dependentDialects = ["::pcc::PCCDialect", "::mlir::shard::ShardDialect"];
}

def AccumulateMicrobatches : Pass<"pcc-accumulate-microbatches", "mlir::ModuleOp"> {
  let summary = "Sum a training step's gradients over the microbatches of a pipeline";
  let description = [{
    For a training step on a grid with a microbatch axis, after
    pcc-partition: a collective over the microbatch axis alone accumulates
    across the runs of a step (a sum, or each microbatch's block in its
    place) and holds the whole batch's result after the last run; a
    collective over that axis and others is split in two around it. The ops
    that read such results, and the optimizer update, carry
    `pcc.once_per_step` and move to the end of the program: the runtime runs
    them after the last microbatch only. An op that would run once per step
    but reads a single microbatch's value is an error. Without a microbatch
    axis, or for inference, it does nothing.
  }];
  let dependentDialects = ["::pcc::PCCDialect", "::mlir::shard::ShardDialect"];
}

def PipelineStages : Pass<"pcc-pipeline-stages", "mlir::ModuleOp"> {
  let summary = "Make each pipeline stage of the per-device program self-contained";
  let description = [{
    For a program on a grid with a `pp` axis, after pcc-partition: gives
    every op a `pcc.stage` (ops the partitioner added run with the op they
    feed), replaces every value one stage takes from another by a
    `pcc.recv` at the start of the receiving stage and a `pcc.send` at the
    end of the producing one, gives each stage its own copy of the weights
    and constants it reads, and records on each function result the stage
    that returns it. A device runs only the ops of its stage (its coordinate
    on the pp axis). Without a pp axis it does nothing.
  }];
  let dependentDialects = ["::pcc::PCCDialect", "::mlir::shard::ShardDialect"];
}

#endif // PCC_PARTITION_PASSES_TD
