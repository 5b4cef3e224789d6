//===- FastMathTest.cpp - pccTanh against the correctly rounded tanh ------===//

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

TEST(FastMathTest, TanhWithinOneUlpOfCorrectlyRounded) {
  // Every 61st bit pattern (both signs, subnormals to infinities), plus
  // every float in [-1, 1] near the two branches' seam at 0.625.
  int64_t worst = 0;
  float worstAt = 0;
  auto check = [&](float x) {
    float want = float(std::tanh(double(x)));
    float got = pccTanh(x);
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
  for (float x = 0.6f; x < 0.65f; x = std::nextafter(x, 1.0f)) {
    check(x);
    check(-x);
  }
  EXPECT_LE(worst, 1) << "at " << worstAt;
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
