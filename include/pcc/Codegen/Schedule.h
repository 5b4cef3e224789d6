//===- Schedule.h - what runs where, and in which storage -------*- C++ -*-===//
//
// The target-independent half of code generation: the order ops run in, the
// fusion groups (pointwise chains that run as one loop, Fusion.h), the storage
// of every value and the arena placement of the buffers by liveness. A back
// end turns a schedule into source for its device; it says only how much
// scratch each of its kernels needs.
//
// Invariants:
// - Every value has one storage: a model input, an entry of the weights file
//   (pcc.weight and pcc.constant), an arena buffer, an output buffer (a
//   returned result, `outputIndex`), an alias of another value's storage
//   (pcc.reshape), the weight a training step's update overwrites in place
//   (`storedIn`), or none (an op fused into a loop).
// - Each fusion group runs at the position of its root (last) op, so all of
//   its leaf operands are live until then.
// - A value's arena buffer lives from the position that writes it to the last
//   position that reads it or any alias of it; returned values live to the end
//   (they are copied to the output buffers last).
//
//===----------------------------------------------------------------------===//

#ifndef PCC_CODEGEN_SCHEDULE_H
#define PCC_CODEGEN_SCHEDULE_H

#include "pcc/Codegen/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace pcc {

struct Schedule {
  /// The function's ops in program order (terminator excluded).
  llvm::SmallVector<mlir::Operation *> ops;
  llvm::DenseMap<mlir::Operation *, int64_t> position;
  /// Each op's fusion root (itself when not fused into a user), and each
  /// root's pointwise members in program order.
  llvm::DenseMap<mlir::Operation *, mlir::Operation *> rootOf;
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<mlir::Operation *>>
      members;
  /// Fusion roots whose group a contraction's epilogue applies (the target
  /// chose it, AbsorbsEpilogueFn): the contraction runs at the root, and
  /// its result has no storage of its own.
  llvm::DenseMap<mlir::Operation *, mlir::Operation *> productOf;
  /// Results the function returns, stored in their output buffer as they
  /// are made (no arena buffer, no copy at the end), by output index: in
  /// programs that run once per call (no pipeline stage, no microbatch
  /// phases), a returned op result that is computed in place.
  llvm::DenseMap<mlir::Value, unsigned> outputIndex;
  /// Views (reshape results) and the value whose storage they share.
  llvm::DenseMap<mlir::Value, mlir::Value> aliasOf;
  /// New values of a trained parameter or optimizer state that their loop
  /// writes over the old one (updateInPlace), by the weight they replace:
  /// no arena buffer, and their pcc.assign copies nothing.
  llvm::DenseMap<mlir::Value, mlir::Value> storedIn;
  /// Arena buffers of values and of kernels' scratch, into `buffers`.
  llvm::DenseMap<mlir::Value, int64_t> bufferIndex;
  llvm::DenseMap<mlir::Operation *, int64_t> scratchIndex;
  std::vector<BufferRequest> buffers;
  /// Arena size after liveness-based reuse, and what it would be without.
  int64_t arenaBytes = 0, unsharedBytes = 0;

  bool isFusedAway(mlir::Operation *op) const {
    return rootOf.lookup(op) != op;
  }
  /// Byte offset of `v`'s arena buffer, of `op`'s scratch.
  int64_t offsetOf(mlir::Value v) const {
    return buffers[bufferIndex.lookup(v)].offset;
  }
  int64_t scratchOffset(mlir::Operation *op) const {
    return buffers[scratchIndex.lookup(op)].offset;
  }
};

/// Scratch bytes a target's kernel for `op` needs while it runs (0: none).
using ScratchBytesFn = llvm::function_ref<int64_t(mlir::Operation *)>;

/// Whether a target's kernel for `contraction` (whose result only the
/// fusion group `members` reads) applies that group as its epilogue.
using AbsorbsEpilogueFn = llvm::function_ref<bool(
    mlir::Operation *contraction, llvm::ArrayRef<mlir::Operation *> members)>;

/// Schedules the single-block function `fn`, or with `stage` only the ops
/// of that pipeline stage (kStageAttr) and the outputs it returns.
Schedule scheduleFunction(mlir::func::FuncOp fn, ScratchBytesFn scratchBytes,
                          std::optional<int64_t> stage = std::nullopt,
                          AbsorbsEpilogueFn absorbs = nullptr);

/// Pipeline stages of `fn`'s program: 1 + the largest kStageAttr (1 when no
/// op has one).
int64_t stageCount(mlir::func::FuncOp fn);

/// The stage that returns output `i` of `fn` (0 without stages).
int64_t outputStage(mlir::func::FuncOp fn, unsigned i);

/// One device must hold each of its tensors: refuses, at the op, an input or
/// result larger than `limitBytes` (0: no limit).
mlir::LogicalResult checkTensorSizes(mlir::func::FuncOp fn, int64_t limitBytes);

/// Everything a device holds at once (arena, weights, inputs read whole and
/// outputs) must fit in `limitBytes` (0: no limit).
mlir::LogicalResult checkDeviceMemory(mlir::func::FuncOp fn, int64_t arenaBytes,
                                      int64_t weightsBytes, int64_t limitBytes);

} // namespace pcc

#endif // PCC_CODEGEN_SCHEDULE_H
