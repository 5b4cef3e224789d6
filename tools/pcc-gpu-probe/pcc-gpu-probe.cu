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
//   GPU has;
// - pcc's own attention kernels (the runtime's, as compiled models call
//   them) on GPT-2's shape, causal: 8 sequences x 12 heads x 1024 tokens x
//   64, the tensor-core kernel in bf16 reading [B, S, H, D] in place (as
//   GPU programs do) and the fp32 kernel, in FLOP/s of the score pairs
//   they compute.
// Each figure is the median of several timed repetitions after a warm-up.
// It needs no MLIR, so it runs on GPU machines where pcc itself is not
// installed; `pcc calibrate --target cuda --probe-output FILE` turns a saved
// line into a cluster spec.
//
//===----------------------------------------------------------------------===//

#include "pccrt/Kernels.h"
#include "pccrt/Mesh.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
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

/// Fills `n` values of `width` bytes with hashed values in [-1, 1): zeros
/// would make every score equal, which is not how attention runs.
__global__ void fillRandom(void *data, size_t n, int width) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ uint32_t(i >> 32) * 40503u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    float x = float(h & 0xFFFFFF) / float(0x800000) - 1.0f;
    if (width == 2)
      static_cast<__nv_bfloat16 *>(data)[i] = __float2bfloat16(x);
    else
      static_cast<float *>(data)[i] = x;
  }
}
/// Median seconds of one call of `f`, timed on the host around `calls`
/// back-to-back calls and a device synchronization: for runtime kernels,
/// which launch on the runtime's own (non-blocking) stream.
template <typename F> double medianWallSeconds(int reps, int calls, F &&f) {
  std::vector<double> times;
  for (int r = -1; r < reps; ++r) {
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c)
      f();
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
    if (r >= 0) // the first round warms up
      times.push_back(s.count() / calls);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// FLOP/s of causal attention over `heads` problems of s x s x d (the
/// 4 s s d of the visible half of the score pairs, diagonal included).
double attentionRate(bool sixteenBit, void *buffers, int heads, int s, int d) {
  pccrt::AttentionMasks masks;
  masks.band = true;
  masks.hideFrom = 1;
  masks.fill = -INFINITY; // hidden pairs skipped, as masked_fill(-inf) is
  size_t elems = size_t(heads) * s * d, width = sixteenBit ? 2 : 4;
  char *base = static_cast<char *>(buffers);
  void *q = base, *k = base + elems * width, *v = base + 2 * elems * width,
       *out = base + 3 * elems * width;
  float *scratch = reinterpret_cast<float *>(base + 4 * elems * width);
  pccrt::Mesh mesh;
  double sec = medianWallSeconds(5, 10, [&] {
    if (sixteenBit)
      pccrt::attention16(static_cast<pccrt::BFloat16 *>(q),
                         static_cast<pccrt::BFloat16 *>(k),
                         static_cast<pccrt::BFloat16 *>(v),
                         static_cast<pccrt::BFloat16 *>(out), heads, s, s, d,
                         0.125f, false, masks, /*heads=*/12);
    else
      pccrt::attentionF32(static_cast<float *>(q), static_cast<float *>(k),
                          static_cast<float *>(v), static_cast<float *>(out),
                          heads, s, s, d, d, 0.125f, false, masks, mesh, -1,
                          scratch);
    check(cudaGetLastError(), "attention launch");
  });
  double pairs = double(s) * (s + 1) / 2;
  return 4.0 * heads * pairs * d / sec;
}

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

  // Scratch: the fp32 kernel's row maxima and sums (64 * 64 + 2 * heads *
  // s floats) after q, k, v and the output.
  const int heads = 96, seq = 1024, dim = 64;
  size_t attnBytes = 4 * size_t(heads) * seq * dim * 4 +
                     (64 * 64 + 2 * size_t(heads) * seq) * 4;
  void *attn;
  check(cudaMalloc(&attn, attnBytes), "cudaMalloc");
  check(cudaMemset(attn, 0, attnBytes), "cudaMemset");
  size_t qkv = 3 * size_t(heads) * seq * dim;
  fillRandom<<<1024, 256>>>(attn, qkv, 2);
  double attention16Rate = attentionRate(true, attn, heads, seq, dim);
  fillRandom<<<1024, 256>>>(attn, qkv, 4);
  double attention32Rate = attentionRate(false, attn, heads, seq, dim);

  std::printf("{\"schema\": \"pcc-gpu-probe/1\", \"device\": \"%s\", "
              "\"memory_bytes\": %zu, \"gemm_flops\": {%s}, "
              "\"gemm_shape_bf16\": [%s], \"copy_bytes_s\": %.6g, "
              "\"kernel_s\": %.6g, \"host_link_bytes_s\": %.6g, "
              "\"host_link_latency_s\": %.6g, \"attention_flops\": "
              "{\"bf16\": %.6g, \"fp16\": %.6g, \"fp32\": %.6g}}\n",
              prop.name, size_t(prop.totalGlobalMem), peaks.c_str(),
              shape.c_str(), 2.0 * copyBytes / copy, launchBatch / launches,
              hostBytes / upload, small, attention16Rate, attention16Rate,
              attention32Rate);
  return 0;
}
