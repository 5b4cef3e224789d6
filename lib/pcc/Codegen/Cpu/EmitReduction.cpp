//===- EmitReduction.cpp - reductions and arg-reductions --------------------===//

#include "CpuEmitter.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace pcc::cpu {

/// Reductions over axes and arg-reductions.
LogicalResult Emitter::emitReduction(Operation *op) {
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(op)) {
    Value in = op->getOperand(0);
    std::string kind = llvm::TypeSwitch<Operation *, std::string>(op)
                           .Case([](ReduceSumOp) { return "Sum"; })
                           .Case([](ReduceMeanOp) { return "Mean"; })
                           .Case([](ReduceMaxOp) { return "Max"; })
                           .Case([](ReduceMinOp) { return "Min"; })
                           .Default([](Operation *) { return "Prod"; });
    SmallVector<int64_t> shape(typeOf(in).getShape());
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    std::string T = elemType(in);
    if (axes.empty()) {
      emitCopy(out(op), ptr(in), tensorBytes(in));
      return success();
    }
    // Contiguous blocks of axes, reduced last block first.
    SmallVector<std::pair<int64_t, int64_t>> blocks;
    for (int64_t a : axes) {
      if (!blocks.empty() && blocks.back().second == a)
        blocks.back().second = a + 1;
      else
        blocks.push_back({a, a + 1});
    }
    std::string src = ptr(in);
    int64_t half = tensorBytes(in);
    for (size_t bi = blocks.size(); bi-- > 0;) {
      auto [lo, hi] = blocks[bi];
      int64_t outer = numElements(ArrayRef(shape).take_front(lo));
      int64_t n = numElements(ArrayRef(shape).slice(lo, hi - lo));
      int64_t inner = numElements(ArrayRef(shape).drop_front(hi));
      std::string dst;
      if (bi == 0) {
        dst = out(op);
      } else {
        dst = "reinterpret_cast<" + T + " *>(arena + " +
              std::to_string(schedule.scratchOffset(op) +
                             (bi % 2 ? 0 : half)) + ")";
      }
      os << "  reduce<" << T << ">(ReduceKind::" << kind << ", " << src << ", "
         << dst << ", " << outer << ", " << n << ", " << inner << ");\n";
      for (int64_t d = lo; d < hi; ++d)
        shape[d] = 1;
      src = dst;
    }
    return success();
  }
  if (isa<ArgMaxOp, ArgMinOp>(op)) {
    Value in = op->getOperand(0);
    ArrayRef<int64_t> s = typeOf(in).getShape();
    int64_t a = op->getAttrOfType<IntegerAttr>("axis").getInt();
    os << "  argReduce<" << elemType(in) << ">(" << (isa<ArgMaxOp>(op) ? "true" : "false")
       << ", " << ptr(in) << ", " << out(op) << ", " << numElements(s.take_front(a))
       << ", " << s[a] << ", " << numElements(s.drop_front(a + 1)) << ");\n";
    return success();
  }
  if (auto topk = dyn_cast<TopKOp>(op)) {
    Value in = topk.getInput();
    ArrayRef<int64_t> s = typeOf(in).getShape();
    int64_t a = topk.getAxis();
    os << "  topK<" << elemType(in) << ">(" << ptr(in) << ", " << out(op, 0)
       << ", " << out(op, 1) << ", " << numElements(s.take_front(a)) << ", "
       << s[a] << ", " << numElements(s.drop_front(a + 1)) << ", "
       << topk.getK() << ", " << (topk.getLargest() ? "true" : "false")
       << ");\n";
    return success();
  }
  return unsupported(op);
}

} // namespace pcc::cpu
