//===- MpiWorld.h - the MPI job the ranks run in -----------------*- C++ -*-===//
//
// Private to the runtime: whether MPI is running (a model started without
// mpirun is a one-device world) and the MPI type of each element type.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_LIB_MPI_MPIWORLD_H
#define PCCRT_LIB_MPI_MPIWORLD_H

#include "HangWatch.h"

#include "pccrt/Model.h"

namespace pccrt {

bool mpiActive();
MPI_Datatype mpiType(DType t);

} // namespace pccrt

#endif // PCCRT_LIB_MPI_MPIWORLD_H
