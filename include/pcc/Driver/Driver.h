//===- Driver.h - the compilation pipeline as a library ---------*- C++ -*-===//
//
// import -> clean-up -> plan -> apply the plan -> partition -> code
// generation -> build, as calls that pcc, tests and later tools share. Each
// step reports errors through the context's diagnostics (one line each, see
// tools/pcc) or as llvm::Error; none prints anything else.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_DRIVER_DRIVER_H
#define PCC_DRIVER_DRIVER_H

#include "pcc/Codegen/Compile.h"
#include "pcc/Import/ONNXImporter.h"
#include "pcc/Plan/Planner.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace pcc {

/// The cluster to plan for: `name` (a preset or a JSON file) if given, else
/// the calibrated host spec if there is one, else the dgx-a100 preset.
llvm::Expected<ClusterSpec> chooseCluster(llvm::StringRef name);

/// Imports the ONNX model at `path`; with `cleanup`, also folds, raises
/// composites and removes dead code (buildImportCleanupPipeline). Null on
/// failure, after a diagnostic.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(llvm::StringRef path,
                                            mlir::MLIRContext &context,
                                            const ImportOptions &options,
                                            bool cleanup);

/// Stores the module's float tensors in `precision` (fp32, tf32, bf16,
/// fp16): pcc-convert-precision. Before planning, so the plan prices it.
mlir::LogicalResult convertPrecision(mlir::ModuleOp module,
                                     llvm::StringRef precision);

/// The tensor-parallel degree a vocabulary must divide by for `options`:
/// the forced one (or the devices forced degrees leave to tp), else the
/// largest power of two up to 8 that divides the devices (every 1D degree
/// the planner tries then splits a padded vocabulary).
int64_t vocabularyDegree(const PlanOptions &options);

/// Pads the vocabulary with zero rows to a multiple of `multiple` x
/// `degree` when `degree` does not divide it: pcc-pad-vocabulary. Before
/// planning, so the plan prices (and the partitioner splits) it.
mlir::LogicalResult padVocabulary(mlir::ModuleOp module, int64_t degree,
                                  int64_t multiple);

/// Joins products of one input by separate weights into one product
/// (pcc-fuse-sibling-gemms): separate Q, K, V projections planned and run
/// as a fused QKV one. A training step trains the joined weight and saves
/// it as its initializers; those named in `keep` (frozen) stay apart.
mlir::LogicalResult fuseSiblingGemms(mlir::ModuleOp module,
                                     llvm::ArrayRef<std::string> keep = {});

/// A PlanOptions::progress that shows the search on stderr: on a terminal,
/// one line rewritten in place once planning takes more than a second;
/// with `always`, a line every half second wherever stderr goes. Null when
/// there is nothing to show.
std::function<void(const PlanProgress &)> planProgressPrinter(bool always);

/// Completes forced degrees (0 = searched) and --devices into a consistent
/// request: forced degrees alone imply the devices they need; forced
/// degrees must divide the devices (and multiply to them when all are
/// forced).
llvm::Expected<PlanOptions> completeDegrees(PlanOptions options,
                                            bool devicesGiven);

struct PlannedModel {
  ClusterSpec cluster;
  PlanGraph graph;
  Plan plan;
};

/// Plans `fn` on `cluster`. 1D tensor candidates are priced on the exact
/// search's layouts and on Megatron-LM's (with and without sequence
/// parallelism); with `layouts` Megatron's, on those only. `target`
/// decides which candidates are runnable.
llvm::Expected<PlannedModel> planModel(mlir::func::FuncOp fn,
                                       const ClusterSpec &cluster,
                                       PlanOptions options,
                                       TensorLayouts layouts,
                                       const Target &target);

/// A forced tensor degree that splits no op of the model (every op runs
/// whole on each of the group's devices), said in one line; or nothing.
std::optional<std::string> idleSplitWarning(const PlannedModel &planned,
                                            const PlanOptions &options);

struct ChosenPlan {
  ParallelPlan plan;
  /// What the planner chose and predicted ("" for a fully forced plan).
  std::string note;
  /// idleSplitWarning's line, or "".
  std::string warning;
};

/// Chooses the plan to compile `module` with, among those `target` runs: the forced degrees, the planner's best otherwise (and the
/// planner's per-op tensor layouts unless `layouts` is Megatron). For more
/// than one device, records the plan on the module (kPlanAttr) and, for
/// planned layouts, each op's layouts (kPlannedShardingAttr).
llvm::Expected<ChosenPlan> choosePlan(mlir::ModuleOp module,
                                      PlanOptions options,
                                      TensorLayouts layouts,
                                      llvm::StringRef clusterName,
                                      const Target &target);

/// Applies the module's plan (pcc-apply-plan) and, with `partition`, turns
/// the module into the per-device program (pcc-partition).
mlir::LogicalResult applyPlan(mlir::ModuleOp module, bool partition);

/// Generates, builds and writes the executable for the (partitioned)
/// `module` into options.outputDir with options.target, reading weights from
/// the ONNX model at options.modelPath.
mlir::LogicalResult compileModel(mlir::ModuleOp module,
                                 CompileOptions options,
                                 CompileReport &report);

} // namespace pcc

#endif // PCC_DRIVER_DRIVER_H
