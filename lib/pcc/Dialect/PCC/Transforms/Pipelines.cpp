//===- Pipelines.cpp - pcc pass pipelines ---------------------------------===//

#include "pcc/Dialect/PCC/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void pcc::buildImportCleanupPipeline(mlir::OpPassManager &pm) {
  mlir::OpPassManager &fn = pm.nest<mlir::func::FuncOp>();
  fn.addPass(mlir::createCanonicalizerPass());
  fn.addPass(createRaiseComposites());
  fn.addPass(createSplitMergedHeads());
  fn.addPass(mlir::createCSEPass());
}

void pcc::registerPCCPassesAndPipelines() {
  registerPCCPasses();
  mlir::PassPipelineRegistration<>(
      "pcc-import-cleanup",
      "Canonicalize, raise composites and CSE an imported module",
      buildImportCleanupPipeline);
}
