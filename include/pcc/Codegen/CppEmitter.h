//===- CppEmitter.h - pcc dialect to C++ over the runtime -------*- C++ -*-===//
//
// Translates func.func @main of a (per-rank, static) pcc module into one C++
// translation unit that defines pcc_model_info() for the runtime (pccrt).
// Elementwise chains are fused into single loops; buffers are placed by
// liveness in one arena; GEMMs and convolutions call BLAS through pccrt.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_CODEGEN_CPPEMITTER_H
#define PCC_CODEGEN_CPPEMITTER_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace pcc {

/// One entry of the weights file: a named ONNX weight or an IR constant.
/// A weight split over the mesh is stored as all of its blocks, each
/// `bytes` long, `stride` apart, in the order pccrt::blockIndex numbers them.
struct WeightsEntry {
  std::string weightName;
  mlir::ElementsAttr constant;
  int64_t offset = 0;
  int64_t bytes = 0;
  /// Set for split weights: the global shape, and per dim its block count
  /// and group count.
  std::vector<int64_t> globalShape, blocks, groups;
  int64_t elementBytes = 0;
  int64_t numBlocks = 1;
  int64_t stride = 0;
};

/// One generated translation unit.
struct EmittedSource {
  std::string name, text;
};

struct EmittedModel {
  /// model.cpp (the model's tables, run() and pcc_model_info()), then, for
  /// large models, model_K.cpp files holding run()'s parts, which compile in
  /// parallel.
  std::vector<EmittedSource> sources;
  std::vector<WeightsEntry> weights;
  int64_t weightsBytes = 0;
  /// Scratch arena after liveness-based reuse, and what it would be without.
  int64_t arenaBytes = 0;
  int64_t unsharedBytes = 0;
  int fusedLoops = 0;
  int fusedOps = 0;
  int kernelCalls = 0;
  /// Collectives in one run, and the bytes each device sends into them.
  int allReduces = 0, allGathers = 0, reduceScatters = 0, allSlices = 0;
  int64_t collectiveBytes = 0;
};

struct EmitOptions {
  /// Bytes one device holds; a tensor or a device's total beyond it is an
  /// error at the op (0: no limit).
  int64_t deviceMemoryBytes = 0;
  /// Generated source per translation unit before the code is split into
  /// several, which compile in parallel.
  size_t unitBytes = 256 << 10;
};

/// Emits C++ for `module`; reports unsupported ops or types, and tensors
/// beyond a device's memory, as errors at the op's location. The source uses
/// the macro PCC_BUILD_FINGERPRINT, which the build defines.
mlir::FailureOr<EmittedModel> emitCpp(mlir::ModuleOp module,
                                      const EmitOptions &options = {});

} // namespace pcc

#endif // PCC_CODEGEN_CPPEMITTER_H
