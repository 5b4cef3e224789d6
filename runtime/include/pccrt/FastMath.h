//===- FastMath.h - math that fused CPU loops vectorise ---------*- C++ -*-===//
//
// glibc's tanhf is a scalar call (through expm1f) that keeps a fused loop
// from vectorising: a tanh-GELU GPT's CPU training step spent 30% of its
// time in it. pccTanh computes in double without calls or branches, so the
// compiler vectorises the loop around it, and stays within 1 ulp of tanh
// correctly rounded (test/unit/FastMathTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_FASTMATH_H
#define PCCRT_FASTMATH_H

#include <cstdint>
#include <cstring>

namespace pccrt {

inline float pccTanh(float xf) {
  double x = xf;
  double a = x < 0 ? -x : x;
  // tanh is 1 in float from 9.01 on; NaN takes this path and is replaced.
  a = a < 10.0 ? a : 10.0;
  // |x| < 0.625: tanh's odd Taylor series (2^2n (2^2n - 1) B_2n / (2n)!)
  // to x^21; the next term is below 1e-8 of the sum.
  double z = x * x;
  double p = -2.3912911424355248e-04 + z * 9.691537956929451e-05;
  p = 5.90027440945586e-04 + z * p;
  p = -1.4558343870513183e-03 + z * p;
  p = 3.592128036572481e-03 + z * p;
  p = -8.863235529902197e-03 + z * p;
  p = 2.1869488536155203e-02 + z * p;
  p = -5.396825396825397e-02 + z * p;
  p = 1.3333333333333333e-01 + z * p;
  p = -3.333333333333333e-01 + z * p;
  double small = x * (1.0 + z * p); // -0 stays -0
  // Otherwise 1 - 2 / (e^2|x| + 1): e^y = 2^n e^r, n the nearest integer
  // to y / ln 2 (adding 1.5 * 2^52 rounds it), r reduced in two parts.
  double y = 2.0 * a;
  const double magic = 6755399441055744.0;
  double s = y * 1.4426950408889634 + magic;
  double n = s - magic;
  double r = (y - n * 6.9314718036912382e-01) - n * 1.9082149292705877e-10;
  double e =
      1.0 +
      r * (1.0 +
           r * (0.5 +
                r * (1.0 / 6 +
                     r * (1.0 / 24 +
                          r * (1.0 / 120 +
                               r * (1.0 / 720 +
                                    r * (1.0 / 5040 + r * (1.0 / 40320))))))));
  int64_t sBits, magicBits;
  std::memcpy(&sBits, &s, sizeof s);
  std::memcpy(&magicBits, &magic, sizeof magic);
  int64_t scaleBits = (sBits - magicBits + 1023) << 52;
  double scale;
  std::memcpy(&scale, &scaleBits, sizeof scale);
  double t = 1.0 - 2.0 / (e * scale + 1.0);
  t = x < 0 ? -t : t;
  float result = float(a < 0.625 ? small : t);
  return xf != xf ? xf : result;
}

} // namespace pccrt

#endif // PCCRT_FASTMATH_H
