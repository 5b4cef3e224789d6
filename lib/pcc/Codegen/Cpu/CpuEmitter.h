//===- CpuEmitter.h - per-device module to C++ over pccrt -------*- C++ -*-===//
//
// The CPU target's code generator, private to lib/pcc/Codegen/Cpu. One
// Emitter walks the schedule (Schedule.h) of func.func @main and writes C++
// that calls the runtime's kernels (BLAS GEMMs, MPI collectives). Its
// members are defined by op family, one file each:
//   CpuEmitter.cpp       values, parts, the walk and the dispatch by family
//   EmitPointwise.cpp    fused pointwise loops
//   EmitContraction.cpp  matmul, gemm, conv
//   EmitAttention.cpp    attention (blocked, or around a ring)
//   EmitPooling.cpp, EmitNormalization.cpp, EmitReduction.cpp,
//   EmitDataMovement.cpp, EmitCollective.cpp
//   ModelSources.cpp     the model's tables and the translation units
//
//===----------------------------------------------------------------------===//

#ifndef PCC_CODEGEN_CPU_CPUEMITTER_H
#define PCC_CODEGEN_CPU_CPUEMITTER_H

#include "CppText.h"

#include "pcc/Codegen/Schedule.h"
#include "pcc/Codegen/Target.h"
#include "pcc/Dialect/PCC/IR/GpuKernels.h"
#include "pcc/Dialect/PCC/IR/PCCOps.h"
#include "pcc/Dialect/PCC/IR/TensorUtils.h"
#include "pcc/Sharding/ParallelPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

namespace pcc::cpu {

/// Scratch the CPU kernel of `op` needs: im2col columns of a convolution,
/// intermediate results of a reduction over several separate axis blocks.
int64_t scratchBytes(mlir::Operation *op, const Mesh &mesh);
/// GEMMs read 2-D transposes through their transA / transB flags, and a
/// float matmul of a transposed right matrix becomes a pcc.gemm; the
/// transposes go (FoldOperandTransposes.cpp).
void foldOperandTransposes(mlir::func::FuncOp fn);
/// CPU ranks: one-hot products that sum an embedding's gradient rows become
/// the scatter-adds they stand for (ScatterEmbeddingGradients.cpp).
void scatterEmbeddingGradients(mlir::func::FuncOp fn);
/// Casts the float operands and results of every f32-only kernel op on
/// fp16/bf16 tensors to f32 and back (WidenKernels.cpp); with
/// `sixteenBitGemms` (GPU ranks) matrix products other than SUMMA's stay
/// 16-bit.
void widenSixteenBitKernels(mlir::func::FuncOp fn, bool sixteenBitGemms);
/// Scratch of the blocked attention kernel (EmitAttention.cpp).
int64_t attentionScratchBytes(AttentionOp op);
/// GPU ranks: tensor-core attentions between the head split and merge
/// transposes of [B, S, H, D] tensors read and write them in place
/// (`seq_first`), and the transposes go; such attentions read the heads of
/// a split projection (a fused QKV) in place (`head_offsets`), and the split
/// goes (FoldHeadTransposes.cpp).
void foldHeadTransposes(mlir::func::FuncOp fn);

/// What the emitter writes: C++ for CPU ranks, or CUDA C++ for GPU ranks
/// (the same program over the same runtime API on device pointers, with
/// fused loops as kernels and weights uploaded at first use).
enum class SourceKind { Cpp, Cuda };

class Emitter {
public:
  Emitter(mlir::func::FuncOp fn, Mesh mesh, const EmitOptions &options,
          SourceKind kind = SourceKind::Cpp)
      : fn(fn), mesh(std::move(mesh)), options(options), kind(kind),
        os(body) {}
  mlir::FailureOr<EmittedModel> run();

private:
  mlir::LogicalResult emitOp(mlir::Operation *op);
  mlir::LogicalResult emitFusedLoop(mlir::Operation *root);
  mlir::FailureOr<std::string> scalarExpr(mlir::Operation *op,
                                          llvm::ArrayRef<std::string> operands);
  /// The statements of one element of a fused group: loads of the leaves
  /// (leaf k from `leafPtr(k)` at `leafIdx[k]`), the members' expressions,
  /// the store to `outPtr[outIdx]`.
  mlir::FailureOr<std::string> fusedBody(
      llvm::ArrayRef<mlir::Operation *> group,
      llvm::ArrayRef<mlir::Value> leaves, llvm::ArrayRef<std::string> leafIdx,
      llvm::function_ref<std::string(size_t)> leafPtr, llvm::StringRef outPtr,
      llvm::StringRef indent, llvm::StringRef outIdx = "i");
  /// A fused group as a CUDA kernel (defined in `kernels`) and its launch.
  mlir::LogicalResult emitFusedKernel(mlir::Operation *root,
                                      llvm::ArrayRef<mlir::Operation *> group,
                                      llvm::ArrayRef<mlir::Value> leaves,
                                      llvm::ArrayRef<std::string> leafIdx,
                                      bool flat);
  /// `bytes` from `src` to `dst`, both in the device's memory.
  void emitCopy(llvm::StringRef dst, llvm::StringRef src, int64_t bytes);
  mlir::LogicalResult emitKernel(mlir::Operation *op);
  mlir::LogicalResult emitContraction(mlir::Operation *op);
  mlir::LogicalResult emitAttention(AttentionOp op);
  void emitSumma(mlir::Operation *op, llvm::ArrayRef<int64_t> axes,
                 mlir::Value x, mlir::Value w, bool transB, double alpha,
                 double beta);
  mlir::LogicalResult emitPooling(mlir::Operation *op);
  mlir::LogicalResult emitNormalization(mlir::Operation *op);
  mlir::LogicalResult emitDropout(DropoutOp op);
  mlir::LogicalResult emitReduction(mlir::Operation *op);
  mlir::LogicalResult emitDataMovement(mlir::Operation *op);
  mlir::LogicalResult emitCollective(mlir::Operation *op);
  mlir::LogicalResult unsupported(mlir::Operation *op);
  /// Kernels that run on f32 only check their operand `v` here.
  mlir::LogicalResult requireF32(mlir::Operation *op, mlir::Value v);
  mlir::FailureOr<std::string> gemmFunction(mlir::Operation *op, mlir::Value v,
                                            bool batched);
  /// What cuBLASLt's epilogue adds to `product` (a 16-bit GEMM on a GPU
  /// rank) where the fusion group `members` reading it is only adds of a
  /// bias along its columns and of a tensor of its shape; nullopt otherwise.
  struct GemmEpilogue {
    mlir::Value bias, addend;
  };
  std::optional<GemmEpilogue>
  gemmEpilogue(mlir::Operation *product,
               llvm::ArrayRef<mlir::Operation *> members);
  mlir::LogicalResult emitGemmEpilogue(mlir::Operation *root,
                                       mlir::Operation *product);
  /// The storage of `op`'s result `i`, and of its scratch buffer.
  std::string out(mlir::Operation *op, unsigned i = 0) {
    return ptr(op->getResult(i));
  }
  std::string scratch(mlir::Operation *op);
  /// The C++ name of `v`'s storage; the current part declares it.
  std::string ptr(mlir::Value v) {
    std::string name = names.lookup(v);
    used.insert(name);
    // A parameter's new value written over it is declared from the
    // parameter's own pointer.
    if (mlir::Value target = schedule.storedIn.lookup(v))
      used.insert(names.lookup(target));
    return name;
  }
  /// Records the declaration of `name` (text written by `write`).
  void declare(const std::string &name, llvm::function_ref<void()> write);
  /// Ends the current part function: its code, after the declarations of
  /// every name it uses.
  void closePart();
  /// The translation units: model.cpp, then model_K.cpp for large models.
  std::vector<EmittedSource> assembleSources(const std::string &tables);
  std::string modelTables();
  std::string elemType(mlir::Value v) {
    return cppType(typeOf(v).getElementType());
  }
  /// Byte offset expression of `op`'s block of weights-file entry `e`.
  std::string weightPointer(mlir::Operation *op, const WeightsEntry &e);
  /// Index of the communication group over `axes` (registered on first use).
  int groupOf(llvm::ArrayRef<int64_t> axes);
  /// C++ initializer of a DimSplit array for `s`.
  std::string splitArray(const TensorSharding &s);
  void emitStridedCopy(mlir::Operation *op, mlir::Value in, int64_t base,
                       llvm::ArrayRef<int64_t> strides);
  mlir::LogicalResult declareValues();
  mlir::LogicalResult emitStage(int64_t stage, int64_t stages);

