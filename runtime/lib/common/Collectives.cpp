//===- Collectives.cpp - collectives on split tensor dimensions -----------===//
//
// What generated code calls (Kernels.h): a collective over communication
// group `g` on a tensor viewed as [outer, block] per device, built on the
// group's Communicator. Here the blocks are laid out; the back end moves and
// sums bytes. Bytes move through Device.h, so the same layout work serves
// host memory and GPU memory.
//
//===----------------------------------------------------------------------===//

#include "MeshImpl.h"

#include "pccrt/Device.h"
#include "pccrt/Trace.h"

#include <vector>

namespace pccrt {

void allReduceSum(Mesh &mesh, int g, DType t, const void *in, void *out,
                  int64_t count) {
  Communicator &c = *mesh.impl().groups[g];
  if (in != out)
    copyBytes(out, in, count * dtypeSize(t));
  if (c.size() == 1)
    return;
  TraceSpan span(TraceKind::AllReduce, count * dtypeSize(t));
  c.allReduceSum(t, out, count);
}

void allGather(Mesh &mesh, int g, const void *in, void *out, int64_t outer,
               int64_t blockBytes) {
  Mesh::Impl &m = mesh.impl();
  Communicator &c = *m.groups[g];
  int64_t n = c.size();
  int64_t bytes = outer * blockBytes;
  if (n == 1) {
    copyBytes(out, in, bytes);
    return;
  }
  // Devices' parts arrive one after another; reorder to [outer, device,
  // block].
  char *dst = outer == 1 ? static_cast<char *>(out) : m.buffer(n * bytes);
  TraceSpan span(TraceKind::AllGather, n * bytes);
  c.allGather(in, dst, bytes);
  if (outer == 1)
    return;
  char *o = static_cast<char *>(out);
  for (int64_t r = 0; r < n; ++r)
    copyRows(o + r * blockBytes, n * blockBytes, dst + r * outer * blockBytes,
             blockBytes, blockBytes, outer);
}

void reduceScatterSum(Mesh &mesh, int g, DType t, const void *in, void *out,
                      int64_t outer, int64_t blockCount) {
  Mesh::Impl &m = mesh.impl();
  Communicator &c = *m.groups[g];
  int64_t n = c.size();
  size_t elem = dtypeSize(t);
  int64_t blockBytes = blockCount * elem;
  if (n == 1) {
    copyBytes(out, in, outer * blockBytes);
    return;
  }
  // Reorder [outer, device, block] to [device, outer, block].
  const char *src = static_cast<const char *>(in);
  if (outer != 1) {
    char *packed = m.buffer(n * outer * blockBytes);
    for (int64_t r = 0; r < n; ++r)
      copyRows(packed + r * outer * blockBytes, blockBytes,
               src + r * blockBytes, n * blockBytes, blockBytes, outer);
    src = packed;
  }
  TraceSpan span(TraceKind::ReduceScatter, n * outer * blockBytes);
  c.reduceScatterSum(t, src, out, outer * blockCount);
}

void allSlice(Mesh &mesh, int g, const void *in, void *out, int64_t outer,
              int64_t blockBytes) {
  int64_t n = mesh.groupSize(g), r = mesh.groupIndex(g);
  copyRows(out, blockBytes, static_cast<const char *>(in) + r * blockBytes,
           n * blockBytes, blockBytes, outer);
}

void allToAll(Mesh &mesh, int g, const void *in, void *out, int64_t elemBytes,
              int rank, const int64_t *shape, int splitDim, int concatDim) {
  Mesh::Impl &m = mesh.impl();
  Communicator &c = *m.groups[g];
  int64_t n = c.size(), total = elemBytes;
  for (int d = 0; d < rank; ++d)
    total *= shape[d];
  if (n == 1) {
    copyBytes(out, in, total);
    return;
  }
  // A view of a dense tensor as [outer, len, inner bytes] around `dim`.
  auto around = [&](const int64_t *s, int dim, int64_t &outer, int64_t &inner) {
    outer = 1, inner = elemBytes;
    for (int d = 0; d < dim; ++d)
      outer *= s[d];
    for (int d = dim + 1; d < rank; ++d)
      inner *= s[d];
  };
  int64_t piece = total / n, outer, inner;
  char *send = m.buffer(2 * total), *recv = send + total;
  const char *src = static_cast<const char *>(in);
  // Piece r: block r of `splitDim`.
  around(shape, splitDim, outer, inner);
  int64_t len = shape[splitDim] / n;
  for (int64_t r = 0; r < n; ++r)
    copyRows(send + r * piece, len * inner, src + r * len * inner,
             shape[splitDim] * inner, len * inner, outer);
  {
    TraceSpan span(TraceKind::AllToAll, total);
    c.allToAll(send, recv, piece);
  }
  // Device r's piece is block r of `concatDim` in the result.
  std::vector<int64_t> ps(shape, shape + rank);
  ps[splitDim] = len;
  around(ps.data(), concatDim, outer, inner);
  int64_t plen = ps[concatDim];
  char *dst = static_cast<char *>(out);
  for (int64_t r = 0; r < n; ++r)
    copyRows(dst + r * plen * inner, plen * n * inner, recv + r * piece,
             plen * inner, plen * inner, outer);
}

void broadcast(Mesh &mesh, int g, int64_t root, void *buf, int64_t bytes) {
  TraceSpan span(TraceKind::Broadcast, bytes, root);
  mesh.impl().groups[g]->broadcast(root, buf, bytes);
}

void startRingShift(Mesh &mesh, int g, const void *out, void *in,
                    int64_t bytes) {
  Communicator &c = *mesh.impl().groups[g];
  int64_t n = c.size(), me = c.index();
  c.startExchange((me + 1) % n, out, (me + n - 1) % n, in, bytes);
}

void finishRingShift(Mesh &mesh, int g, int64_t bytes) {
  Communicator &c = *mesh.impl().groups[g];
  TraceSpan span(TraceKind::RingShift, bytes, (c.index() + c.size() - 1) % c.size());
  c.finishExchange();
}

void sendToStage(Mesh &mesh, int g, int64_t stage, const void *buf,
                 int64_t bytes, int64_t tag) {
  TraceSpan span(TraceKind::Send, bytes, stage);
  mesh.impl().groups[g]->send(stage, buf, bytes, tag);
}

void recvFromStage(Mesh &mesh, int g, int64_t stage, void *buf, int64_t bytes,
                   int64_t tag) {
  TraceSpan span(TraceKind::Receive, bytes, stage);
  mesh.impl().groups[g]->recv(stage, buf, bytes, tag);
}

} // namespace pccrt
