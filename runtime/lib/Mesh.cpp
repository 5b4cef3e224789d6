//===- Mesh.cpp - the device grid and its collectives over MPI ------------===//

#include "pccrt/Mesh.h"

// The C API only (no MPI C++ bindings library at link time), and every wait
// through HangWatch so that a hung rank ends the job.
#include "HangWatch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace pccrt {

namespace {
bool mpiActive = false;

/// Launched by mpirun (OpenMPI, or a PMI-based launcher such as Slurm)?
bool launchedByMPI() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v))
      return true;
  return false;
}

MPI_Datatype mpiType(DType t) {
  switch (t) {
  case DType::F32: return MPI_FLOAT;
  case DType::F64: return MPI_DOUBLE;
  case DType::I64: return MPI_INT64_T;
  case DType::I32: return MPI_INT32_T;
  case DType::I16: return MPI_INT16_T;
  case DType::I8: return MPI_INT8_T;
  case DType::U64: return MPI_UINT64_T;
  case DType::U32: return MPI_UINT32_T;
  case DType::U16: return MPI_UINT16_T;
  default: return MPI_UINT8_T;
  }
}
} // namespace

struct Mesh::Impl {
  std::vector<MPI_Comm> comms;
  std::vector<int64_t> index, size;
  std::vector<char> scratch;

  char *buffer(size_t bytes) {
    if (scratch.size() < bytes)
      scratch.resize(bytes);
    return scratch.data();
  }
};

Mesh::Mesh() : impl_(std::make_unique<Impl>()) {}

Mesh::~Mesh() {
  if (mpiActive)
    for (MPI_Comm &c : impl_->comms)
      if (c != MPI_COMM_NULL)
        MPI_Comm_free(&c);
}

void Mesh::initProcess(int *argc, char ***argv) {
  if (!launchedByMPI())
    return;
  MPI_Init(argc, argv);
  // Errors in collectives come back as codes, reported by the caller.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  startHangWatch();
  mpiActive = true;
}

void Mesh::setTimeout(double seconds) { setWaitTimeout(seconds); }

void Mesh::barrier() {
  if (!mpiActive)
    return;
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  waitFor(r, WaitKind::Barrier);
}

void Mesh::finalizeProcess() {
  if (!mpiActive)
    return;
  // MPI_Finalize waits for every rank without a limit: meet first.
  barrier();
  stopHangWatch();
  MPI_Finalize();
  mpiActive = false;
}

bool Mesh::usingMPI() { return mpiActive; }

