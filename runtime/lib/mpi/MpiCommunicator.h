//===- MpiCommunicator.h - communication groups over MPI ---------*- C++ -*-===//
//
// Private to the runtime: the MPI communicator of a group, which the
// targets' makeGroupCommunicator use (CPU ranks directly, GPU ranks staged
// through host memory).
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_LIB_MPI_MPICOMMUNICATOR_H
#define PCCRT_LIB_MPI_MPICOMMUNICATOR_H

#include "pccrt/Communicator.h"

namespace pccrt {

/// As makeGroupCommunicator (Communicator.h), over host buffers and MPI.
std::unique_ptr<Communicator> makeMpiGroupCommunicator(int64_t color,
                                                       int64_t index,
                                                       int64_t size);

} // namespace pccrt

#endif // PCCRT_LIB_MPI_MPICOMMUNICATOR_H
