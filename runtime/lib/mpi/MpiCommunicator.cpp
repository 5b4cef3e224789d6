//===- MpiCommunicator.cpp - communication groups over MPI ----------------===//
//
// Each group is an MPI sub-communicator of the devices that differ only
// along the group's axes (MPI_Comm_split by color, ranked by in-group
// index). Collectives are nonblocking and waited on through HangWatch, so
// a rank that stops answering ends the job instead of hanging it.
//
//===----------------------------------------------------------------------===//

#include "MpiCommunicator.h"
#include "MpiWorld.h"

#include "pccrt/Communicator.h"

#include <deque>
#include <vector>

namespace pccrt {

namespace {

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(MPI_Comm comm, int64_t index, int64_t size)
      : Communicator(index, size), comm(comm) {}
  ~MpiCommunicator() override {
    if (comm != MPI_COMM_NULL && mpiActive())
      MPI_Comm_free(&comm);
  }

  void allReduceSum(DType type, void *buf, int64_t count) override {
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, buf, static_cast<int>(count), mpiType(type),
                   mpiSum(type), comm, &r);
    waitFor(r, WaitKind::AllReduce);
  }

  void allGather(const void *in, void *out, int64_t bytes) override {
    MPI_Request r;
    MPI_Iallgather(in, static_cast<int>(bytes), MPI_BYTE, out,
                   static_cast<int>(bytes), MPI_BYTE, comm, &r);
    waitFor(r, WaitKind::AllGather);
  }

  void reduceScatterSum(DType type, const void *in, void *out,
                        int64_t count) override {
    MPI_Request r;
    MPI_Ireduce_scatter_block(in, out, static_cast<int>(count), mpiType(type),
                              mpiSum(type), comm, &r);
    waitFor(r, WaitKind::ReduceScatter);
  }

  void allToAll(const void *in, void *out, int64_t bytes) override {
    MPI_Request r;
    MPI_Ialltoall(in, static_cast<int>(bytes), MPI_BYTE, out,
                  static_cast<int>(bytes), MPI_BYTE, comm, &r);
    waitFor(r, WaitKind::AllToAll);
  }
  void broadcast(int64_t root, void *buf, int64_t bytes) override {
    MPI_Request r;
    MPI_Ibcast(buf, static_cast<int>(bytes), MPI_BYTE, static_cast<int>(root),
               comm, &r);
    waitFor(r, WaitKind::Broadcast);
  }
  // A pipeline's sends are copied and left in flight: a training step's
  // backward pass sends against the stage order its forward pass sent in,
  // and a send that waited for its receiver could wait for a device that
  // waits for this one.
  void send(int64_t peer, const void *buf, int64_t bytes,
            int64_t tag) override {
    PendingSend &p = pending.emplace_back();
    const char *from = static_cast<const char *>(buf);
    p.bytes.assign(from, from + bytes);
    MPI_Isend(p.bytes.data(), static_cast<int>(bytes), MPI_BYTE,
              static_cast<int>(peer), static_cast<int>(tag), comm, &p.request);
  }
  void finishSends() override {
    for (PendingSend &p : pending)
      waitFor(p.request, WaitKind::Send);
    pending.clear();
  }
  void recv(int64_t peer, void *buf, int64_t bytes, int64_t tag) override {
    MPI_Request r;
    MPI_Irecv(buf, static_cast<int>(bytes), MPI_BYTE, static_cast<int>(peer),
              static_cast<int>(tag), comm, &r);
    waitFor(r, WaitKind::Receive);
  }

  void startExchange(int64_t to, const void *out, int64_t from, void *in,
                     int64_t bytes) override {
    MPI_Irecv(in, static_cast<int>(bytes), MPI_BYTE, static_cast<int>(from),
              kExchangeTag, comm, &exchange[0]);
    MPI_Isend(out, static_cast<int>(bytes), MPI_BYTE, static_cast<int>(to),
              kExchangeTag, comm, &exchange[1]);
  }
  void finishExchange() override {
    waitFor(exchange[0], WaitKind::RingShift);
    waitFor(exchange[1], WaitKind::RingShift);
  }

private:
  // Above the pipeline's tags (microbatch x stage boundary).
  static constexpr int kExchangeTag = 1 << 20;
  MPI_Comm comm;
  MPI_Request exchange[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  struct PendingSend {
    std::vector<char> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::deque<PendingSend> pending;
};

} // namespace

std::unique_ptr<Communicator> makeMpiGroupCommunicator(int64_t color,
                                                       int64_t index,
                                                       int64_t size) {
  MPI_Comm comm = MPI_COMM_NULL;
  if (mpiActive()) {
    MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color),
                   static_cast<int>(index), &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
  }
  return std::make_unique<MpiCommunicator>(comm, index, size);
}

} // namespace pccrt
