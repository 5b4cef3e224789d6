//===- ScatterEmbeddingGradients.cpp - embedding gradients as scatters ----===//
//
// Gather's gradient rule sums the rows each index picked as a one-hot
// product: [tokens, rows] ones and zeros contracted with the output
// gradient's tokens (GatherOp::buildGradients), which the partitioner
// splits like any product (a vocabulary-parallel table: each device's
// rows). Run as written, the one-hot is a [tokens, rows] buffer (a GPT-2
// vocabulary at 8 x 1024 tokens: 1.6 GB of f32) and the product a GEMM as
// large as the head's. On a device's program this step rewrites such a
// product into the scatter-add it stands for: each token's gradient row
// added to its index's row, an index outside the device's rows (offset by
// the first class this device holds) adding zeros to row 0. A 16-bit
// product (f32 accumulation, one rounding) becomes an f32 scatter of the
// widened rows, rounded once. CPU and GPU ranks alike (GPU ranks sum each
// row's tokens in order after a sort: ScatterND.cu).
//
//===----------------------------------------------------------------------===//

#include "CpuEmitter.h"

#include "pcc/Dialect/PCC/IR/GradientBuilder.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;

namespace pcc::cpu {
namespace {

/// Whether `v` holds consecutive integers along its last axis, every other
/// axis of size 1: an iota constant, or a device's slice of one.
bool isConsecutive(Value v) {
  if (auto slice = v.getDefiningOp<shard::AllSliceOp>())
    return isConsecutive(slice.getInput());
  auto c = v.getDefiningOp<ConstantOp>();
  auto values = c ? dyn_cast<DenseIntElementsAttr>(c.getValue()) : nullptr;
  if (!values || values.isSplat())
    return false;
  ArrayRef<int64_t> shape = typeOf(v).getShape();
  if (llvm::any_of(shape.drop_back(), [](int64_t d) { return d != 1; }))
    return false;
  int64_t k = 0;
  APInt first;
  for (const APInt &x : values) {
    if (k == 0)
      first = x;
    else if ((x - first).getSExtValue() != k)
      return false;
    ++k;
  }
  return true;
}

} // namespace

void scatterEmbeddingGradients(func::FuncOp fn) {
  SmallVector<GemmOp> products;
  fn.walk([&](GemmOp gemm) {
    auto cast = gemm.getA().getDefiningOp<CastOp>();
    auto eq = cast ? cast.getInput().getDefiningOp<EqualOp>() : nullptr;
    if (!eq || !gemm.getTransA() || gemm.getTransB() || gemm.getC() ||
        gemm.getSummaAxes() || gemm.getAlpha().convertToDouble() != 1.0 ||
        !cast->hasOneUse() || !eq->hasOneUse())
      return;
    Type t = typeOf(gemm.getResult()).getElementType();
    if (!(t.isF32() || t.isF16() || t.isBF16()) ||
        typeOf(gemm.getA()).getElementType() != t ||
        typeOf(gemm.getB()).getElementType() != t)
      return;
    // oneHot(indices [R..., 1], classes): equal(iota [1..., rows], indices).
    ArrayRef<int64_t> a = typeOf(gemm.getA()).getShape();
    ArrayRef<int64_t> at = typeOf(eq.getRhs()).getShape();
    if (a.size() < 2 || at.size() != a.size() || at.back() != 1 ||
        at.drop_back() != a.drop_back() ||
        typeOf(eq.getLhs()).getShape().back() != a.back() ||
        !isConsecutive(eq.getLhs()))
      return;
    products.push_back(gemm);
  });
  OpBuilder b(fn.getContext());
  for (GemmOp gemm : products) {
    auto cast = gemm.getA().getDefiningOp<CastOp>();
    auto eq = cast.getInput().getDefiningOp<EqualOp>();
    Operation *before = gemm->getPrevNode();
    b.setInsertionPoint(gemm);
    GradientBuilder g(b, gemm.getLoc());
    Value classes = eq.getLhs(), at = eq.getRhs();
    int64_t rank = typeOf(classes).getRank(), rows = shapeOf(classes).back();
    Type it = typeOf(at).getElementType();
    // This device's first class; its rows are [first, first + rows).
    Value first = g.op<SliceOp>(
        {classes}, {g.i64s("starts", SmallVector<int64_t>(rank, 0)),
                    g.i64s("sizes", SmallVector<int64_t>(rank, 1)),
                    g.i64s("steps", SmallVector<int64_t>(rank, 1))});
    Value local = g.sub(at, first);
    Value inRange =
        g.op<AndOp>({g.op<GreaterEqualOp>({local, g.scalar(it, 0)}),
                     g.op<LessOp>({local, g.scalar(it, double(rows))})});
    Value row = g.op<WhereOp>({inRange, local, g.scalar(it, 0)});
    if (!it.isInteger(64))
      row = g.op<CastOp>({row}, {g.named("to", TypeAttr::get(b.getI64Type()))});
    Type f32 = b.getF32Type();
    auto to = [&](Value v, Type t) {
      return typeOf(v).getElementType() == t
                 ? v
                 : g.op<CastOp>({v}, {g.named("to", TypeAttr::get(t))});
    };
    Value updates = g.mul(to(gemm.getB(), f32), to(inRange, f32));
    Value zeros =
        g.expand(g.scalar(f32, 0.0), typeOf(gemm.getResult()).getShape());
    Value sum = to(g.op<ScatterNDOp>({zeros, row, updates},
                                     {g.named("reduction",
                                              b.getStringAttr("add")),
                                      g.i64("batch_dims", 0)}),
                   typeOf(gemm.getResult()).getElementType());
    // The ops made here: between `before` and the product.
    SmallVector<Operation *> made;
    for (Operation *op = before ? before->getNextNode()
                                : &gemm->getBlock()->front();
         op != gemm; op = op->getNextNode())
      made.push_back(op);
    if (g.failed() || typeOf(sum) != typeOf(gemm.getResult())) {
      // Left as the product; what was made goes.
      for (Operation *op : llvm::reverse(made))
        if (op->use_empty())
          op->erase();
      continue;
    }
    // Pipeline stages, gradient tags: as the product's.
    for (Operation *op : made)
      for (NamedAttribute attr : gemm->getDiscardableAttrs())
        op->setAttr(attr.getName(), attr.getValue());
    gemm.getResult().replaceAllUsesWith(sum);
    gemm.erase();
    cast.erase();
    eq.erase();
  }
}

} // namespace pcc::cpu
