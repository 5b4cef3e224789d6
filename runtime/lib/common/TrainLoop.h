//===- TrainLoop.h - what a training run reads and prints -------*- C++ -*-===//
//
// The executable's --train: how many batches a directory holds, and the
// line each step prints (JSON, or a readable line on a terminal).
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_LIB_COMMON_TRAINLOOP_H
#define PCCRT_LIB_COMMON_TRAINLOOP_H

#include <string>

namespace pccrt {

/// The number of consecutive DIR/batch_0, batch_1, ... directories.
long countBatches(const std::string &dir);

/// Prints one line per step on stdout when `enabled` (rank 0).
class StepPrinter {
public:
  explicit StepPrinter(bool enabled);
  void step(long k, double loss, double ms);

private:
  bool enabled, terminal;
};

} // namespace pccrt

#endif // PCCRT_LIB_COMMON_TRAINLOOP_H
