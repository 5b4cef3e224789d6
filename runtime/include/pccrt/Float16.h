//===- Float16.h - 16-bit float storage for generated code ------*- C++ -*-===//
//
// IEEE half (fp16) and bfloat16 as storage types: a value converts to float
// on every read and rounds to nearest even on every write, so generated code
// computes in float and stores 16 bits (as torch autocast on a CPU, and the
// 16-bit storage with fp32 arithmetic that --precision asks for). Plain bit
// manipulation, no <cstring> or compiler extensions: generated code and the
// compiler (converting weights) share these exact roundings; CUDA kernels
// use them too (PCCRT_HD).
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_FLOAT16_H
#define PCCRT_FLOAT16_H

#include <cstdint>

/// Functions generated CUDA kernels call as well as host code.
#if defined(__CUDACC__)
#define PCCRT_HD __host__ __device__
#else
#define PCCRT_HD
#endif

namespace pccrt {

PCCRT_HD inline uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

PCCRT_HD inline float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

/// Round to nearest even; NaN stays a (quiet) NaN, overflow becomes inf.
/// On a GPU one conversion instruction does the same rounding.
PCCRT_HD inline uint16_t floatToHalfBits(float value) {
#if defined(__CUDA_ARCH__)
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(value));
  return h;
#endif
  uint32_t f = floatBits(value);
  uint32_t sign = f & 0x80000000u;
  f ^= sign;
  uint16_t out;
  if (f >= (143u << 23)) { // >= 65536, inf or NaN
    out = f > (255u << 23) ? 0x7e00 : 0x7c00;
  } else if (f < (113u << 23)) { // a half subnormal or zero
    // Adding 0.5 aligns the half's unit in the last place with float's,
    // so the float addition does the rounding.
    const uint32_t magic = 126u << 23;
    out = static_cast<uint16_t>(floatBits(bitsFloat(f) + bitsFloat(magic)) -
                                magic);
  } else {
    uint32_t odd = (f >> 13) & 1;
    f -= 112u << 23; // rebias the exponent
    f += 0xfff + odd;
    out = static_cast<uint16_t>(f >> 13); // a carry may give inf: right
  }
  return out | static_cast<uint16_t>(sign >> 16);
}

PCCRT_HD inline float halfBitsToFloat(uint16_t h) {
#if defined(__CUDA_ARCH__)
  float out;
  asm("cvt.f32.f16 %0, %1;" : "=f"(out) : "h"(h));
  return out;
#endif
  const uint32_t shiftedExp = 0x7c00u << 13;
  uint32_t o = (h & 0x7fffu) << 13;
  uint32_t exp = o & shiftedExp;
  o += 112u << 23;
  if (exp == shiftedExp) { // inf or NaN
    o += 112u << 23;
  } else if (exp == 0) { // zero or subnormal: renormalise through float
    o += 1u << 23;
    o = floatBits(bitsFloat(o) - bitsFloat(113u << 23));
  }
  return bitsFloat(o | (static_cast<uint32_t>(h & 0x8000u) << 16));
}

/// Round to nearest even; NaN stays a (quiet) NaN.
PCCRT_HD inline uint16_t floatToBFloat16Bits(float value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint16_t b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(value));
  return b;
#endif
  uint32_t f = floatBits(value);
  if ((f & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((f >> 16) | 0x40);
  return static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1)) >> 16);
}

PCCRT_HD inline float bfloat16BitsToFloat(uint16_t b) {
  return bitsFloat(static_cast<uint32_t>(b) << 16);
}

/// fp16 storage: reads as float, rounds on assignment.
struct Half {
  uint16_t bits;
  Half() = default;
  PCCRT_HD Half(float f) : bits(floatToHalfBits(f)) {}
  PCCRT_HD operator float() const { return halfBitsToFloat(bits); }
};

/// bfloat16 storage: reads as float, rounds on assignment.
struct BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  PCCRT_HD BFloat16(float f) : bits(floatToBFloat16Bits(f)) {}
  PCCRT_HD operator float() const { return bfloat16BitsToFloat(bits); }
};

/// `f` rounded through 16-bit storage (a cast to fp16 or bf16 inside a
/// fused chain, which keeps its values in float).
PCCRT_HD inline float roundToHalf(float f) { return Half(f); }
PCCRT_HD inline float roundToBFloat16(float f) { return BFloat16(f); }

} // namespace pccrt

#endif // PCCRT_FLOAT16_H
