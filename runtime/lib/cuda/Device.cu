//===- Device.cu - a GPU per rank: memory, stream, checked calls ----------===//
//
// Each rank takes one GPU: its local rank (OMPI_COMM_WORLD_LOCAL_RANK or
// SLURM_LOCALID) modulo the GPUs it sees. Ranks that outnumber the GPUs
// share them, which only host-staged collectives allow (--comm mpi).
//
//===----------------------------------------------------------------------===//

#include "CudaCommunicators.h"
#include "CudaContext.h"

#include "pccrt/Device.h"
#include "pccrt/Float16.h"
#include "pccrt/Mesh.h"
#include "pccrt/Status.h"

#include <chrono>
#include <cstdio>
#include <thread>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

namespace pccrt {
namespace cuda {
namespace {

struct Context {
  int device = -1;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t blasLt = nullptr;
  void *ltWorkspace = nullptr;
  DeviceErrors *errors = nullptr;
  std::unordered_map<const void *, void *> tables;
  // The recorded step (runStep) and how many steps ran before it.
  cudaGraphExec_t step = nullptr;
  int eagerSteps = 0;
};

/// cuBLAS's workspace, given once so that no GEMM allocates while a graph
/// is recorded.
constexpr size_t kBlasWorkspace = 32 << 20;

Context &context() {
  static Context c;
  return c;
}

int localRank() {
  for (const char *v : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                        "MPI_LOCALRANKID", "LOCAL_RANK"})
    if (const char *s = std::getenv(v))
      return std::atoi(s);
  return 0;
}

int localSize() {
  for (const char *v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE",
                        "MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE"})
    if (const char *s = std::getenv(v))
      return std::atoi(s);
  return 1;
}

} // namespace

void fail(const char *call, const char *what) {
  if (Mesh::worldSize() > 1)
    std::fprintf(stderr, "error: rank %d: %s failed: %s\n", Mesh::worldRank(),
                 call, what);
  else
    std::fprintf(stderr, "error: %s failed: %s\n", call, what);
  std::fflush(stderr);
  Mesh::abortWorld(1);
  std::exit(1);
}

const char *blasStatusName(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_NOT_INITIALIZED: return "cuBLAS not initialized";
  case CUBLAS_STATUS_ALLOC_FAILED: return "cuBLAS could not allocate memory";
  case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "not supported by this GPU";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
  default: return "cuBLAS error";
  }
}

cudaStream_t stream() { return context().stream; }
cublasHandle_t blas() { return context().blas; }
cublasLtHandle_t blasLt() { return context().blasLt; }
void *blasLtWorkspace() { return context().ltWorkspace; }
size_t blasLtWorkspaceBytes() { return kBlasWorkspace; }
DeviceErrors *deviceErrors() { return context().errors; }

const void *deviceTable(const void *host, size_t bytes) {
  static std::mutex lock;
  std::lock_guard<std::mutex> guard(lock);
  void *&p = context().tables[host];
  if (!p) {
    PCC_CUDA(cudaMalloc(&p, bytes ? bytes : 1));
    copyToDevice(p, host, bytes);
  }
  return p;
}

/// Whether this rank must share its GPU with another rank of its node.
bool sharesGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) != cudaSuccess || count < localSize();
}

} // namespace cuda

using namespace cuda;

void prepareProcess(char **) {}

std::string startDevice(CommKind comm) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    return std::string("no CUDA GPU is visible to this process (") +
           (e == cudaSuccess ? "no devices" : cudaGetErrorString(e)) + ")";
  if (comm == CommKind::Nccl && localSize() > count)
    return std::to_string(localSize()) + " ranks on this node but " +
           std::to_string(count) +
           " GPUs: NCCL needs a GPU per rank (run with --comm mpi to share)";
  Context &c = context();
  c.device = localRank() % count;
  PCC_CUDA(cudaSetDevice(c.device));
  PCC_CUDA(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  PCC_CUBLAS(cublasCreate(&c.blas));
  PCC_CUBLAS(cublasSetStream(c.blas, c.stream));
  // fp32 GEMMs stay fp32 unless the model asks for tf32 (setTensorFloat32).
  PCC_CUBLAS(cublasSetMathMode(c.blas, CUBLAS_DEFAULT_MATH));
  void *workspace = nullptr;
  PCC_CUDA(cudaMalloc(&workspace, kBlasWorkspace));
  PCC_CUBLAS(cublasSetWorkspace(c.blas, workspace, kBlasWorkspace));
  PCC_CUBLAS(cublasLtCreate(&c.blasLt));
  PCC_CUDA(cudaMalloc(&c.ltWorkspace, kBlasWorkspace));
  PCC_CUDA(cudaMalloc(&c.errors, sizeof(DeviceErrors)));
  PCC_CUDA(cudaMemset(c.errors, 0, sizeof(DeviceErrors)));
  chooseNccl(comm == CommKind::Nccl ||
             (comm == CommKind::Auto && !sharesGpu()));
  return "";
}

std::string deviceName() {
  cudaDeviceProp p;
  if (context().device < 0 ||
      cudaGetDeviceProperties(&p, context().device) != cudaSuccess)
    return "cuda";
  return p.name;
}

bool deviceIsHost() { return false; }

