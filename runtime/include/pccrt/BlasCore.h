//===- BlasCore.h - which OpenBLAS kernels a process runs ---------*- C++
//-*-===//
//
// Debian's OpenBLAS 0.3.21 picks its kernels by CPU model and knows none
// newer than it: on Sapphire Rapids it falls back to SSE3 (Prescott), 2.5x
// slower GEMMs there. A process that finds that choice runs itself again
// with OPENBLAS_CORETYPE set to the widest kernels the CPU runs (a setting
// already made is kept). Shared by the executables (runtime
// prepareProcess) and `pcc calibrate`, which must measure the GEMMs the
// executables will run. Not for generated code.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_BLASCORE_H
#define PCCRT_BLASCORE_H

#include <cstdlib>
#include <strings.h>
#include <unistd.h>

namespace pccrt {

/// The kernels to run instead of `chosen` (openblas_get_corename()), or
/// null when OpenBLAS's choice stands.
inline const char *betterBlasCore(const char *chosen) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (strcasecmp(chosen, "Prescott"))
    return nullptr;
  // OpenBLAS's AVX-512 kernels (SkylakeX) use F, BW, DQ and VL.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2"))
    return "Haswell";
#endif
  (void)chosen;
  return nullptr;
}

/// Runs this process again (argv) with better kernels than `chosen`, unless
/// OPENBLAS_CORETYPE is set already; returns when there are none (or the
/// exec fails: the process goes on, right but slower).
inline void rerunWithBetterBlas(char **argv, const char *chosen) {
  if (std::getenv("OPENBLAS_CORETYPE"))
    return;
  const char *core = betterBlasCore(chosen);
  if (!core)
    return;
  setenv("OPENBLAS_CORETYPE", core, 1);
  execv("/proc/self/exe", argv);
}

} // namespace pccrt

#endif // PCCRT_BLASCORE_H
