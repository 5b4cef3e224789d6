//===- Summa.cpp - SUMMA products on tensor grids -------------------------===//
//
// Colossal-AI's 2D / 2.5D linear layers, one device's part. SUMMA (van de
// Geijn and Watts 1997): on a q x q grid, step k broadcasts the left blocks
// of grid column k along the rows and the weight blocks of grid row k along
// the columns; every device accumulates its product. Only one panel of each
// is held at a time. Built from the target's GEMM, copies and broadcasts,
// so one definition serves CPU and GPU ranks.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Device.h"
#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"

namespace pccrt {

void summaF32(const float *x, const float *w, float *y, int64_t m, int64_t k,
              int64_t n, bool transB, float alpha, float beta, Mesh &mesh,
              int alongRow, int alongCol, float *scratch) {
  int64_t q = groupSize(mesh, alongRow);
  int64_t myCol = groupIndex(mesh, alongRow), myRow = groupIndex(mesh, alongCol);
  float *xPanel = scratch, *wPanel = scratch + m * k;
  for (int64_t step = 0; step < q; ++step) {
    if (myCol == step)
      copyBytes(xPanel, x, m * k * sizeof(float));
    if (myRow == step)
      copyBytes(wPanel, w, k * n * sizeof(float));
    broadcast(mesh, alongRow, step, xPanel, m * k * sizeof(float));
    broadcast(mesh, alongCol, step, wPanel, k * n * sizeof(float));
    gemmF32(false, transB, m, n, k, alpha, xPanel, k, wPanel, transB ? k : n,
            step == 0 ? beta : 1.0f, y, n);
  }
}

} // namespace pccrt
