//===- MemoryPlan.h - static buffer placement -------------------*- C++ -*-===//
//
// Places buffers with known sizes and live ranges in one arena so that
// buffers whose live ranges do not overlap share memory.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_CODEGEN_MEMORYPLAN_H
#define PCC_CODEGEN_MEMORYPLAN_H

#include <cstdint>
#include <vector>

namespace pcc {

struct BufferRequest {
  /// Live from the op at `start` through the op at `end`, inclusive.
  int64_t start = 0, end = 0;
  int64_t bytes = 0;
  /// Set by planBuffers: byte offset in the arena (64-byte aligned).
  int64_t offset = -1;
};

/// Assigns offsets (first fit by start or by size, the better) and returns the
/// arena size. Invariant: two buffers whose [start, end] ranges intersect get
/// disjoint [offset, offset + bytes) ranges.
int64_t planBuffers(std::vector<BufferRequest> &buffers);

} // namespace pcc

#endif // PCC_CODEGEN_MEMORYPLAN_H
