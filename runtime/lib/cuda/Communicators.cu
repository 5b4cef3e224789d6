//===- Communicators.cu - GPU collectives: NCCL, or staged over MPI -------===//
//
// With a GPU per rank, each communication group is an NCCL communicator
// split (ncclCommSplit) from one world communicator, whose unique id rank 0
// broadcasts over MPI; every collective runs on the compute stream. When
// ranks share a GPU (NCCL refuses that) or with --comm mpi, a group's
// collectives copy the device buffers to host memory, run over MPI (the
// CPU ranks' communicator) and copy back.
//
//===----------------------------------------------------------------------===//

#include "CudaCommunicators.h"
#include "CudaContext.h"

#include "../mpi/MpiCommunicator.h"
#include "../mpi/MpiWorld.h"

#include "pccrt/Mesh.h"

#include <nccl.h>

#include <string>
#include <vector>

namespace pccrt {
namespace cuda {
namespace {

#define PCC_NCCL(call)                                                         \
  do {                                                                         \
    ncclResult_t pccStatus_ = (call);                                          \
    if (pccStatus_ != ncclSuccess)                                             \
      ::pccrt::cuda::fail(#call, ncclGetErrorString(pccStatus_));              \
  } while (0)

bool useNccl = false;
std::vector<ncclComm_t> &allComms() {
  static std::vector<ncclComm_t> comms;
  return comms;
}

ncclDataType_t ncclType(DType t) {
  switch (t) {
  case DType::F32: return ncclFloat32;
  case DType::F64: return ncclFloat64;
  case DType::F16: return ncclFloat16;
  case DType::BF16: return ncclBfloat16;
  case DType::I32: return ncclInt32;
  case DType::U32: return ncclUint32;
  case DType::I64: return ncclInt64;
  case DType::U64: return ncclUint64;
  case DType::I8: return ncclInt8;
  default: return ncclUint8;
  }
}

ncclComm_t worldComm() {
  static ncclComm_t world = nullptr;
  if (world)
    return world;
  ncclUniqueId id;
  if (Mesh::worldRank() == 0)
    PCC_NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  PCC_NCCL(ncclCommInitRank(&world, Mesh::worldSize(), id, Mesh::worldRank()));
  allComms().push_back(world);
  return world;
}

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(ncclComm_t comm, int64_t index, int64_t size)
      : Communicator(index, size), comm(comm) {}

  void allReduceSum(DType type, void *buf, int64_t count) override {
    if (type == DType::I16 || type == DType::U16 || type == DType::Bool)
      fail("ncclAllReduce", "no NCCL sum for 16-bit integers or bools");
    PCC_NCCL(ncclAllReduce(buf, buf, count, ncclType(type), ncclSum, comm,
                           stream()));
  }
  void allGather(const void *in, void *out, int64_t bytes) override {
    PCC_NCCL(ncclAllGather(in, out, bytes, ncclUint8, comm, stream()));
  }
  void reduceScatterSum(DType type, const void *in, void *out,
                        int64_t count) override {
    PCC_NCCL(ncclReduceScatter(in, out, count, ncclType(type), ncclSum, comm,
                               stream()));
  }
  void allToAll(const void *in, void *out, int64_t bytes) override {
    const char *src = static_cast<const char *>(in);
    char *dst = static_cast<char *>(out);
    PCC_NCCL(ncclGroupStart());
    for (int64_t r = 0; r < size(); ++r) {
      PCC_NCCL(ncclSend(src + r * bytes, bytes, ncclUint8, r, comm, stream()));
      PCC_NCCL(ncclRecv(dst + r * bytes, bytes, ncclUint8, r, comm, stream()));
    }
    PCC_NCCL(ncclGroupEnd());
  }
  void broadcast(int64_t root, void *buf, int64_t bytes) override {
    PCC_NCCL(ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm, stream()));
  }
  // NCCL pairs sends and receives in issue order: the tag is implied.
  void send(int64_t peer, const void *buf, int64_t bytes, int64_t) override {
    PCC_NCCL(ncclSend(buf, bytes, ncclUint8, peer, comm, stream()));
  }
  void recv(int64_t peer, void *buf, int64_t bytes, int64_t) override {
    PCC_NCCL(ncclRecv(buf, bytes, ncclUint8, peer, comm, stream()));
  }
  void startExchange(int64_t to, const void *out, int64_t from, void *in,
                     int64_t bytes) override {
    PCC_NCCL(ncclGroupStart());
    PCC_NCCL(ncclSend(out, bytes, ncclUint8, to, comm, stream()));
    PCC_NCCL(ncclRecv(in, bytes, ncclUint8, from, comm, stream()));
    PCC_NCCL(ncclGroupEnd());
  }
  // Stream order: work after the exchange sees its bytes.
  void finishExchange() override {}

private:
  ncclComm_t comm;
};

/// Host copies of device buffers around an MPI communicator.
class StagedCommunicator final : public Communicator {
public:
  explicit StagedCommunicator(std::unique_ptr<Communicator> mpi)
      : Communicator(mpi->index(), mpi->size()), mpi(std::move(mpi)) {}
  ~StagedCommunicator() override { cudaFreeHost(host); }

