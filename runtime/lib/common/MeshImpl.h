//===- MeshImpl.h - what a Mesh holds ----------------------------*- C++ -*-===//
//
// Private to the runtime: one communicator per communication group of the
// model (made by the back end linked in) and scratch for reordering blocks.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_LIB_COMMON_MESHIMPL_H
#define PCCRT_LIB_COMMON_MESHIMPL_H

#include "pccrt/Communicator.h"
#include "pccrt/Mesh.h"

#include <memory>
#include <vector>

namespace pccrt {

struct Mesh::Impl {
  std::vector<std::unique_ptr<Communicator>> groups;
  std::vector<char> scratch;

  char *buffer(size_t bytes) {
    if (scratch.size() < bytes)
      scratch.resize(bytes);
    return scratch.data();
  }
};

} // namespace pccrt

#endif // PCCRT_LIB_COMMON_MESHIMPL_H
