//===- EmitDataMovement.cpp - gathers, transposes, slices -------------------===//

#include "CpuEmitter.h"

using namespace mlir;

namespace pcc::cpu {

/// Gathers, scatters, transposes, slices, concatenation, splits and
/// triangles.
LogicalResult Emitter::emitDataMovement(Operation *op) {
  if (isa<GatherOp, ShardGatherOp>(op)) {
    Value table = op->getOperand(0), indices = op->getOperand(1);
    ArrayRef<int64_t> s = typeOf(table).getShape();
    int64_t a = op->getAttrOfType<IntegerAttr>("axis").getInt();
    a = a < 0 ? a + s.size() : a;
    os << "  if (!gather(" << elementBytes(typeOf(table).getElementType())
       << ", reinterpret_cast<const char *>(" << ptr(table) << "), "
       << ptr(indices) << ", reinterpret_cast<char *>(" << out(op) << "), "
       << numElements(s.take_front(a)) << ", " << s[a] << ", "
       << typeOf(indices).getNumElements() << ", "
       << numElements(s.drop_front(a + 1));
    // This device's block of a table split along the axis.
    if (auto sg = dyn_cast<ShardGatherOp>(op)) {
      int group = groupOf(sg.getGridAxes());
      os << ", groupIndex(mesh, " << group << ") * " << s[a]
         << ", groupSize(mesh, " << group << ") * " << s[a];
    }
    os << "))\n    return false;\n";
    return success();
  }
  if (auto sc = dyn_cast<ScatterNDOp>(op)) {
    // Batch dimensions lead data and indices; each batch entry's block of
    // data is scattered on its own.
    int64_t b = sc.getBatchDims();
    ArrayRef<int64_t> data = typeOf(sc.getData()).getShape();
    ArrayRef<int64_t> idx = typeOf(sc.getIndices()).getShape();
    int64_t k = idx.back();
    ArrayRef<int64_t> block = data.drop_front(b);
    std::string id = std::to_string(nextTemp++);
    StringRef r = sc.getReduction();
    os << "  static const int64_t scatterDims" << id << "[] = {"
       << joinInts(block.take_front(k)) << "};\n  if (!scatterND<"
       << elemType(sc.getData()) << ">(" << ptr(sc.getData()) << ", "
       << ptr(sc.getIndices()) << ", " << ptr(sc.getUpdates()) << ", "
       << out(op) << ", " << numElements(data.take_front(b)) << ", "
       << numElements(block) << ", "
       << numElements(idx.drop_front(b).drop_back()) << ", " << k
       << ", scatterDims" << id << ", " << numElements(block.drop_front(k))
       << ", ScatterReduction::"
       << (r == "add"   ? "Add"
           : r == "mul" ? "Mul"
                        : "None")
       << "))\n"
       << "    return false;\n";
    return success();
  }
  if (auto t = dyn_cast<TransposeOp>(op)) {
    auto inStrides = stridesOf(typeOf(t.getInput()).getShape());
    SmallVector<int64_t> strides;
    for (int64_t p : t.getPerm())
      strides.push_back(inStrides[p]);
    emitStridedCopy(op, t.getInput(), 0, strides);
    return success();
  }
  if (auto sl = dyn_cast<SliceOp>(op)) {
    auto inStrides = stridesOf(typeOf(sl.getInput()).getShape());
    SmallVector<int64_t> strides;
    int64_t base = 0;
    for (size_t d = 0; d < inStrides.size(); ++d) {
      base += sl.getStarts()[d] * inStrides[d];
      strides.push_back(inStrides[d] * sl.getSteps()[d]);
    }
    emitStridedCopy(op, sl.getInput(), base, strides);
    return success();
  }
  if (auto c = dyn_cast<ConcatOp>(op)) {
    ArrayRef<int64_t> s = typeOf(c.getResult()).getShape();
    int64_t a = c.getAxis() < 0 ? c.getAxis() + s.size() : c.getAxis();
    std::string id = std::to_string(nextTemp++);
    SmallVector<int64_t> sizes;
    os << "  const char *parts" << id << "[] = {";
    for (Value v : c.getInputs()) {
      os << "reinterpret_cast<const char *>(" << ptr(v) << "), ";
      sizes.push_back(typeOf(v).getDimSize(a));
    }
    os << "};\n  static const int64_t sizes" << id << "[] = {" << joinInts(sizes)
       << "};\n  concat(" << elementBytes(typeOf(c.getResult()).getElementType())
       << ", " << sizes.size() << ", parts" << id << ", sizes" << id
       << ", reinterpret_cast<char *>(" << out(op) << "), "
       << numElements(s.take_front(a)) << ", " << numElements(s.drop_front(a + 1))
       << ");\n";
    return success();
  }
  if (auto sp = dyn_cast<SplitOp>(op)) {
    ArrayRef<int64_t> s = typeOf(sp.getInput()).getShape();
    int64_t a = sp.getAxis() < 0 ? sp.getAxis() + s.size() : sp.getAxis();
    std::string id = std::to_string(nextTemp++);
    os << "  char *parts" << id << "[] = {";
    for (unsigned i = 0; i < sp.getNumResults(); ++i)
      os << "reinterpret_cast<char *>(" << out(op, i) << "), ";
    os << "};\n  static const int64_t sizes" << id << "[] = {"
       << joinInts(sp.getSizes()) << "};\n  split("
       << elementBytes(typeOf(sp.getInput()).getElementType())
       << ", reinterpret_cast<const char *>(" << ptr(sp.getInput()) << "), "
       << sp.getNumResults() << ", parts" << id << ", sizes" << id << ", "
       << numElements(s.take_front(a)) << ", " << numElements(s.drop_front(a + 1))
       << ");\n";
    return success();
  }
  if (auto tr = dyn_cast<TriluOp>(op)) {
    ArrayRef<int64_t> s = typeOf(tr.getInput()).getShape();
    os << "  trilu<" << elemType(tr.getInput()) << ">(" << ptr(tr.getInput())
       << ", " << out(op) << ", " << numElements(s.drop_back(2)) << ", "
       << s[s.size() - 2] << ", " << s.back() << ", "
       << (tr.getUpper() ? "true" : "false") << ", " << tr.getK() << ");\n";
    return success();
  }
  return unsupported(op);
}

void Emitter::emitStridedCopy(Operation *op, Value in, int64_t base,
                              ArrayRef<int64_t> strides) {
  ArrayRef<int64_t> shape = typeOf(op->getResult(0)).getShape();
  std::string id = std::to_string(nextTemp++);
  os << "  static const int64_t shape" << id << "[] = {" << joinInts(shape)
     << "};\n  static const int64_t strides" << id << "[] = {"
     << joinInts(strides) << "};\n  stridedCopy("
     << elementBytes(typeOf(in).getElementType())
     << ", reinterpret_cast<const char *>(" << ptr(in)
     << "), reinterpret_cast<char *>(" << ptr(op->getResult(0)) << "), "
     << shape.size() << ", " << (shape.empty() ? "nullptr" : "shape" + id)
     << ", " << base << ", " << (shape.empty() ? "nullptr" : "strides" + id)
     << ");\n";
}

} // namespace pcc::cpu
