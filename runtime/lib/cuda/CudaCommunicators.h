//===- CudaCommunicators.h - how GPU ranks communicate -----------*- C++ -*-===//

#ifndef PCCRT_LIB_CUDA_CUDACOMMUNICATORS_H
#define PCCRT_LIB_CUDA_CUDACOMMUNICATORS_H

#include <string>

namespace pccrt::cuda {

/// Groups made from now on use NCCL (true; only under MPI) or host-staged
/// MPI.
void chooseNccl(bool nccl);
/// Whether groups use NCCL (their collectives are stream work).
bool ncclChosen();
/// The first asynchronous NCCL error of any communicator ("" if none).
std::string ncclAsyncError();
/// Aborts every NCCL communicator (a rank failed: nobody may wait on it).
void abortNccl();

} // namespace pccrt::cuda

#endif // PCCRT_LIB_CUDA_CUDACOMMUNICATORS_H
