//===- MpiWorld.h - the MPI job the ranks run in -----------------*- C++ -*-===//
//
// Private to the runtime: whether MPI is running (a model started without
// mpirun is a one-device world) and the MPI type and sum of each element
// type.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_LIB_MPI_MPIWORLD_H
#define PCCRT_LIB_MPI_MPIWORLD_H

#include "HangWatch.h"

#include "pccrt/Model.h"

namespace pccrt {

bool mpiActive();
MPI_Datatype mpiType(DType t);
/// MPI_SUM, or for fp16 and bf16 (MPI has no such types) an operation that
/// adds their values through float and rounds each sum to 16 bits, as a
/// GPU collective on 16-bit tensors does.
MPI_Op mpiSum(DType t);

} // namespace pccrt

#endif // PCCRT_LIB_MPI_MPIWORLD_H
