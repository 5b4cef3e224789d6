//===- Model.h - interface between generated code and the runtime -*- C++ -*-===//
//
// Generated code (pcc's C++ emitter) defines `pcc_model_info()` returning a
// ModelInfo; the runtime's main() loads weights and inputs, runs the model and
// handles --outputs/--check/--bench. Element types use ONNX's TensorProto
// data type codes so that .pb files map to them directly.
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_MODEL_H
#define PCCRT_MODEL_H

#include <cstddef>
#include <cstdint>

namespace pccrt {

/// ONNX TensorProto::DataType codes.
enum class DType : int32_t {
  F32 = 1,
  U8 = 2,
  I8 = 3,
  U16 = 4,
  I16 = 5,
  I32 = 6,
  I64 = 7,
  Bool = 9,
  F16 = 10,
  F64 = 11,
  U32 = 12,
  U64 = 13,
  BF16 = 16,
};

/// How one dimension is split; numAxes == 0 means whole on every device.
struct DimSplit {
  int32_t numAxes;
  int32_t axes[4];
  int64_t groups;
};

/// Bytes per element of `t`, or 0 if unknown.
size_t dtypeSize(DType t);
/// Lowercase name ("float32", "int64", ...).
const char *dtypeName(DType t);

/// Static description of one model input or output.
struct TensorDesc {
  const char *name;
  DType dtype;
  int rank;
  /// The global shape (what the .pb files hold).
  const int64_t *shape;
  /// One entry per dim: how the tensor is split over the mesh; null when
  /// every device has the whole tensor.
  const DimSplit *split;
};

/// A trained tensor that joins several initializers along one axis
/// (pcc-fuse-sibling-gemms: separate Q, K and V weights trained as one):
/// --save writes, and --resume reads, each part under its own name.
struct TrainedParts {
  int axis;
  int count;
  const char *const *names;
  /// Each part's size along `axis`.
  const int64_t *sizes;
};

/// Mesh axes a collective runs over, major first.
struct GroupDesc {
  int32_t numAxes;
  int32_t axes[4];
};

class Mesh;

/// Everything the runtime needs to know about a compiled model.
struct ModelInfo {
  const char *name;
  int numInputs;
  const TensorDesc *inputs;
  int numOutputs;
  const TensorDesc *outputs;
  /// Bytes of scratch memory the model's buffers need (after reuse).
  size_t arenaBytes;
  /// Bytes of weights after the weights file's header (WeightsFile.h).
  size_t weightsBytes;
  /// The device mesh: one process per device.
  int meshRank;
  const int64_t *meshShape;
  const char *const *meshAxisNames;
  /// Communication groups, indexed by the collectives' `g` argument.
  int numGroups;
  const GroupDesc *groups;
  /// Runs the model on this device. `inputs[i]` and `outputs[i]` point to
  /// dense row-major buffers of this device's blocks; `arena` is 64-byte
  /// aligned.
  void (*run)(const void *const *inputs, void *const *outputs, char *arena,
              const char *weights, Mesh &mesh);
  /// Fingerprint of this build; the weights file must carry the same.
  uint64_t fingerprint;
  /// Pipeline: the mesh axis whose coordinate is a device's stage (-1:
  /// none), and the stage that returns each output (null: none).
  int stageAxis;
  const int32_t *outputStages;
  /// Microbatches: a mesh axis with no devices, whose coordinates run one
  /// after another: `run` is called once per coordinate, on that
  /// microbatch's blocks of the inputs and outputs (-1: none).
  int microbatchAxis;
  /// Compiled with --precision tf32: f32 matrix products may round their
  /// inputs to TF32 (tensor cores on GPU ranks).
  bool tf32;
  /// A training step (pcc --train): each run updates the weights it
  /// stores into (pcc.assign), so the weights are mapped writable and
  /// output 0 is the loss.
  bool trains;
  /// What a training step stores into (parameters and optimizer states):
  /// their global shapes and layouts, and where this device's block lies
  /// in the weights (offset + stride * blockIndex).
  int numTrained;
  const TensorDesc *trained;
  const int64_t *trainedOffsets;
  const int64_t *trainedStrides;
  /// In a pipeline, the stage that trains each of them (nullptr otherwise).
  const int32_t *trainedStages;
  /// A training step over microbatches whose gradients need sums over the
  /// whole batch of its inputs: each step first runs every microbatch in
  /// prologue mode (Mesh::Phase::Prologue), then runs them for real.
  bool prologue;
  /// A pipelined training step whose forward and backward of a microbatch
  /// run apart: the runtime schedules them 1F1B (Mesh::setPhase).
  bool phased;
  /// Chunks of layers each pipeline device runs (interleaved 1F1B; 1:
  /// one stage per device). `run` computes stage Mesh::stage().
  int virtualStages;
  /// Per trained tensor, the shape its initializer has when the program
  /// holds it padded (a vocabulary padded for tensor parallelism), else
  /// null; null when none is: --save and --resume use that shape.
  const int64_t *const *trainedUnpadded;
  /// Per output, the shape it is written and checked at when the program
  /// returns it padded (logits over a padded vocabulary, split over tp),
  /// else null; null when none is.
  const int64_t *const *outputUnpadded;
  /// Per trained tensor, its parts when it joins several initializers,
  /// else null; null when none does.
  const TrainedParts *const *trainedParts;
  /// A phased step whose backward runs as B then W (zero-bubble): the
  /// runtime schedules it ZB-H1 unless --pp-schedule says otherwise.
  bool splitsBackward;
};

} // namespace pccrt

/// Defined by the generated code.
extern "C" const pccrt::ModelInfo *pcc_model_info();

#endif // PCCRT_MODEL_H
