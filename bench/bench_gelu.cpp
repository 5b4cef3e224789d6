// tanh-GELU and exact (erf) GELU over 4M N(0, 1) floats, as a fused CPU
// loop runs them: glibc's tanhf and erff (scalar calls) against
// pccrt::pccTanh and pccErf (inline, vectorised).
// Build and run from the repository root:
//   g++ -std=c++17 -O3 -fno-trapping-math -Iruntime/include \
//       bench/bench_gelu.cpp -o /tmp/bench_gelu && /tmp/bench_gelu
#include "pccrt/FastMath.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

namespace {

__attribute__((noinline)) void geluGlibc(const float *in, float *out, long n) {
  for (long i = 0; i < n; ++i) {
    float x = in[i];
    out[i] = 0.5f * x *
             (1.0f + __builtin_tanhf(0.7978845608028654f *
                                     (x + 0.044715f * x * x * x)));
  }
}

__attribute__((noinline)) void geluPcc(const float *in, float *out, long n) {
  for (long i = 0; i < n; ++i) {
    float x = in[i];
    out[i] = 0.5f * x *
             (1.0f + pccrt::pccTanh(0.7978845608028654f *
                                    (x + 0.044715f * x * x * x)));
  }
}

__attribute__((noinline)) void erfGeluGlibc(const float *in, float *out,
                                            long n) {
  for (long i = 0; i < n; ++i) {
    float x = in[i];
    out[i] = 0.5f * x * (1.0f + __builtin_erff(x * 0.7071067811865476f));
  }
}

__attribute__((noinline)) void erfGeluPcc(const float *in, float *out, long n) {
  for (long i = 0; i < n; ++i) {
    float x = in[i];
    out[i] = 0.5f * x * (1.0f + pccrt::pccErf(x * 0.7071067811865476f));
  }
}

} // namespace

int main() {
  const long n = 1 << 22;
  std::vector<float> in(n), out(n);
  std::mt19937 rng(0);
  std::normal_distribution<float> normal(0, 1);
  for (float &x : in)
    x = normal(rng);
  for (auto [name, gelu] :
       {std::pair{"glibc tanhf", geluGlibc}, std::pair{"pccTanh", geluPcc},
        std::pair{"glibc erff", erfGeluGlibc},
        std::pair{"pccErf", erfGeluPcc}}) {
    std::vector<double> runs;
    for (int r = 0; r < 7; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      gelu(in.data(), out.data(), n);
      runs.push_back(std::chrono::duration<double, std::nano>(
                         std::chrono::steady_clock::now() - t0)
                         .count() /
                     double(n));
    }
    std::sort(runs.begin(), runs.end());
    std::printf("%-12s %.2f ns/element (median of 7)\n", name, runs[3]);
  }
}