int Mesh::worldRank() {
  int r = 0;
  if (mpiActive)
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int Mesh::worldSize() {
  int n = 1;
  if (mpiActive)
    MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

static int reduceOverWorld(int v, MPI_Op op) {
  if (!mpiActive)
    return v;
  int out = 0;
  MPI_Request r;
  MPI_Iallreduce(&v, &out, 1, MPI_INT, op, MPI_COMM_WORLD, &r);
  waitFor(r, WaitKind::Agreement);
  return out;
}

int Mesh::sumOverWorld(int v) { return reduceOverWorld(v, MPI_SUM); }
int Mesh::minOverWorld(int v) { return reduceOverWorld(v, MPI_MIN); }

void Mesh::gatherToRoot(const void *local, size_t bytes, void *all) {
  if (!mpiActive) {
    std::memcpy(all, local, bytes);
    return;
  }
  // MPI counts are int: move large tensors in chunks.
  const size_t chunk = size_t(1) << 30;
  int n = worldSize(), r = worldRank();
  std::vector<char> part;
  for (size_t off = 0; off < bytes || off == 0; off += chunk) {
    size_t len = std::min(chunk, bytes - off);
    if (r == 0)
      part.resize(len * n);
    MPI_Request req;
    MPI_Igather(static_cast<const char *>(local) + off, static_cast<int>(len),
                MPI_BYTE, part.data(), static_cast<int>(len), MPI_BYTE, 0,
                MPI_COMM_WORLD, &req);
    waitFor(req, WaitKind::GatherOutputs);
    if (r == 0)
      for (int k = 0; k < n; ++k)
        std::memcpy(static_cast<char *>(all) + k * bytes + off,
                    part.data() + k * len, len);
    if (bytes == 0)
      break;
  }
}

void Mesh::abortWorld(int code) {
  if (mpiActive)
    MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

void Mesh::create(const ModelInfo &model) {
  // MPI_Comm_split below cannot time out: make sure every rank is here.
  barrier();
  rank_ = worldRank();
  shape_.assign(model.meshShape, model.meshShape + model.meshRank);
  coords_.assign(model.meshRank, 0);
  meshCoords(rank_, model.meshRank, model.meshShape, coords_.data());
  groups_.assign(model.groups, model.groups + model.numGroups);
  for (const GroupDesc &g : groups_) {
    int64_t index = 0, size = 1;
    bool in[8] = {};
    for (int i = 0; i < g.numAxes; ++i) {
      index = index * shape_[g.axes[i]] + coords_[g.axes[i]];
      size *= shape_[g.axes[i]];
      in[g.axes[i]] = true;
    }
    // Devices agreeing on every other axis form one communicator.
    int64_t color = 0;
    for (int a = 0; a < model.meshRank; ++a)
      if (!in[a])
        color = color * shape_[a] + coords_[a];
    MPI_Comm comm = MPI_COMM_NULL;
    if (mpiActive) {
      MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color),
                     static_cast<int>(index), &comm);
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
    }
    impl_->comms.push_back(comm);
    impl_->index.push_back(index);
    impl_->size.push_back(size);
  }
}

int64_t Mesh::groupIndex(int g) const { return impl_->index[g]; }
int64_t Mesh::groupSize(int g) const { return impl_->size[g]; }

int64_t groupIndex(const Mesh &mesh, int g) { return mesh.groupIndex(g); }
int64_t groupSize(const Mesh &mesh, int g) { return mesh.groupSize(g); }

int64_t blockIndex(const Mesh &mesh, int rank, const DimSplit *splits) {
  int64_t index = 0;
  for (int d = 0; d < rank; ++d)
    index = index * splitCount(splits[d], mesh.shape()) +
            splitIndex(splits[d], mesh.shape(), mesh.coords());
  return index;
}

void allReduceSum(Mesh &mesh, int g, DType t, const void *in, void *out,
                  int64_t count) {
  Mesh::Impl &m = mesh.impl();
  if (in != out)
    std::memcpy(out, in, count * dtypeSize(t));
  if (m.size[g] == 1)
    return;
  MPI_Request r;
  MPI_Iallreduce(MPI_IN_PLACE, out, static_cast<int>(count), mpiType(t),
                 MPI_SUM, m.comms[g], &r);
  waitFor(r, WaitKind::AllReduce);
}

void allGather(Mesh &mesh, int g, const void *in, void *out, int64_t outer,
               int64_t blockBytes) {
  Mesh::Impl &m = mesh.impl();
  int64_t n = m.size[g];
  int64_t bytes = outer * blockBytes;
  if (n == 1) {
    std::memcpy(out, in, bytes);
    return;
  }
  // MPI gathers device by device; reorder to [outer, device, block].
  char *dst = outer == 1 ? static_cast<char *>(out) : m.buffer(n * bytes);
  MPI_Request r;
  MPI_Iallgather(in, static_cast<int>(bytes), MPI_BYTE, dst,
                 static_cast<int>(bytes), MPI_BYTE, m.comms[g], &r);
  waitFor(r, WaitKind::AllGather);
  if (outer == 1)
    return;
  char *o = static_cast<char *>(out);
  for (int64_t i = 0; i < outer; ++i)
    for (int64_t r = 0; r < n; ++r)
      std::memcpy(o + (i * n + r) * blockBytes,
                  dst + (r * outer + i) * blockBytes, blockBytes);
}

void reduceScatterSum(Mesh &mesh, int g, DType t, const void *in, void *out,
                      int64_t outer, int64_t blockCount) {
  Mesh::Impl &m = mesh.impl();
  int64_t n = m.size[g];
  size_t elem = dtypeSize(t);
  int64_t blockBytes = blockCount * elem;
  if (n == 1) {
    std::memcpy(out, in, outer * blockBytes);
    return;
  }
  // Reorder [outer, device, block] to [device, outer, block] for MPI.
  const char *src = static_cast<const char *>(in);
  if (outer != 1) {
    char *packed = m.buffer(n * outer * blockBytes);
    for (int64_t i = 0; i < outer; ++i)
      for (int64_t r = 0; r < n; ++r)
        std::memcpy(packed + (r * outer + i) * blockBytes,
                    src + (i * n + r) * blockBytes, blockBytes);
    src = packed;
  }
  MPI_Request r;
  MPI_Ireduce_scatter_block(src, out, static_cast<int>(outer * blockCount),
                            mpiType(t), MPI_SUM, m.comms[g], &r);
  waitFor(r, WaitKind::ReduceScatter);
}

void allSlice(Mesh &mesh, int g, const void *in, void *out, int64_t outer,
              int64_t blockBytes) {
  Mesh::Impl &m = mesh.impl();
  int64_t n = m.size[g], r = m.index[g];
  const char *src = static_cast<const char *>(in);
  char *dst = static_cast<char *>(out);
  for (int64_t i = 0; i < outer; ++i)
    std::memcpy(dst + i * blockBytes, src + (i * n + r) * blockBytes,
                blockBytes);
}

} // namespace pccrt
