//===- pcc-gpu-probe.cu - measure one GPU for `pcc calibrate --target cuda` ===//
//
// Measures what the planner's cost model needs of GPU 0, the way compiled
// models use it, and prints one JSON line (schema pcc-gpu-probe/1):
// - cuBLAS GEMM rates per dtype (fp32 with TF32 off, tf32, bf16, fp16 with
//   fp32 accumulation) on 8192^3, and the bf16 rate of m x 8192 x 8192
//   GEMMs for thin m, as a fraction of it;
// - device-to-device copy bandwidth (read + write) on 1 GiB;
// - the time per kernel of back-to-back launches of an empty kernel;
// - pinned host-to-device copy bandwidth (256 MiB) and the time of a 4-byte
//   copy: the path `--comm mpi` stages messages through, the only link one
//   GPU has.
// Each figure is the median of several timed repetitions after a warm-up.
// It needs no MLIR, so it runs on GPU machines where pcc itself is not
// installed; `pcc calibrate --target cuda --probe-output FILE` turns a saved
// line into a cluster spec.
//
//===----------------------------------------------------------------------===//

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const char *what, const char *detail) {
  std::fprintf(stderr, "error: pcc-gpu-probe: %s: %s\n", what, detail);
  std::exit(1);
}

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    fail(what, cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail(what, cublasGetStatusString(s));
}

/// Median seconds of `reps` timed calls of `f` (after two untimed ones).
template <typename F> double medianSeconds(int reps, F &&f) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  f();
  f();
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(start), "cudaEventRecord");
    f();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct GemmKind {
  const char *name;
  cudaDataType_t type;
  cublasComputeType_t compute;
  size_t bytes;
};

/// FLOP/s of C[m x n] = A[m x k] B[k x n] in `kind` (inputs zeroed: the
/// rate does not depend on the values).
double gemmRate(cublasHandle_t h, const GemmKind &kind, int m, int n, int k,
                void *a, void *b, void *c) {
  float one = 1, zero = 0;
  double s = medianSeconds(5, [&] {
    check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b,
                       kind.type, n, a, kind.type, k, &zero, c, kind.type, n,
                       kind.compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  });
  return 2.0 * m * n * k / s;
}

__global__ void emptyKernel() {}

} // namespace

int main() {
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "no CUDA device");
  if (devices < 1)
    fail("no CUDA device", "cudaGetDeviceCount found none");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  check(cudaSetDevice(0), "cudaSetDevice");

  const int big = 8192;
  size_t elems = size_t(big) * big;
  void *a, *b, *c;
  check(cudaMalloc(&a, elems * 4), "cudaMalloc");
  check(cudaMalloc(&b, elems * 4), "cudaMalloc");
  check(cudaMalloc(&c, elems * 4), "cudaMalloc");
  check(cudaMemset(a, 0, elems * 4), "cudaMemset");
  check(cudaMemset(b, 0, elems * 4), "cudaMemset");
  cublasHandle_t h;
  check(cublasCreate(&h), "cublasCreate");

  const GemmKind kinds[] = {
      {"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 4},
      {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4},
      {"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2},
      {"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, 2},
  };
  std::string peaks, shape;
  double bf16Peak = 0;
  for (const GemmKind &k : kinds) {
    double rate = gemmRate(h, k, big, big, big, a, b, c);
    peaks += (peaks.empty() ? "" : ", ") + std::string("\"") + k.name +
             "\": " + std::to_string(rate);
    if (std::string(k.name) == "bf16")
      bf16Peak = rate;
  }
  for (int m : {16, 32, 64, 128, 256, 512, 1024, 2048, 4096}) {
    double rate = gemmRate(h, kinds[2], m, big, big, a, b, c);
    shape += (shape.empty() ? "" : ", ") + std::string("[") +
             std::to_string(m) + ", " +
             std::to_string(std::min(1.0, rate / bf16Peak)) + "]";
  }

  size_t copyBytes = size_t(1) << 30;
  void *src, *dst;
  check(cudaMalloc(&src, copyBytes), "cudaMalloc");
  check(cudaMalloc(&dst, copyBytes), "cudaMalloc");
  double copy = medianSeconds(7, [&] {
    check(cudaMemcpyAsync(dst, src, copyBytes, cudaMemcpyDeviceToDevice),
          "cudaMemcpyAsync");
  });
  const int launches = 2000;
  double launchBatch = medianSeconds(5, [&] {
    for (int i = 0; i < launches; ++i)
      emptyKernel<<<1, 32>>>();
    check(cudaGetLastError(), "kernel launch");
  });

  size_t hostBytes = size_t(256) << 20;
  void *pinned;
  check(cudaMallocHost(&pinned, hostBytes), "cudaMallocHost");
  double upload = medianSeconds(5, [&] {
    check(cudaMemcpyAsync(dst, pinned, hostBytes, cudaMemcpyHostToDevice),
          "cudaMemcpyAsync");
  });
  double small = medianSeconds(21, [&] {
    check(cudaMemcpy(dst, pinned, 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  });

  std::printf("{\"schema\": \"pcc-gpu-probe/1\", \"device\": \"%s\", "
              "\"memory_bytes\": %zu, \"gemm_flops\": {%s}, "
              "\"gemm_shape_bf16\": [%s], \"copy_bytes_s\": %.6g, "
              "\"kernel_s\": %.6g, \"host_link_bytes_s\": %.6g, "
              "\"host_link_latency_s\": %.6g}\n",
              prop.name, size_t(prop.totalGlobalMem), peaks.c_str(),
              shape.c_str(), 2.0 * copyBytes / copy, launchBatch / launches,
              hostBytes / upload, small);
  return 0;
}
