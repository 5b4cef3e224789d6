//===- MeshImpl.h - what a Mesh holds ----------------------------*- C++ -*-===//
//
// Private to the runtime: one communicator per communication group of the
// model (made by the back end linked in) and scratch for reordering blocks.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_LIB_COMMON_MESHIMPL_H
#define PCCRT_LIB_COMMON_MESHIMPL_H

#include "pccrt/Communicator.h"
#include "pccrt/Device.h"
#include "pccrt/Mesh.h"

#include <new>
#include <memory>
#include <vector>

namespace pccrt {

struct Mesh::Impl {
  std::vector<std::unique_ptr<Communicator>> groups;
  /// Device memory for reordering blocks, grown on demand.
  char *scratch = nullptr;
  size_t scratchBytes = 0;

  ~Impl() { freeDeviceBytes(scratch); }

  char *buffer(size_t bytes) {
    if (scratchBytes < bytes) {
      freeDeviceBytes(scratch);
      scratch = static_cast<char *>(allocateDeviceBytes(bytes));
      if (!scratch)
        throw std::bad_alloc();
      scratchBytes = bytes;
    }
    return scratch;
  }
};

} // namespace pccrt

#endif // PCCRT_LIB_COMMON_MESHIMPL_H
