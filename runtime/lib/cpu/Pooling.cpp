//===- Pooling.cpp - max, average and global pooling ------------------------===//
//
// NCHW, 2-D; 1-D pools use h = 1.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Kernels.h"
#include "pccrt/Status.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace pccrt {

void pool2dF32(bool isMax, const float *x, float *y, int64_t nc,
                      int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh,
                      int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                      int64_t pw, int64_t dh, int64_t dw,
                      bool countIncludePad, int64_t padEndH, int64_t padEndW) {
  for (int64_t p = 0; p < nc; ++p) {
    const float *xp = x + p * h * w;
    float *yp = y + p * oh * ow;
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        float acc = isMax ? -std::numeric_limits<float>::infinity() : 0.0f;
        int64_t count = 0;
        for (int64_t a = 0; a < kh; ++a) {
          int64_t r = i * sh - ph + a * dh;
          for (int64_t b = 0; b < kw; ++b) {
            int64_t col = j * sw - pw + b * dw;
            bool inside = r >= 0 && r < h && col >= 0 && col < w;
            if (!inside) {
              // Padding cells count toward the average only within the
              // explicit pads, never beyond them (ceil_mode overhang).
              if (!isMax && countIncludePad && r < h + padEndH &&
                  col < w + padEndW)
                ++count;
              continue;
            }
            float v = xp[r * w + col];
            if (isMax)
              acc = std::max(acc, v);
            else
              acc += v;
            ++count;
          }
        }
        yp[i * ow + j] = isMax ? acc : (count ? acc / count : 0.0f);
      }
    }
  }
}

void globalAvgPoolF32(const float *x, float *y, int64_t nc,
                             int64_t spatial) {
  for (int64_t p = 0; p < nc; ++p) {
    double s = 0;
    for (int64_t i = 0; i < spatial; ++i)
      s += x[p * spatial + i];
    y[p] = static_cast<float>(s / spatial);
  }
}


} // namespace pccrt
