//===- PCCContractions.cpp - the GEMMs of matmul, gemm and conv -----------===//

#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"

using namespace mlir;
using namespace pcc;

#include "pcc/Dialect/PCC/IR/PCCInterfaces.cpp.inc"

GemmShape MatMulOp::gemmShapeFor(ArrayRef<SmallVector<int64_t>> in,
                                 ArrayRef<int64_t> result) {
  // numpy.matmul: a rank-1 operand is a row (left) or a column (right).
  SmallVector<int64_t> ls(in[0]), rs(in[1]);
  if (ls.size() == 1)
    ls.insert(ls.begin(), 1);
  if (rs.size() == 1)
    rs.push_back(1);
  GemmShape s;
  s.m = ls[ls.size() - 2];
  s.k = ls.back();
  s.n = rs.back();
  s.batch = numElements(result) / std::max<int64_t>(s.m * s.n, 1);
  // A right operand without batches is shared by every batch: one GEMM
  // over all the left operand's rows.
  if (numElements(ArrayRef<int64_t>(rs).drop_back(2)) == 1) {
    s.m *= s.batch;
    s.batch = 1;
  }
  return s;
}

GemmShape GemmOp::gemmShapeFor(ArrayRef<SmallVector<int64_t>> in,
                               ArrayRef<int64_t> result) {
  // A's leading dimensions are its rows (GemmOp's description).
  ArrayRef<int64_t> a = in[0];
  int64_t rows = numElements(a.drop_back());
  GemmShape s;
  s.m = getTransA() ? a.back() : rows;
  s.n = result.back();
  s.k = getTransA() ? rows : a.back();
  return s;
}

GemmShape ConvOp::gemmShapeFor(ArrayRef<SmallVector<int64_t>> in,
                               ArrayRef<int64_t> result) {
  // im2col per group: (images x output pixels) x (channels x kernel) times
  // (channels x kernel) x (output channels of the group).
  ArrayRef<int64_t> filter = in[1];
  GemmShape s;
  s.batch = std::max<int64_t>(getGroup(), 1);
  s.n = filter[0] / s.batch;
  s.k = numElements(filter.drop_front());
  s.m = numElements(result) / std::max<int64_t>(filter[0], 1);
  return s;
}

GemmShape AttentionOp::gemmShapeFor(ArrayRef<SmallVector<int64_t>> in,
                                    ArrayRef<int64_t> result) {
  // Q Kt (Sq x D x Sk) and P V (Sq x Sk x Dv) per batch: as one GEMM of
  // depth D + Dv, the same FLOPs. The softmax between them is a few more
  // per score, left out as for a GEMM's epilogue.
  ArrayRef<int64_t> q = in[0], k = in[1], v = in[2];
  GemmShape s;
  // seq_first: [B, S, H, D], the sequence before the heads.
  size_t seq = getSeqFirst() ? 1 : q.size() - 2;
  s.m = q[seq];
  s.n = k[seq];
  s.k = q.back() + v.back();
  // The result's heads: with head_offsets an operand may hold more.
  s.batch = numElements(result.drop_back(1)) / s.m;
  return s;
}
