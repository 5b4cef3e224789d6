//===- Float16Test.cpp - 16-bit float roundings against APFloat -----------===//

#include "pccrt/Float16.h"

#include "llvm/ADT/APFloat.h"

#include <gtest/gtest.h>

using namespace pccrt;

namespace {

uint16_t reference(float f, const llvm::fltSemantics &sem) {
  llvm::APFloat v(f);
  bool lost;
  v.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint16_t>(v.bitcastToAPInt().getZExtValue());
}

float referenceWiden(uint16_t bits, const llvm::fltSemantics &sem) {
  llvm::APFloat v(sem, llvm::APInt(16, bits));
  bool lost;
  v.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return v.convertToFloat();
}

bool isNaN16(uint16_t b, bool half) {
  return half ? (b & 0x7c00) == 0x7c00 && (b & 0x3ff)
              : (b & 0x7f80) == 0x7f80 && (b & 0x7f);
}

TEST(Float16Test, WidensEveryBitPatternExactly) {
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t h = static_cast<uint16_t>(b);
    float got = halfBitsToFloat(h), want = referenceWiden(h, llvm::APFloat::IEEEhalf());
    if (isNaN16(h, true))
      EXPECT_TRUE(got != got) << b;
    else
      EXPECT_EQ(floatBits(got), floatBits(want)) << b;
    got = bfloat16BitsToFloat(h);
    want = referenceWiden(h, llvm::APFloat::BFloat());
    if (isNaN16(h, false))
      EXPECT_TRUE(got != got) << b;
    else
      EXPECT_EQ(floatBits(got), floatBits(want)) << b;
  }
}

TEST(Float16Test, RoundsToNearestEvenLikeAPFloat) {
  // Every float whose low 11 bits are one of a few patterns: ties, just
  // above and below them, across every exponent (subnormals, overflow).
  const uint32_t lows[] = {0x000, 0x001, 0x7ff, 0x800, 0x801, 0xfff,
                           0x1000, 0x0fff, 0x1800, 0x17ff};
  int checked = 0;
  for (uint32_t hi = 0; hi < (1u << 20); hi += 3) {
    for (uint32_t low : lows) {
      uint32_t bits = (hi << 12) ^ low;
      float f = bitsFloat(bits);
      if (f != f)
        continue;
      ASSERT_EQ(floatToHalfBits(f), reference(f, llvm::APFloat::IEEEhalf()))
          << std::hex << bits;
      uint32_t bbits = (hi << 12) ^ (low << 4);
      float g = bitsFloat(bbits);
      if (g != g)
        continue;
      ASSERT_EQ(floatToBFloat16Bits(g), reference(g, llvm::APFloat::BFloat()))
          << std::hex << bbits;
      ++checked;
    }
  }
  EXPECT_GT(checked, 3000000);
  EXPECT_TRUE(isNaN16(floatToHalfBits(bitsFloat(0x7fc00001)), true));
  EXPECT_TRUE(isNaN16(floatToBFloat16Bits(bitsFloat(0x7f800001)), false));
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalfBits(65519.99f), 0x7bff);
}

TEST(Float16Test, StorageTypesRoundOnWriteAndWidenOnRead) {
  Half h = 1.0f + 1.0f / 4096; // below half's precision: rounds to 1
  EXPECT_EQ(float(h), 1.0f);
  BFloat16 b = 3.14159265f;
  EXPECT_EQ(float(b), 3.140625f);
  EXPECT_EQ(roundToBFloat16(1.0f + 1.0f / 256), 1.0f); // tie to even
  EXPECT_EQ(roundToHalf(-0.0f), -0.0f);
  static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);
}

} // namespace