  void allReduceSum(DType type, void *buf, int64_t count) override {
    int64_t bytes = count * dtypeSize(type);
    char *h = staging(bytes);
    down(h, buf, bytes);
    mpi->allReduceSum(type, h, count);
    up(buf, h, bytes);
  }
  void allGather(const void *in, void *out, int64_t bytes) override {
    char *h = staging(bytes * (size() + 1));
    down(h, in, bytes);
    mpi->allGather(h, h + bytes, bytes);
    up(out, h + bytes, bytes * size());
  }
  void reduceScatterSum(DType type, const void *in, void *out,
                        int64_t count) override {
    int64_t bytes = count * dtypeSize(type);
    char *h = staging(bytes * (size() + 1));
    down(h, in, bytes * size());
    mpi->reduceScatterSum(type, h, h + bytes * size(), count);
    up(out, h + bytes * size(), bytes);
  }
  void allToAll(const void *in, void *out, int64_t bytes) override {
    char *h = staging(2 * bytes * size());
    down(h, in, bytes * size());
    mpi->allToAll(h, h + bytes * size(), bytes);
    up(out, h + bytes * size(), bytes * size());
  }
  void broadcast(int64_t root, void *buf, int64_t bytes) override {
    char *h = staging(bytes);
    if (index() == root)
      down(h, buf, bytes);
    mpi->broadcast(root, h, bytes);
    if (index() != root)
      up(buf, h, bytes);
  }
  void send(int64_t peer, const void *buf, int64_t bytes,
            int64_t tag) override {
    char *h = staging(bytes);
    down(h, buf, bytes);
    mpi->send(peer, h, bytes, tag);
  }
  void recv(int64_t peer, void *buf, int64_t bytes, int64_t tag) override {
    char *h = staging(bytes);
    mpi->recv(peer, h, bytes, tag);
    up(buf, h, bytes);
  }
  void startExchange(int64_t to, const void *out, int64_t from, void *in,
                     int64_t bytes) override {
    char *h = staging(2 * bytes);
    down(h, out, bytes);
    exchangeIn = in;
    exchangeBytes = bytes;
    mpi->startExchange(to, h, from, h + bytes, bytes);
  }
  void finishExchange() override {
    mpi->finishExchange();
    up(exchangeIn, host + exchangeBytes, exchangeBytes);
  }

private:
  char *staging(int64_t bytes) {
    if (bytes > capacity) {
      cudaFreeHost(host);
      PCC_CUDA(cudaMallocHost(&host, bytes));
      capacity = bytes;
    }
    return host;
  }
  void down(char *h, const void *d, int64_t bytes) {
    PCC_CUDA(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, stream()));
    PCC_CUDA(cudaStreamSynchronize(stream()));
  }
  void up(void *d, const char *h, int64_t bytes) {
    PCC_CUDA(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream()));
    PCC_CUDA(cudaStreamSynchronize(stream()));
  }

  std::unique_ptr<Communicator> mpi;
  char *host = nullptr;
  int64_t capacity = 0;
  void *exchangeIn = nullptr;
  int64_t exchangeBytes = 0;
};

} // namespace

void chooseNccl(bool nccl) { useNccl = nccl && mpiActive(); }
bool ncclChosen() { return useNccl; }

std::string ncclAsyncError() {
  for (ncclComm_t c : allComms()) {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(c, &state) == ncclSuccess &&
        state != ncclSuccess && state != ncclInProgress)
      return ncclGetErrorString(state);
  }
  return "";
}

void abortNccl() {
  for (ncclComm_t c : allComms())
    ncclCommAbort(c);
  allComms().clear();
}

} // namespace cuda

std::unique_ptr<Communicator> makeGroupCommunicator(int64_t color,
                                                    int64_t index,
                                                    int64_t size) {
  if (!cuda::useNccl)
    return std::make_unique<cuda::StagedCommunicator>(
        makeMpiGroupCommunicator(color, index, size));
  ncclComm_t comm = nullptr;
  PCC_NCCL(ncclCommSplit(cuda::worldComm(), static_cast<int>(color),
                         static_cast<int>(index), &comm, nullptr));
  cuda::allComms().push_back(comm);
  return std::make_unique<cuda::NcclCommunicator>(comm, index, size);
}

} // namespace pccrt
