//===- EmitDropout.cpp - pcc.dropout -------------------------------------===//
//
// A kernel call, not a fused loop: each element's mask is drawn from its
// index in the whole tensor, so the call carries the block's split (the
// layout pcc-partition leaves on the op) for the runtime to place it. CPU
// and GPU ranks draw the same masks (pccrt/Dropout.h).
//
//===----------------------------------------------------------------------===//

#include "CpuEmitter.h"

#include "pcc/Sharding/Sharding.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace pcc::cpu {

LogicalResult Emitter::emitDropout(DropoutOp op) {
  if (failed(requireF32(op, op.getInput())))
    return failure();
  RankedTensorType t = typeOf(op.getResult());
  std::string id = std::to_string(nextTemp++);
  std::string shape = "nullptr", split = "nullptr";
  if (t.getRank()) {
    os << "  static const int64_t shape" << id << "[] = {";
    for (auto [i, d] : llvm::enumerate(t.getShape()))
      os << (i ? ", " : "") << d;
    os << "};\n";
    shape = "shape" + id;
    TensorSharding s = shardingOf(op.getResult());
    if (!s.isReplicated()) {
      os << "  static const DimSplit split" << id << "[] = " << splitArray(s)
         << ";\n";
      split = "split" + id;
    }
  }
  os << "  dropout(mesh, " << ptr(op.getInput()) << ", " << out(op) << ", "
     << t.getRank() << ", " << shape << ", " << split << ", "
     << uint64_t(op.getSeed()) << "ull, " << uint64_t(op.getStream()) << "ull, "
     << (op.getStep() ? ptr(op.getStep()) : "nullptr") << ", "
     << llvm::formatv("{0:e17}", op.getRatio().convertToDouble()).str()
     << ");\n";
  return success();
}

} // namespace pcc::cpu
