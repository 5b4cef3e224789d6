//===- pcc-opt.cpp - pcc optimizer driver ---------------------------------===//
//
// mlir-opt over the dialects pcc uses (pcc, shard, func, arith, tensor) and
// every pcc pass; lit tests drive passes through it.
//
//===----------------------------------------------------------------------===//

#include "pcc/Dialect/PCC/IR/PCCDialect.h"
#include "pcc/Dialect/PCC/Transforms/Passes.h"
#include "pcc/Partition/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  pcc::registerPCCPassesAndPipelines();
  pcc::registerPartitionPasses();
  mlir::DialectRegistry registry;
  registry.insert<pcc::PCCDialect, mlir::shard::ShardDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "pcc optimizer driver\n", registry));
}
