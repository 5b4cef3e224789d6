//===- ExpSum.h - a softmax row's exponentials, vectorised ------*- C++ -*-===//
//
// The CPU kernels' softmax rows (attention's score tiles, pcc.softmax and
// pcc.log_softmax over contiguous rows) share one loop: pccExp at the
// CPU's vector width, where glibc's expf is a call per element.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_CPU_EXPSUM_H
#define PCCRT_CPU_EXPSUM_H

#include <cstdint>

namespace pccrt {

/// row[j] = e^(x[j] - shift) for j < n (x may be row), and their sum, added
/// in eight lanes (elements j mod 8) and then in lane order.
float expShiftedSum(const float *x, float *row, int64_t n, float shift);

} // namespace pccrt

#endif // PCCRT_CPU_EXPSUM_H
