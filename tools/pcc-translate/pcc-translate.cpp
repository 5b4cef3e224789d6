//===- pcc-translate.cpp - pcc dialect to target source -------------------===//
//
// mlir-translate over the pcc dialect: `--pcc-to-cpp` prints the C++ units
// the CPU target generates for a per-device module (each after a
// "// unit: NAME" line), `--pcc-to-cuda` the CUDA target's, so lit tests can
// check emitted code per op family without building it.
//
//===----------------------------------------------------------------------===//

#include "pcc/Codegen/Cpu/CpuTarget.h"
#include "pcc/Dialect/PCC/IR/PCCDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

int main(int argc, char **argv) {
  auto registerTarget = [](const char *name, const char *what,
                           auto emit) {
    TranslateFromMLIRRegistration(
        name, what,
        [emit](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
          auto module = dyn_cast<ModuleOp>(op);
          if (!module)
            return op->emitError("expected a module");
          auto emitted = emit(module);
          if (failed(emitted))
            return failure();
          for (const pcc::EmittedSource &unit : emitted->sources)
            os << "// unit: " << unit.name << "\n" << unit.text;
          return success();
        },
        [](DialectRegistry &registry) {
          registry.insert<pcc::PCCDialect, shard::ShardDialect,
                          func::FuncDialect>();
        });
  };
  registerTarget("pcc-to-cpp", "C++ of the CPU target for a per-device module",
                 [](ModuleOp m) { return pcc::emitCpp(m); });
  registerTarget("pcc-to-cuda",
                 "CUDA C++ of the CUDA target for a per-device module",
                 [](ModuleOp m) { return pcc::emitCuda(m); });
  return failed(mlirTranslateMain(argc, argv, "pcc translation driver"));
}
