//===- EmitCollective.cpp - collectives over mesh axes ----------------------===//

#include "CpuEmitter.h"

#include "pcc/Sharding/ParallelPlan.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;

namespace pcc::cpu {

/// Collectives over mesh axes and the sends and receives between pipeline
/// stages (the runtime's MPI calls).
LogicalResult Emitter::emitCollective(Operation *op) {
  if (auto send = dyn_cast<SendOp>(op)) {
    int g = groupOf({send.getGridAxis()});
    int64_t bytes = tensorBytes(send.getInput());
    // Stage s runs on pipeline device s % devices (interleaved 1F1B).
    os << "  sendToStage(mesh, " << g << ", "
       << send.getToStage() % pipelineDevices() << ", " << ptr(send.getInput())
       << ", " << bytes << ", " << send.getTag() << ");\n";
    ++result.sends;
    result.sendBytes += bytes;
    return success();
  }
  if (auto recv = dyn_cast<RecvOp>(op)) {
    int g = groupOf({recv.getGridAxis()});
    os << "  recvFromStage(mesh, " << g << ", "
       << recv.getFromStage() % pipelineDevices() << ", " << out(op) << ", "
       << tensorBytes(recv.getResult()) << ", " << recv.getTag() << ");\n";
    return success();
  }
  if (isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
          shard::AllSliceOp, shard::AllToAllOp>(op)) {
    Value in = op->getOperand(0);
    auto axesAttr = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
    SmallVector<int64_t> axes(axesAttr.asArrayRef().begin(),
                              axesAttr.asArrayRef().end());
    std::string dtype =
        "static_cast<DType>(" +
        std::to_string(onnxCode(typeOf(in).getElementType())) + ")";
    int64_t elem = elementBytes(typeOf(in).getElementType());
    auto split = [&](Value v, StringRef axisName) {
      ArrayRef<int64_t> s = typeOf(v).getShape();
      int64_t a = op->getAttrOfType<IntegerAttr>(axisName).getInt();
      return std::make_pair(numElements(s.take_front(a)), numElements(s.drop_front(a)));
    };
    // Over the microbatch axis alone: accumulated across the step's runs
    // (pcc-accumulate-microbatches).
    if (axes.size() == 1 && axes[0] == mesh.axisNamed(kMicrobatchAxis) &&
        isa<shard::AllReduceOp, shard::AllGatherOp>(op)) {
      std::string id = std::to_string(accumulators++);
      if (isa<shard::AllReduceOp>(op)) {
        os << "  microbatchSum(mesh, " << id << ", " << dtype << ", " << ptr(in)
           << ", " << out(op) << ", " << typeOf(in).getNumElements() << ");\n";
      } else {
        auto [outer, block] = split(in, "gather_axis");
        os << "  microbatchGather(mesh, " << id << ", " << ptr(in) << ", "
           << out(op) << ", " << outer << ", " << block * elem << ");\n";
      }
      return success();
    }
    std::string g = std::to_string(groupOf(axes));
    int64_t bytes = tensorBytes(in);
    bool once = op->hasAttr(kPrologueAttr) || op->hasAttr(kOncePerStepAttr);
    if (!isa<shard::AllSliceOp>(op))
      result.collectiveBytes += bytes;
    if (auto r = dyn_cast<shard::AllReduceOp>(op)) {
      ++result.allReduces;
      result.onceAllReduces += once;
      if (r.getReduction() != shard::ReductionKind::Sum)
        return op->emitError("code generation supports sum all-reduces only");
      os << "  allReduceSum(mesh, " << g << ", " << dtype << ", " << ptr(in)
         << ", " << out(op) << ", " << typeOf(in).getNumElements() << ");\n";
    } else if (isa<shard::AllGatherOp>(op)) {
      ++result.allGathers;
      result.onceAllGathers += once;
      auto [outer, block] = split(in, "gather_axis");
      os << "  allGather(mesh, " << g << ", " << ptr(in) << ", " << out(op)
         << ", " << outer << ", " << block * elem << ");\n";
    } else if (auto rs = dyn_cast<shard::ReduceScatterOp>(op)) {
      ++result.reduceScatters;
      result.onceReduceScatters += once;
      if (rs.getReduction() != shard::ReductionKind::Sum)
        return op->emitError("code generation supports sum reduce-scatters only");
      auto [outer, block] = split(op->getResult(0), "scatter_axis");
      os << "  reduceScatterSum(mesh, " << g << ", " << dtype << ", "
         << ptr(in) << ", " << out(op) << ", " << outer << ", " << block
         << ");\n";
    } else if (auto a2a = dyn_cast<shard::AllToAllOp>(op)) {
      ++result.allToAlls;
      result.onceAllToAlls += once;
      ArrayRef<int64_t> shape = typeOf(in).getShape();
      std::string id = std::to_string(nextTemp++);
      os << "  static const int64_t shape" << id << "[] = {" << joinInts(shape)
         << "};\n  allToAll(mesh, " << g << ", " << ptr(in) << ", " << out(op)
         << ", " << elem << ", " << shape.size() << ", shape" << id << ", "
         << a2a.getSplitAxis().getZExtValue() << ", "
         << a2a.getConcatAxis().getZExtValue() << ");\n";
    } else {
      ++result.allSlices;
      auto [outer, block] = split(op->getResult(0), "slice_axis");
      os << "  allSlice(mesh, " << g << ", " << ptr(in) << ", " << out(op)
         << ", " << outer << ", " << block * elem << ");\n";
    }
    return success();
  }
  return unsupported(op);
}

} // namespace pcc::cpu