void *allocateDeviceBytes(size_t bytes) {
  void *p = nullptr;
  if (cudaMalloc(&p, bytes ? bytes : 256) != cudaSuccess) {
    cudaGetLastError(); // clear the error: the caller reports it
    return nullptr;
  }
  return p;
}

void freeDeviceBytes(void *p) {
  if (p)
    cudaFree(p);
}

void copyBytes(void *dst, const void *src, int64_t bytes) {
  if (dst != src && bytes > 0)
    PCC_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                             stream()));
}

void copyRows(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
              int64_t rowBytes, int64_t rows) {
  if (rows > 0 && rowBytes > 0)
    PCC_CUDA(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, rowBytes, rows,
                               cudaMemcpyDeviceToDevice, stream()));
}

void copyToDevice(void *dst, const void *src, int64_t bytes) {
  PCC_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream()));
  PCC_CUDA(cudaStreamSynchronize(stream()));
}

void copyToHost(void *dst, const void *src, int64_t bytes) {
  PCC_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream()));
  PCC_CUDA(cudaStreamSynchronize(stream()));
}

namespace {

template <typename T>
__global__ void addKernel(T *acc, const T *in, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    acc[i] = T(float(acc[i]) + float(in[i]));
}
template <>
__global__ void addKernel<double>(double *acc, const double *in,
                                  int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    acc[i] += in[i];
}

template <typename T> void add(void *acc, const void *in, int64_t count) {
  if (count == 0)
    return;
  addKernel<T><<<gridFor(count), 256, 0, stream()>>>(
      static_cast<T *>(acc), static_cast<const T *>(in), count);
  PCC_LAUNCHED();
}

} // namespace

bool addInto(DType type, void *acc, const void *in, int64_t count) {
  switch (type) {
  case DType::F32: add<float>(acc, in, count); return true;
  case DType::F64: add<double>(acc, in, count); return true;
  case DType::BF16: add<BFloat16>(acc, in, count); return true;
  case DType::F16: add<Half>(acc, in, count); return true;
  default: return false;
  }
}

void synchronizeDevice() {
  if (!stream())
    return;
  // Polled, so that a peer's failure inside NCCL ends this rank too instead
  // of leaving it waiting.
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream());
    if (e == cudaSuccess)
      break;
    if (e != cudaErrorNotReady)
      fail("cudaStreamSynchronize", cudaGetErrorString(e));
    std::string nccl = ncclAsyncError();
    if (!nccl.empty()) {
      abortNccl();
      fail("NCCL", nccl.c_str());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  DeviceErrors e;
  PCC_CUDA(cudaMemcpy(&e, deviceErrors(), sizeof(e), cudaMemcpyDeviceToHost));
  if (e.bad) {
    kernelError(std::string(e.bad == DeviceErrors::kScatterND ? "scatter_nd"
                                                              : "gather") +
                " index " + std::to_string(e.index) +
                " out of range for an axis of size " + std::to_string(e.axis));
    PCC_CUDA(cudaMemset(deviceErrors(), 0, sizeof(e)));
  }
}

void runStep(void (*step)(void *), void *state, bool recordable) {
  Context &c = context();
  if (c.step) {
    PCC_CUDA(cudaGraphLaunch(c.step, c.stream));
    return;
  }
  // The first step runs eagerly: it uploads weights and tables, which a
  // recording may not do.
  bool record = recordable && c.eagerSteps++ > 0 &&
                (Mesh::worldSize() == 1 || ncclChosen()) &&
                !std::getenv("PCC_NO_CUDA_GRAPH");
  if (!record) {
    step(state);
    return;
  }
  cudaGraph_t graph;
  PCC_CUDA(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeThreadLocal));
  step(state);
  PCC_CUDA(cudaStreamEndCapture(c.stream, &graph));
  PCC_CUDA(cudaGraphInstantiate(&c.step, graph, 0));
  PCC_CUDA(cudaGraphDestroy(graph));
  PCC_CUDA(cudaGraphLaunch(c.step, c.stream));
}

} // namespace pccrt

// What generated code calls (CudaModel.h).
#include "pccrt/CudaModel.h"

namespace pccrt {

cudaStream_t rankStream() { return cuda::stream(); }

void checkLaunch(const char *kernel) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    cuda::fail(kernel, cudaGetErrorString(e));
}

namespace {

/// A block of the weights file on the device.
struct Uploaded {
  void *data = nullptr;
  int64_t bytes = 0;
};

/// The device copies, by offset in the weights.
std::unordered_map<int64_t, Uploaded> &uploadedWeights() {
  static std::unordered_map<int64_t, Uploaded> all;
  return all;
}

} // namespace

const char *deviceWeight(const char *weights, int64_t offset, int64_t bytes) {
  Uploaded &u = uploadedWeights()[offset];
  if (!u.data) {
    u.data = allocateDeviceBytes(bytes);
    if (!u.data)
      cuda::fail("cudaMalloc", ("out of device memory uploading " +
                                std::to_string(bytes) + " bytes of weights")
                                   .c_str());
    u.bytes = bytes;
    copyToDevice(u.data, weights + offset, bytes);
  }
  return static_cast<const char *>(u.data);
}

void fetchWeights(char *weights) {
  synchronizeDevice();
  for (auto &[offset, u] : uploadedWeights())
    copyToHost(weights + offset, u.data, u.bytes);
}

} // namespace pccrt
