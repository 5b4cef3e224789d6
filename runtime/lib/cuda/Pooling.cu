//===- Pooling.cu - max, average and global average pooling ---------------===//
//
// One thread per output element, with the CPU kernel's padding rules
// (Pooling.cpp).
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "pccrt/Kernels.h"

namespace pccrt {
namespace {

using namespace cuda;

__global__ void poolElements(bool isMax, const float *x, float *y, int64_t nc,
                             int64_t h, int64_t w, int64_t oh, int64_t ow,
                             int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                             int64_t ph, int64_t pw, int64_t dh, int64_t dw,
                             bool countIncludePad, int64_t padEndH,
                             int64_t padEndW) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       t < nc * oh * ow; t += int64_t(gridDim.x) * blockDim.x) {
    int64_t j = t % ow, i = (t / ow) % oh, p = t / (oh * ow);
    const float *xp = x + p * h * w;
    float acc = isMax ? -INFINITY : 0.0f;
    int64_t count = 0;
    for (int64_t a = 0; a < kh; ++a) {
      int64_t r = i * sh - ph + a * dh;
      for (int64_t b = 0; b < kw; ++b) {
        int64_t col = j * sw - pw + b * dw;
        if (!(r >= 0 && r < h && col >= 0 && col < w)) {
          if (!isMax && countIncludePad && r < h + padEndH &&
              col < w + padEndW)
            ++count;
          continue;
        }
        float v = xp[r * w + col];
        acc = isMax ? fmaxf(acc, v) : acc + v;
        ++count;
      }
    }
    y[t] = isMax ? acc : (count ? acc / count : 0.0f);
  }
}

__global__ void meanLines(const float *x, float *y, int64_t nc,
                          int64_t spatial) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < nc;
       p += int64_t(gridDim.x) * blockDim.x) {
    double s = 0;
    for (int64_t i = 0; i < spatial; ++i)
      s += x[p * spatial + i];
    y[p] = static_cast<float>(s / spatial);
  }
}

} // namespace

void pool2dF32(bool isMax, const float *x, float *y, int64_t nc, int64_t h,
               int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
               int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
               int64_t dw, bool countIncludePad, int64_t padEndH,
               int64_t padEndW) {
  if (nc * oh * ow == 0)
    return;
  poolElements<<<gridFor(nc * oh * ow), 256, 0, stream()>>>(
      isMax, x, y, nc, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw,
      countIncludePad, padEndH, padEndW);
  PCC_LAUNCHED();
}

void globalAvgPoolF32(const float *x, float *y, int64_t nc, int64_t spatial) {
  if (nc == 0)
    return;
  meanLines<<<gridFor(nc), 256, 0, stream()>>>(x, y, nc, spatial);
  PCC_LAUNCHED();
}

} // namespace pccrt
