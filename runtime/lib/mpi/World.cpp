//===- World.cpp - the MPI job: start, meet, agree, end -------------------===//
//
// The process-level part of Mesh (Mesh.h) over MPI_COMM_WORLD. The C API only
// (no MPI C++ bindings library at link time), and every wait through
// HangWatch so that a hung rank ends the job.
//
//===----------------------------------------------------------------------===//

#include "MpiWorld.h"

#include "pccrt/Float16.h"

#include "pccrt/Mesh.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace pccrt {

namespace {
bool active = false;

/// Launched by mpirun (OpenMPI, or a PMI-based launcher such as Slurm)?
bool launchedByMPI() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v))
      return true;
  return false;
}

} // namespace

bool mpiActive() { return active; }

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
  case DType::U16: case DType::F16: case DType::BF16: return MPI_UINT16_T;
  default: return MPI_UINT8_T;
  }
}

namespace {

template <typename T>
void sumThroughFloat(void *in, void *inout, int *len, MPI_Datatype *) {
  const T *a = static_cast<const T *>(in);
  T *b = static_cast<T *>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = float(a[i]) + float(b[i]);
}

} // namespace

MPI_Op mpiSum(DType t) {
  static MPI_Op half = MPI_OP_NULL, bfloat = MPI_OP_NULL;
  if (t == DType::F16) {
    if (half == MPI_OP_NULL)
      MPI_Op_create(sumThroughFloat<Half>, /*commute=*/1, &half);
    return half;
  }
  if (t == DType::BF16) {
    if (bfloat == MPI_OP_NULL)
      MPI_Op_create(sumThroughFloat<BFloat16>, /*commute=*/1, &bfloat);
    return bfloat;
  }
  return MPI_SUM;
}

void Mesh::initProcess(int *argc, char ***argv) {
  if (!launchedByMPI())
    return;
  MPI_Init(argc, argv);
  // Errors in collectives come back as codes, reported by the caller.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  startHangWatch();
  active = true;
}

void Mesh::setTimeout(double seconds) { setWaitTimeout(seconds); }

void Mesh::barrier() {
  if (!active)
    return;
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  waitFor(r, WaitKind::Barrier);
}

void Mesh::finalizeProcess() {
  if (!active)
    return;
  // MPI_Finalize waits for every rank without a limit: meet first.
  barrier();
  stopHangWatch();
  MPI_Finalize();
  active = false;
}

bool Mesh::usingMPI() { return active; }

int Mesh::worldRank() {
  int r = 0;
  if (active)
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int Mesh::worldSize() {
  int n = 1;
  if (active)
    MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

static int reduceOverWorld(int v, MPI_Op op) {
  if (!active)
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
  if (!active) {
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
  if (active)
    MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

} // namespace pccrt
