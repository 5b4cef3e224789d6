//===- EmitNormalization.cpp - softmax and normalisations -------------------===//

#include "CpuEmitter.h"

using namespace mlir;

namespace pcc::cpu {

/// Softmax, layer and batch normalisation.
LogicalResult Emitter::emitNormalization(Operation *op) {
  if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
    Value in = op->getOperand(0);
    ArrayRef<int64_t> s = typeOf(in).getShape();
    int64_t a = op->getAttrOfType<IntegerAttr>("axis").getInt();
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("stat_axes");
    Type e = typeOf(in).getElementType();
    if (axes && !e.isF32() && !e.isF64())
      return op->emitError() << "a softmax over a split axis needs f32 or "
                                "f64, got "
                             << e;
    os << "  softmax" << (axes ? "Split" : "") << "<" << elemType(in) << ">("
       << ptr(in) << ", " << out(op) << ", " << numElements(s.take_front(a))
       << ", " << s[a] << ", " << numElements(s.drop_front(a + 1)) << ", "
       << (isa<LogSoftmaxOp>(op) ? "true" : "false");
    if (axes) {
      // One all-gather of each line's (max, sum).
      result.allGathers += 1;
      if (op->hasAttr(kPrologueAttr) || op->hasAttr(kOncePerStepAttr))
        result.onceAllGathers += 1;
      os << ", mesh, " << groupOf(axes.asArrayRef())
         << ", reinterpret_cast<double *>(arena + "
         << schedule.scratchOffset(op) << ")";
    }
    os << ");\n";
    return success();
  }
  if (auto ln = dyn_cast<LayerNormOp>(op)) {
    ArrayRef<int64_t> s = typeOf(ln.getInput()).getShape();
    int64_t n = numElements(s.drop_front(ln.getAxis()));
    int64_t sn = typeOf(ln.getScale()).getNumElements();
    int64_t bn = ln.getBias() ? typeOf(ln.getBias()).getNumElements() : 1;
    if ((sn != n && sn != 1) || (bn != n && bn != 1))
      return op->emitError() << "code generation needs layer_norm scale and "
                                "bias of the normalized size or size 1";
    if (auto axes = ln.getStatAxes()) {
      if (failed(requireF32(op, ln.getInput())) || sn != n || bn != n)
        return op->emitError("a split layer norm needs f32 and a scale and "
                             "bias of the normalized size");
      int g = groupOf(*axes);
      result.allReduces += 2;
      if (op->hasAttr(kPrologueAttr) || op->hasAttr(kOncePerStepAttr))
        result.onceAllReduces += 2;
      os << "  layerNormSplitF32(" << ptr(ln.getInput()) << ", "
         << ptr(ln.getScale()) << ", "
         << (ln.getBias() ? ptr(ln.getBias()) : "nullptr") << ", " << out(op)
         << ", " << numElements(s.take_front(ln.getAxis())) << ", " << n
         << ", " << n * mesh.size(*axes) << ", "
         << floatLiteral(ln.getEpsilon().convertToDouble(),
                         Float32Type::get(op->getContext()))
         << ", mesh, " << g << ", reinterpret_cast<double *>(arena + "
         << schedule.scratchOffset(op) << "));\n";
      return success();
    }
    // 16-bit rows reach here only on GPU ranks (WidenKernels.cpp).
    Type e = typeOf(ln.getInput()).getElementType();
    os << "  layerNorm" << (e.isF16() || e.isBF16() ? "16" : "") << "<"
       << elemType(ln.getInput()) << ">(" << ptr(ln.getInput())
       << ", " << ptr(ln.getScale()) << ", " << sn << ", "
       << (ln.getBias() ? ptr(ln.getBias()) : "nullptr") << ", " << bn << ", "
       << out(op) << ", " << numElements(s.take_front(ln.getAxis())) << ", " << n
       << ", " << floatLiteral(ln.getEpsilon().convertToDouble(), Float32Type::get(op->getContext())) << ");\n";
    return success();
  }
  if (auto bn = dyn_cast<BatchNormOp>(op)) {
    ArrayRef<int64_t> s = typeOf(bn.getInput()).getShape();
    os << "  batchNorm<" << elemType(bn.getInput()) << ">(" << ptr(bn.getInput())
       << ", " << ptr(bn.getScale()) << ", " << ptr(bn.getBias()) << ", "
       << ptr(bn.getMean()) << ", " << ptr(bn.getVariance()) << ", " << out(op)
       << ", " << s[0] << ", " << s[1] << ", " << numElements(s.drop_front(2))
       << ", " << floatLiteral(bn.getEpsilon().convertToDouble(), Float32Type::get(op->getContext())) << ");\n";
    return success();
  }
  return unsupported(op);
}

} // namespace pcc::cpu
