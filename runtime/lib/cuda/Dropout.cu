//===- Dropout.cu - pcc.dropout on a GPU ----------------------------------===//
//
// The CPU kernel's masks (pccrt/Dropout.h): a thread per element finds the
// element's index in the whole tensor from the block's place and hashes it
// with the step's key. The step counter is read on the device, so a step
// recorded as a CUDA graph draws new masks every time it is replayed.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "pccrt/Dropout.h"
#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"
#include "pccrt/Status.h"

namespace pccrt {
namespace {

__global__ void dropoutKernel(const float *x, float *y, DropoutPlace p,
                              uint64_t seed, uint64_t stream, const float *step,
                              uint32_t threshold, float scale) {
  uint64_t key =
      dropoutKey(seed, stream, step ? uint64_t(int64_t(*step)) : 0);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.count;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = dropoutKeeps(key, uint64_t(p.globalIndex(i)), threshold)
               ? x[i] * scale
               : 0.0f;
}

} // namespace

void dropout(const Mesh &mesh, const float *x, float *y, int rank,
             const int64_t *localShape, const DimSplit *splits, uint64_t seed,
             uint64_t stream, const float *step, double ratio) {
  DropoutPlace p;
  if (!dropoutPlace(rank, localShape, splits, mesh.shape(), mesh.coords(), p)) {
    kernelError("dropout of a tensor of more than 8 dimensions");
    return;
  }
  if (p.count == 0)
    return;
  dropoutKernel<<<cuda::gridFor(p.count), 256, 0, cuda::stream()>>>(
      x, y, p, seed, stream, step, dropoutThreshold(ratio),
      float(1.0 / (1.0 - ratio)));
  PCC_LAUNCHED();
}

} // namespace pccrt
