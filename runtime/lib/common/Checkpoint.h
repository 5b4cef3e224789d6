//===- Checkpoint.h - saving and resuming a training run ---------*- C++ -*-===//
//
// --save DIR writes every tensor the training step stores into (parameters
// and optimizer states), whole, gathered from the devices' blocks, as
// DIR/<initializer name>.pb, and DIR/steps.txt with the steps done;
// --resume DIR puts them back into each device's blocks, so a resumed run
// continues exactly where the saved one stopped.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_LIB_COMMON_CHECKPOINT_H
#define PCCRT_LIB_COMMON_CHECKPOINT_H

#include "pccrt/Mesh.h"
#include "pccrt/Model.h"

#include <string>

namespace pccrt {

/// Collective over the world; rank 0 writes. Returns an error or "".
std::string saveTrained(const ModelInfo &model, const Mesh &mesh,
                        const char *weights, const std::string &dir,
                        long steps);
/// Collective: every rank reads its blocks. Returns an error or "".
std::string resumeTrained(const ModelInfo &model, const Mesh &mesh,
                          char *weights, const std::string &dir, long &steps);

} // namespace pccrt

#endif // PCCRT_LIB_COMMON_CHECKPOINT_H
