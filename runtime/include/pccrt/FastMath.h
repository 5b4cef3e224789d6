//===- FastMath.h - math that fused CPU loops vectorise ---------*- C++ -*-===//
//
// glibc's tanhf, erff and expf are scalar calls that keep a loop from
// vectorising: a tanh-GELU GPT's CPU training step spent 30% of its time
// in tanhf. pccTanh, pccErf and pccExp compute in double without calls or
// branches, so the compiler vectorises the loop around them, and stay
// within 1 ulp of the correctly rounded function
// (test/unit/FastMathTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_FASTMATH_H
#define PCCRT_FASTMATH_H

#include <cstdint>
#include <cstring>

namespace pccrt {

namespace detail {
/// e^y for |y| < 700, within 3e-10 relative, without calls or branches:
/// e^y = 2^n e^r, n the nearest integer to y / ln 2 (adding 1.5 * 2^52
/// rounds it), r reduced in two parts, e^r by its Taylor series to r^8.
inline double expBounded(double y) {
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
  return e * scale;
}
/// c[0] + z (c[1] + z (c[2] + ...)), in that order (Horner).
template <int N> inline double horner(double z, const double (&c)[N]) {
  double p = c[N - 1];
  for (int i = N - 2; i >= 0; --i)
    p = c[i] + z * p;
  return p;
}

} // namespace detail

inline float pccTanh(float xf) {
  double x = xf;
  double a = x < 0 ? -x : x;
  // tanh is 1 in float from 9.01 on; NaN takes this path and is replaced.
  a = a < 10.0 ? a : 10.0;
  // |x| < 0.625: tanh's odd Taylor series (2^2n (2^2n - 1) B_2n / (2n)!)
  // to x^21; the next term is below 1e-8 of the sum.
  double z = x * x;
  static constexpr double kTanhSeries[] = {
      -3.333333333333333e-01,  1.3333333333333333e-01, -5.396825396825397e-02,
      2.1869488536155203e-02,  -8.863235529902197e-03, 3.592128036572481e-03,
      -1.4558343870513183e-03, 5.90027440945586e-04,   -2.3912911424355248e-04,
      9.691537956929451e-05};
  double p = detail::horner(z, kTanhSeries);
  double small = x * (1.0 + z * p); // -0 stays -0
  // Otherwise 1 - 2 / (e^2|x| + 1).
  double t = 1.0 - 2.0 / (detail::expBounded(2.0 * a) + 1.0);
  t = x < 0 ? -t : t;
  float result = float(a < 0.625 ? small : t);
  return xf != xf ? xf : result;
}

/// erf in the same way (erf-GELU's, glibc's erff being a scalar call too):
/// below 0.875 erf's odd Taylor series (2 / sqrt(pi) (-1)^n / (n! (2n + 1)))
/// to x^23; above, 1 - e^-x^2 g(x) with g = e^x^2 erfc(x) fitted on
/// [0.875, 4] (a degree-14 polynomial in t = (2x - 4.875) / 3.125, within
/// 1.5e-9 relative); erf is 1 in float from 3.92 on. Within 1 ulp of erf
/// correctly rounded (test/unit/FastMathTest.cpp).
inline float pccErf(float xf) {
  double x = xf;
  double a = x < 0 ? -x : x;
  a = a < 4.0 ? a : 4.0; // NaN takes this path and is replaced
  double z = x * x;
  static constexpr double kErfSeries[] = {
      1.1283791670955126,     -3.7612638903183754e-01,
      1.1283791670955126e-01, -2.6866170645131252e-02,
      5.223977625442188e-03,  -8.548327023450852e-04,
      1.2055332981789664e-04, -1.492565035840625e-05,
      1.6462114365889246e-06, -1.6365844691234924e-07,
      1.4807192815879218e-08, -1.2290555301717926e-09};
  double p = detail::horner(z, kErfSeries);
  double small = x * p; // -0 stays -0
  double t = (2.0 * a - 4.875) * (1.0 / 3.125);
  static constexpr double kErfcScaled[] = {
      2.1555247917234593e-01,  -1.2118879958796905e-01, 6.46922661056561e-02,
      -3.2989649356663736e-02, 1.6147933973851794e-02,  -7.616542535044585e-03,
      3.4721237162028996e-03,  -1.5322831734005031e-03, 6.585780869375014e-04,
      -2.8001456545699956e-04, 1.1255396175918904e-04,  -3.7913334579916785e-05,
      1.588936960256624e-05,   -1.0859821568114523e-05, 3.6957571215367195e-06};
  double g = detail::horner(t, kErfcScaled);
  double large = 1.0 - detail::expBounded(-a * a) * g;
  large = x < 0 ? -large : large;
  float result = float(a < 0.875 ? small : large);
  return xf != xf ? xf : result;
}

/// e^x in double without calls or branches (the CPU attention's softmax,
/// where glibc's expf was a scalar call per score): within 1 ulp of the
/// correctly rounded e^x; 0 below -110 (-inf included), inf above 89.
inline float pccExp(float xf) {
  double x = xf;
  x = x < -110.0 ? -110.0 : x;
  x = x > 89.0 ? 89.0 : x;
  float result = float(detail::expBounded(x));
  return xf != xf ? xf : result;
}

} // namespace pccrt

#endif // PCCRT_FASTMATH_H
