//===- EmitPooling.cpp - max, average and global pooling --------------------===//

#include "CpuEmitter.h"

using namespace mlir;

namespace pcc::cpu {

/// Max, average and global average pooling.
LogicalResult Emitter::emitPooling(Operation *op) {
  if (isa<MaxPoolOp, AveragePoolOp>(op)) {
    Value in = op->getOperand(0);
    if (failed(requireF32(op, in)))
      return failure();
    auto x = typeOf(in), y = typeOf(op->getResult(0));
    if (x.getRank() != 4 && x.getRank() != 3)
      return op->emitError() << "code generation does not support " << x.getRank() - 2 << "-D pooling yet";
    bool is1d = x.getRank() == 3;
    auto k = op->getAttrOfType<DenseI64ArrayAttr>("kernel_shape").asArrayRef();
    auto st = op->getAttrOfType<DenseI64ArrayAttr>("strides").asArrayRef();
    auto pd = op->getAttrOfType<DenseI64ArrayAttr>("pads").asArrayRef();
    auto dl = op->getAttrOfType<DenseI64ArrayAttr>("dilations").asArrayRef();
    bool countPad = false;
    if (auto avg = dyn_cast<AveragePoolOp>(op))
      countPad = avg.getCountIncludePad();
    int64_t sp = is1d ? 1 : 2;
    os << "  pool2dF32(" << (isa<MaxPoolOp>(op) ? "true" : "false") << ", "
       << ptr(in) << ", " << out(op) << ", " << x.getDimSize(0) * x.getDimSize(1)
       << ", " << (is1d ? 1 : x.getDimSize(2)) << ", " << x.getShape().back()
       << ", " << (is1d ? 1 : y.getDimSize(2)) << ", " << y.getShape().back()
       << ", " << (is1d ? 1 : k[0]) << ", " << k.back() << ", "
       << (is1d ? 1 : st[0]) << ", " << st.back() << ", " << (is1d ? 0 : pd[0])
       << ", " << pd[is1d ? 0 : 1] << ", " << (is1d ? 1 : dl[0]) << ", "
       << dl.back() << ", " << (countPad ? "true" : "false") << ", "
       << (is1d ? 0 : pd[sp]) << ", " << pd[is1d ? 1 : 3] << ");\n";
    return success();
  }
  if (auto gap = dyn_cast<GlobalAveragePoolOp>(op)) {
    if (failed(requireF32(op, gap.getInput())))
      return failure();
    auto x = typeOf(gap.getInput());
    os << "  globalAvgPoolF32(" << ptr(gap.getInput()) << ", " << out(op) << ", "
       << x.getDimSize(0) * x.getDimSize(1) << ", "
       << numElements(x.getShape().drop_front(2)) << ");\n";
    return success();
  }
  return unsupported(op);
}

} // namespace pcc::cpu
