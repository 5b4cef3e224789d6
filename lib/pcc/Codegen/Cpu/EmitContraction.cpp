//===- EmitContraction.cpp - matmul, gemm and conv on BLAS ------------------===//

#include "CpuEmitter.h"

using namespace mlir;

namespace pcc::cpu {

/// One device's SUMMA product over the grid axes `axes` = [row, col]:
/// x [m, k] (this device's rows and contraction block), w [k, n] (or
/// [n, k] with transB), y [m, n]; y already holds beta's addend if any.
void Emitter::emitSumma(Operation *op, ArrayRef<int64_t> axes, Value x,
                        Value w, bool transB, double alpha, double beta) {
  ArrayRef<int64_t> ws = typeOf(w).getShape();
  int64_t k = ws[transB ? 1 : 0], n = ws[transB ? 0 : 1];
  int64_t m = typeOf(x).getNumElements() / std::max<int64_t>(k, 1);
  int alongRow = groupOf({axes[1]}), alongCol = groupOf({axes[0]});
  int64_t q = mesh.shape[axes[1]];
  result.broadcasts += 2 * q;
  result.collectiveBytes += q * (typeOf(x).getNumElements() +
                                 typeOf(w).getNumElements()) * 4;
  Type f32 = typeOf(x).getElementType();
  os << "  summaF32(" << ptr(x) << ", " << ptr(w) << ", " << out(op) << ", "
     << m << ", " << k << ", " << n << ", " << (transB ? "true" : "false")
     << ", " << floatLiteral(alpha, f32) << ", " << floatLiteral(beta, f32)
     << ", mesh, " << alongRow << ", " << alongCol << ", " << scratch(op)
     << ");\n";
}

/// The runtime's GEMM (`batched`: its batched matmul) for operands of
/// `v`'s element type: f32 everywhere, 16-bit on GPU ranks (tensor cores).
FailureOr<std::string> Emitter::gemmFunction(Operation *op, Value v,
                                             bool batched) {
  Type e = typeOf(v).getElementType();
  Type out = typeOf(op->getResult(0)).getElementType();
  std::string name = batched ? "batchedMatmul" : "gemm";
  if (kind == SourceKind::Cuda && (e.isF16() || e.isBF16()))
    return name + "16<" + cppType(e) + (out != e ? ", float" : "") + ">";
  if (failed(requireF32(op, v)))
    return failure();
  return name + "F32";
}

namespace {

/// One GEMM call's operands: op(a) [m, k] times op(b) [k, n], scaled by
/// alpha; `c` is a Gemm's addend, if any.
struct GemmCall {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0;
  double alpha = 1.0, beta = 0.0;
  Value a, b, c;
};

/// `op` as one plain GEMM: a matmul without broadcast batches or a Gemm,
/// neither split over a SUMMA grid.
std::optional<GemmCall> plainGemm(Operation *op) {
  GemmCall g;
  if (auto mm = dyn_cast<MatMulOp>(op)) {
    GemmShape gs = mm.gemmShape();
    if (mm.getSummaAxes() || gs.batch != 1)
      return std::nullopt;
    g.m = gs.m, g.n = gs.n, g.k = gs.k, g.lda = gs.k, g.ldb = gs.n;
    g.a = mm.getLhs(), g.b = mm.getRhs();
    return g;
  }
  auto gemm = dyn_cast<GemmOp>(op);
  if (!gemm || gemm.getSummaAxes())
    return std::nullopt;
  GemmShape gs = gemm.gemmShape();
  g.transA = gemm.getTransA(), g.transB = gemm.getTransB();
  g.m = gs.m, g.n = gs.n, g.k = gs.k;
  g.lda = typeOf(gemm.getA()).getShape().back();
  g.ldb = typeOf(gemm.getB()).getShape().back();
  g.alpha = gemm.getAlpha().convertToDouble();
  g.beta = gemm.getBeta().convertToDouble();
  g.a = gemm.getA(), g.b = gemm.getB(), g.c = gemm.getC();
  return g;
}

} // namespace

std::optional<Emitter::GemmEpilogue>
Emitter::gemmEpilogue(Operation *product, ArrayRef<Operation *> members) {
  std::optional<GemmCall> g = plainGemm(product);
  Type t = typeOf(product->getResult(0)).getElementType();
  if (kind != SourceKind::Cuda || !g || !(t.isF16() || t.isBF16()) ||
      typeOf(g->a).getElementType() != t ||
      typeOf(g->b).getElementType() != t || members.size() > 2 ||
      (members.empty() && !g->c))
    return std::nullopt;
  GemmEpilogue e;
  // A Gemm's own addend is the bias, where it is one.
  if (g->c) {
    if (g->beta != 1.0 || !isColumnBias(shapeOf(g->c), g->n) ||
        typeOf(g->c).getElementType() != t)
      return std::nullopt;
    e.bias = g->c;
  }
  ArrayRef<int64_t> shape = typeOf(product->getResult(0)).getShape();
  Value cur = product->getResult(0);
  for (Operation *op : members) {
    auto add = dyn_cast<AddOp>(op);
    if (!add || typeOf(add.getResult()).getShape() != shape ||
        (add.getLhs() == cur) == (add.getRhs() == cur))
      return std::nullopt;
    Value x = add.getLhs() == cur ? add.getRhs() : add.getLhs();
    if (typeOf(x).getElementType() != t ||
        llvm::is_contained(members, x.getDefiningOp()))
      return std::nullopt;
    if (typeOf(x).getShape() == shape && !e.addend)
      e.addend = x;
    else if (isColumnBias(shapeOf(x), g->n) && !e.bias)
      e.bias = x;
    else
      return std::nullopt;
    cur = add.getResult();
  }
  return e;
}

LogicalResult Emitter::emitGemmEpilogue(Operation *root, Operation *product) {
  // A Gemm alone (root == product) applies only its own bias.
  ArrayRef<Operation *> members;
  if (root != product)
    members = schedule.members[root];
  ++result.kernelCalls;
  result.fusedOps += members.size();
  GemmCall g = *plainGemm(product);
  GemmEpilogue e = *gemmEpilogue(product, members);
  Type f32 = Float32Type::get(root->getContext());
  os << "  // " << product->getName()
     << " with its epilogue (cuBLASLt):" << (e.bias ? " bias" : "")
     << (e.addend ? " addend" : "");
  os << "\n  gemmEpilogue16<" << elemType(product->getResult(0)) << ">("
     << (g.transA ? "true" : "false") << ", " << (g.transB ? "true" : "false")
     << ", " << g.m << ", " << g.n << ", " << g.k << ", "
     << floatLiteral(g.alpha, f32) << ", " << ptr(g.a) << ", " << g.lda << ", "
     << ptr(g.b) << ", " << g.ldb << ", " << (e.bias ? ptr(e.bias) : "nullptr")
     << ", " << (e.addend ? ptr(e.addend) : "nullptr") << ", " << out(root)
     << ", " << g.n << ");\n";
  return success();
}

/// Matrix products and convolutions, on BLAS GEMMs.
LogicalResult Emitter::emitContraction(Operation *op) {
  Type f32 = Float32Type::get(op->getContext());
  if (auto mm = dyn_cast<MatMulOp>(op)) {
    if (mm.getSummaAxes() && failed(requireF32(op, mm.getLhs())))
      return failure();
    if (auto axes = mm.getSummaAxes()) {
      emitSumma(op, *axes, mm.getLhs(), mm.getRhs(), false, 1.0, 0.0);
      return success();
    }
    GemmShape gs = mm.gemmShape();
    int64_t m = gs.m, k = gs.k, n = gs.n, outBatch = gs.batch;
    if (m * n == 0 || outBatch == 0)
      return success();
    auto gemm = gemmFunction(op, mm.getLhs(), /*batched=*/outBatch != 1);
    if (failed(gemm))
      return failure();
    if (outBatch == 1) {
      os << "  " << *gemm << "(false, false, " << m << ", " << n << ", " << k
         << ", 1.0f, " << ptr(mm.getLhs()) << ", " << k << ", "
         << ptr(mm.getRhs()) << ", " << n << ", 0.0f, " << out(op) << ", " << n
         << ");\n";
      return success();
    }
    // Broadcast batches: per-batch element offsets, computed now.
    SmallVector<int64_t> ls(typeOf(mm.getLhs()).getShape());
    SmallVector<int64_t> rs(typeOf(mm.getRhs()).getShape());
    if (ls.size() == 1)
      ls.insert(ls.begin(), 1);
    if (rs.size() == 1)
      rs.push_back(1);
    ArrayRef<int64_t> lb = ArrayRef(ls).drop_back(2), rb = ArrayRef(rs).drop_back(2);
    size_t rank = std::max(lb.size(), rb.size());
    SmallVector<int64_t> bshape(rank, 1), lpad(rank, 1), rpad(rank, 1);
    for (size_t d = 0; d < lb.size(); ++d)
      lpad[rank - lb.size() + d] = lb[d];
    for (size_t d = 0; d < rb.size(); ++d)
      rpad[rank - rb.size() + d] = rb[d];
    for (size_t d = 0; d < rank; ++d)
      bshape[d] = std::max(lpad[d], rpad[d]);
    auto lstr = stridesOf(lpad), rstr = stridesOf(rpad);
    SmallVector<int64_t> offA, offB;
    for (int64_t b = 0; b < outBatch; ++b) {
      int64_t rem = b, oa = 0, ob = 0;
      for (int64_t d = rank - 1; d >= 0; --d) {
        int64_t c = rem % bshape[d];
        rem /= bshape[d];
        oa += (lpad[d] == 1 ? 0 : c) * lstr[d];
        ob += (rpad[d] == 1 ? 0 : c) * rstr[d];
      }
      offA.push_back(oa * m * k);
      offB.push_back(ob * k * n);
    }
    std::string id = std::to_string(nextTemp++);
    os << "  static const int64_t offA" << id << "[] = {" << joinInts(offA)
       << "};\n  static const int64_t offB" << id << "[] = {" << joinInts(offB)
       << "};\n  " << *gemm << "(" << outBatch << ", offA" << id << ", offB"
       << id << ", " << m << ", " << n << ", " << k << ", " << ptr(mm.getLhs())
       << ", " << ptr(mm.getRhs()) << ", " << out(op) << ");\n";
    return success();
  }
  if (auto g = dyn_cast<GemmOp>(op)) {
    auto gemm = gemmFunction(op, g.getA(), /*batched=*/false);
    if (failed(gemm) || (g.getSummaAxes() && failed(requireF32(op, g.getA()))))
      return failure();
    auto a = typeOf(g.getA()), b = typeOf(g.getB());
    auto y = typeOf(g.getResult());
    GemmShape gs = g.gemmShape();
    int64_t m = gs.m, n = gs.n, k = gs.k;
    // GPU ranks: a 16-bit Gemm's bias in cuBLASLt's epilogue, not copied
    // into Y first.
    if (gemmEpilogue(op, {}))
      return emitGemmEpilogue(op, op);
    float beta = 0.0f;
    if (Value c = g.getC()) {
      // Broadcast C into Y (a strided copy, stride 0 along a broadcast
      // dimension), then accumulate the product with beta.
      ArrayRef<int64_t> cs = typeOf(c).getShape();
      int64_t rowStride = cs.size() == 2 && cs[0] != 1 ? cs[1] : 0;
      int64_t colStride = cs.empty() || cs.back() == 1 ? 0 : 1;
      std::string id = std::to_string(nextTemp++);
      os << "  static const int64_t shape" << id << "[] = {" << m << ", " << n
         << "};\n  static const int64_t strides" << id << "[] = {"
         << rowStride << ", " << colStride << "};\n  stridedCopy("
         << elementBytes(y.getElementType())
         << ", reinterpret_cast<const char *>(" << ptr(c)
         << "), reinterpret_cast<char *>(" << out(op) << "), 2, shape" << id
         << ", 0, strides" << id << ");\n";
      beta = g.getBeta().convertToFloat();
    }
    if (auto axes = g.getSummaAxes()) {
      if (g.getTransA())
        return op->emitError("SUMMA with a transposed left operand");
      emitSumma(op, *axes, g.getA(), g.getB(), g.getTransB(),
                g.getAlpha().convertToDouble(), beta);
      return success();
    }
    os << "  " << *gemm << "(" << (g.getTransA() ? "true" : "false") << ", "
       << (g.getTransB() ? "true" : "false") << ", " << m << ", " << n << ", "
       << k << ", " << floatLiteral(g.getAlpha().convertToDouble(), f32)
       << ", " << ptr(g.getA()) << ", " << a.getShape().back() << ", "
       << ptr(g.getB()) << ", " << b.getShape().back() << ", "
       << floatLiteral(beta, f32) << ", " << out(op) << ", " << n << ");\n";
    return success();
  }
  if (auto conv = dyn_cast<ConvOp>(op)) {
    if (failed(requireF32(op, conv.getInput())))
      return failure();
    auto x = typeOf(conv.getInput()), w = typeOf(conv.getFilter());
    auto y = typeOf(conv.getResult());
    if (x.getRank() != 4 && x.getRank() != 3)
      return op->emitError() << "code generation does not support " << x.getRank() - 2 << "-D conv yet";
    bool is1d = x.getRank() == 3;
    auto st = conv.getStrides(), pd = conv.getPads(), dl = conv.getDilations();
    int64_t h = is1d ? 1 : x.getDimSize(2), wd = x.getShape().back();
    int64_t kh = is1d ? 1 : w.getDimSize(2), kw = w.getShape().back();
    int64_t oh = is1d ? 1 : y.getDimSize(2), ow = y.getShape().back();
    int64_t sh = is1d ? 1 : st[0], sw = st.back();
    int64_t ph = is1d ? 0 : pd[0], pw = is1d ? pd[0] : pd[1];
    int64_t dh = is1d ? 1 : dl[0], dw = dl.back();
    os << "  conv2dF32(" << ptr(conv.getInput()) << ", " << ptr(conv.getFilter())
       << ", " << (conv.getBias() ? ptr(conv.getBias()) : "nullptr") << ", "
       << out(op) << ", " << x.getDimSize(0) << ", " << x.getDimSize(1) << ", "
       << h << ", " << wd << ", " << w.getDimSize(0) << ", " << kh << ", "
       << kw << ", " << oh << ", " << ow << ", " << sh << ", " << sw << ", "
       << ph << ", " << pw << ", " << dh << ", " << dw << ", "
       << conv.getGroup() << ", " << scratch(op) << ");\n";
    return success();
  }
  return unsupported(op);
}

} // namespace pcc::cpu
