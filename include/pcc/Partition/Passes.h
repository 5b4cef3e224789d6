//===- Passes.h - sharding and SPMD partitioning passes ---------*- C++ -*-===//

#ifndef PCC_PARTITION_PASSES_H
#define PCC_PARTITION_PASSES_H

#include "pcc/Dialect/PCC/IR/PCCDialect.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Pass/Pass.h"

namespace pcc {

#define GEN_PASS_DECL
#include "pcc/Partition/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pcc/Partition/Passes.h.inc"

} // namespace pcc

#endif // PCC_PARTITION_PASSES_H
