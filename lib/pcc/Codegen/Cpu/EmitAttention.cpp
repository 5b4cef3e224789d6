//===- EmitAttention.cpp - pcc.attention on the blocked kernel ------------===//

#include "CpuEmitter.h"

using namespace mlir;

namespace pcc::cpu {

namespace {

/// Where a mask of local shape `mask` (broadcast, right-aligned, to the
/// scores [batch dims..., sq, sk]) holds element (b, i, j): per flattened
/// batch index b an offset, and the strides of a row and a key column
/// (0 where the mask broadcasts).
struct MaskLayout {
  SmallVector<int64_t> batchOffsets;
  int64_t row = 0, col = 0;
};

MaskLayout maskLayout(ArrayRef<int64_t> mask, ArrayRef<int64_t> batchDims) {
  size_t rank = batchDims.size() + 2;
  SmallVector<int64_t> padded(rank - mask.size(), 1);
  padded.append(mask.begin(), mask.end());
  SmallVector<int64_t> strides = stridesOf(padded);
  MaskLayout m;
  m.row = padded[rank - 2] == 1 ? 0 : strides[rank - 2];
  m.col = padded[rank - 1] == 1 ? 0 : strides[rank - 1];
  int64_t batch = numElements(batchDims);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t rem = b, off = 0;
    for (int64_t d = int64_t(batchDims.size()) - 1; d >= 0; --d) {
      int64_t c = rem % batchDims[d];
      rem /= batchDims[d];
      off += (padded[d] == 1 ? 0 : c) * strides[d];
    }
    m.batchOffsets.push_back(off);
  }
  return m;
}

} // namespace

int64_t attentionScratchBytes(AttentionOp op) {
  if (hasTensorCoreAttention(op)) // its tiles live in shared memory
    return 0;
  ArrayRef<int64_t> q = typeOf(op.getQuery()).getShape(),
                    k = typeOf(op.getKey()).getShape();
  int64_t batch = numElements(q.drop_back(2));
  int64_t sq = q[q.size() - 2], sk = k[k.size() - 2];
  int64_t d = q.back(), dv = typeOf(op.getValue()).getShape().back();
  // A 64 x 64 tile of scores, each row's running maximum and sum, and
  // around a ring two blocks of keys and values (the one folded in, the one
  // arriving).
  int64_t floats = 64 * 64 + 2 * batch * sq;
  if (op.getRingAxes())
    floats += 2 * batch * sk * (d + dv);
  return floats * 4;
}

LogicalResult Emitter::emitAttention(AttentionOp op) {
  Type e = typeOf(op.getQuery()).getElementType();
  bool tensorCores = kind == SourceKind::Cuda && (e.isF16() || e.isBF16()) &&
                     hasTensorCoreAttention(op);
  if (!tensorCores && failed(requireF32(op, op.getQuery())))
    return failure();
  if (!tensorCores && op.getSeqFirst())
    return op->emitError("seq_first attention needs the tensor-core kernel");
  ArrayRef<int64_t> q = typeOf(op.getQuery()).getShape(),
                    k = typeOf(op.getKey()).getShape();
  SmallVector<int64_t, 4> batchDims(q.drop_back(2));
  int64_t batch = numElements(batchDims);
  int64_t sq = q[q.size() - 2], sk = k[k.size() - 2];
  // [B, S, H, D]: B x H problems of S rows, read in place.
  int64_t heads = 0;
  if (op.getSeqFirst()) {
    heads = typeOf(op.getResult()).getDimSize(2);
    batch = q[0] * heads;
    sq = q[1];
    sk = k[1];
    // Problem b is head b % heads of sequence b / heads: masks index the
    // scores [B, H, Sq, Sk] in that order.
    batchDims = {q[0], heads};
  }
  int64_t d = q.back(), dv = typeOf(op.getValue()).getShape().back();
  if (batch * sq * dv == 0)
    return success();
  std::string id = std::to_string(nextTemp++);
  std::string masks = "masks" + id;
  os << "  AttentionMasks " << masks << ";\n";
  auto describe = [&](Value m, StringRef field) {
    if (!m)
      return;
    MaskLayout l = maskLayout(typeOf(m).getShape(), batchDims);
    std::string offs = (field + "Batch" + id).str();
    os << "  static const int64_t " << offs << "[] = {"
       << joinInts(l.batchOffsets) << "};\n"
       << "  " << masks << "." << field << " = " << ptr(m) << ";\n"
       << "  " << masks << "." << field << "Batch = " << offs << ";\n"
       << "  " << masks << "." << field << "Row = " << l.row << ";\n"
       << "  " << masks << "." << field << "Col = " << l.col << ";\n";
  };
  describe(op.getMask(), "add");
  describe(op.getHide(), "hide");
  if (std::optional<int64_t> from = op.getHideFrom())
    os << "  " << masks << ".band = true;\n"
       << "  " << masks << ".hideFrom = " << *from << ";\n";
  Type f32 = Float32Type::get(op->getContext());
  if (op.getHide() || op.getHideFrom())
    os << "  " << masks << ".fill = "
       << floatLiteral(op.getFill().convertToDouble(), f32) << ";\n";
  if (tensorCores) {
    // With head_offsets: each operand from its first head, rows of its own
    // head count apart.
    std::string operands, pitches;
    Value qkv[] = {op.getQuery(), op.getKey(), op.getValue()};
    for (auto [i, v] : llvm::enumerate(qkv)) {
      int64_t first = op.getHeadOffsets() ? (*op.getHeadOffsets())[i] : 0;
      operands +=
          ptr(v) + (first ? " + " + std::to_string(first * d) : "") + ", ";
      if (op.getHeadOffsets())
        pitches += ", " + std::to_string(typeOf(v).getDimSize(2) * d);
    }
    os << "  attention16<" << cppType(e) << ">(" << operands << out(op) << ", "
       << batch << ", " << sq << ", " << sk << ", " << d << ", "
       << floatLiteral(op.getScale().convertToDouble(), f32) << ", "
       << (op.getDivide() ? "true" : "false") << ", " << masks << ", " << heads
       << pitches << ");\n";
    return success();
  }
  int ring = -1;
  if (auto axes = op.getRingAxes()) {
    ring = groupOf(*axes);
    result.ringShifts += mesh.size(*axes) - 1;
  }
  os << "  attentionF32(" << ptr(op.getQuery()) << ", " << ptr(op.getKey())
     << ", " << ptr(op.getValue()) << ", " << out(op) << ", " << batch << ", "
     << sq << ", " << sk << ", " << d << ", " << dv << ", "
     << floatLiteral(op.getScale().convertToDouble(), f32)
     << ", " << (op.getDivide() ? "true" : "false") << ", " << masks
     << ", mesh, " << ring << ", " << scratch(op) << ");\n";
  return success();
}

} // namespace pcc::cpu