  mlir::func::FuncOp fn;
  Mesh mesh;
  EmitOptions options;
  SourceKind kind;
  /// CUDA: the fused kernels' definitions, at namespace scope.
  std::string kernels;
  Schedule schedule;
  std::vector<llvm::SmallVector<int64_t>> groups;
  std::string body;
  llvm::raw_string_ostream os;
  /// Declarations by name, in declaration order, and the names the current
  /// part uses.
  llvm::StringMap<std::string> declOf;
  llvm::StringMap<int64_t> declIndex;
  llvm::StringSet<> used;
  std::vector<std::string> parts;
  EmittedModel result;
  llvm::DenseMap<mlir::Value, std::string> names;
  int64_t nextTemp = 0, nextValue = 0;
  /// Weight bytes the stage being emitted reads.
  int64_t stageWeightBytes = 0;
  /// Each stage's parts, as [first, end) into `parts`: [first, forward) its
  /// prologue, [forward, backward) a microbatch's forward, [backward, once)
  /// its backward, [once, end) the update after the last microbatch.
  struct StageParts {
    /// Part indices where each part of the step begins (weight: a
    /// zero-bubble step's W; backward up to it is B).
    int64_t first = 0, forward = 0, backward = 0, weight = 0, once = 0,
            end = 0;
    /// Where the stage's arena starts in its device's: with interleaved
    /// 1F1B a device runs several stages, whose values live across each
    /// other's runs.
    int64_t arenaOffset = 0;
  };
  std::vector<StageParts> stageParts;
  /// Devices of the pipeline (the pp axis; 1 without one): stage s runs on
  /// device s % pipelineDevices().
  int64_t pipelineDevices() const;
  /// Accumulators of the collectives over microbatches emitted so far.
  int64_t accumulators = 0;
};

} // namespace pcc::cpu

#endif // PCC_CODEGEN_CPU_CPUEMITTER_H
