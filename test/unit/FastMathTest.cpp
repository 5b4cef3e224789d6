//===- FastMathTest.cpp - fast tanh, erf, exp against correctly rounded -===//

#include "pccrt/FastMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

using namespace pccrt;

namespace {

int32_t bitsOf(float f) {
  int32_t b;
  std::memcpy(&b, &f, sizeof f);
  return b;
}

float fromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

/// The most ulps `fast` is from `exact` (in double, rounded to float) over
/// every 61st bit pattern (both signs, subnormals to infinities), plus every
/// float of [seam - 0.025, seam + 0.025] and its negation, where the two
/// branches meet; `worstAt` is where.
int64_t worstUlps(float (*fast)(float), double (*exact)(double), float seam,
                  float &worstAt) {
  int64_t worst = 0;
  worstAt = 0;
  auto check = [&](float x) {
    float want = float(exact(double(x)));
    float got = fast(x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(got)) << x;
      return;
    }
    int64_t ulps = std::llabs(int64_t(bitsOf(got)) - int64_t(bitsOf(want)));
    if (ulps > worst) {
      worst = ulps;
      worstAt = x;
    }
  };
  for (uint64_t b = 0; b <= 0xffffffffu; b += 61)
    check(fromBits(uint32_t(b)));
  for (float x = seam - 0.025f; x < seam + 0.025f;
       x = std::nextafter(x, 2 * seam)) {
    check(x);
    check(-x);
  }
  return worst;
}

TEST(FastMathTest, TanhWithinOneUlpOfCorrectlyRounded) {
  float at;
  EXPECT_LE(worstUlps(
                pccTanh, [](double x) { return std::tanh(x); }, 0.625f, at),
            1)
      << "at " << at;
}

TEST(FastMathTest, ErfWithinOneUlpOfCorrectlyRounded) {
  float at;
  EXPECT_LE(worstUlps(
                pccErf, [](double x) { return std::erf(x); }, 0.875f, at),
            1)
      << "at " << at;
}

TEST(FastMathTest, ExpWithinOneUlpOfCorrectlyRounded) {
  float at;
  EXPECT_LE(worstUlps(
                pccExp, [](double x) { return std::exp(x); }, 88.7f, at),
            1)
      << "at " << at;
}

TEST(FastMathTest, ExpSpecialValues) {
  EXPECT_EQ(pccExp(-INFINITY), 0.0f);
  EXPECT_EQ(pccExp(-200.0f), 0.0f);
  EXPECT_EQ(pccExp(0.0f), 1.0f);
  EXPECT_EQ(pccExp(INFINITY), INFINITY);
  EXPECT_EQ(pccExp(100.0f), INFINITY);
  EXPECT_TRUE(std::isnan(pccExp(NAN)));
}

TEST(FastMathTest, ErfSpecialValues) {
  EXPECT_EQ(pccErf(INFINITY), 1.0f);
  EXPECT_EQ(pccErf(-INFINITY), -1.0f);
  EXPECT_EQ(pccErf(3.95f), 1.0f);
  EXPECT_TRUE(std::isnan(pccErf(NAN)));
  EXPECT_EQ(bitsOf(pccErf(0.0f)), bitsOf(0.0f));
  EXPECT_EQ(bitsOf(pccErf(-0.0f)), bitsOf(-0.0f));
  EXPECT_EQ(pccErf(1.0f), float(std::erf(1.0)));
}

TEST(FastMathTest, TanhSpecialValues) {
  EXPECT_EQ(pccTanh(INFINITY), 1.0f);
  EXPECT_EQ(pccTanh(-INFINITY), -1.0f);
  EXPECT_EQ(pccTanh(20.0f), 1.0f);
  EXPECT_TRUE(std::isnan(pccTanh(NAN)));
  EXPECT_EQ(bitsOf(pccTanh(0.0f)), bitsOf(0.0f));
  EXPECT_EQ(bitsOf(pccTanh(-0.0f)), bitsOf(-0.0f));
  float tiny = fromBits(1); // the smallest subnormal
  EXPECT_EQ(pccTanh(tiny), tiny);
}

} // namespace
