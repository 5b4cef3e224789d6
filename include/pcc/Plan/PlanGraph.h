//===- PlanGraph.h - the model as the planner sees it -----------*- C++ -*-===//
//
// The planner works on the imported function's compute ops in program order
// (weights and constants are not nodes; they are what nodes read), except
// that ops computed from weights and constants alone which several ops read
// (a causal mask the exporter built inside the first layer) come first, as
// inputs of every layer. Models
// built from repeated blocks (transformer layers; an encoder's, then a
// decoder's) are recognised: nodes [begin, begin + period * count) are
// `count` copies of one block, each reading the previous copy's outputs
// where the first reads what comes before. The search then decides one
// copy per block and replicates the decision, which is what lets GPT-3-sized
// graphs plan in seconds.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_PLAN_PLANGRAPH_H
#define PCC_PLAN_PLANGRAPH_H

#include "pcc/Dialect/PCC/IR/TensorUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace pcc {

struct PlanNode {
  mlir::Operation *op = nullptr;
  /// The ONNX node name (from the op's NameLoc), or the op name.
  std::string name;
  /// For each operand: index of the producing node, or -1 when it is a
  /// function argument, weight or constant.
  llvm::SmallVector<int, 4> producers;
  /// Forward FLOPs and bytes moved, on global shapes, and the kernels that
  /// take.
  double flops = 0, bytes = 0;
  int launches = 1;
  bool viaBlas = true;
  /// Elements of the weights this node reads first (a weight shared by
  /// several nodes counts once).
  double params = 0;
  /// How many weight tensors those are (ZeRO moves each with its own
  /// collective).
  int weightTensors = 0;
  /// Float weight operands an earlier node reads first (a head tied to the
  /// embedding): operand index and that node. Their bytes count at the
  /// first reader only, but in a pipeline stage without it they are a
  /// copy (as Megatron keeps the first and last stages' embeddings).
  llvm::SmallVector<std::pair<unsigned, int>, 1> sharedWeights;
  /// Float weight operands that are not trained (--freeze: buffers such as
  /// a float causal mask): held, but no parameters.
  llvm::SmallVector<unsigned, 1> frozenWeights;
  /// Fused Q|K|V columns this node reads, makes or feeds (fusedGroups):
  /// (columns, groups), offered to the layout search as group-by-group
  /// splits of any dimension of that size.
  llvm::SmallVector<std::pair<int64_t, int64_t>, 1> fusedColumns;
  /// Float operands another node makes of weights alone (a training
  /// export's transposed nn.Linear weight): their gradient is a weight's,
  /// summed over the axes this node's work is split over and they are not.
  llvm::SmallVector<unsigned, 1> derivedWeights;
  /// Training: whether the backward pass reads this node's result (its
  /// gradient rule's, as the training step is built; markSavedResults).
  /// Only those results stay live until the backward.
  bool savedForBackward = true;
  /// Training under ZeRO-3, which gathers a parameter for each op that
  /// reads it: this node's reads in the forward pass (its trained weight
  /// operands) and its gradient ops' reads in the backward (a transposed
  /// weight made again there counts its weight; markSavedResults), with
  /// the elements the backward ones gather.
  int forwardParameterReads = 0, backwardParameterReads = 0;
  double backwardParameterElements = 0;
  /// Pointwise chains run as one fused loop (as pcc's code generator
  /// emits them, Fusion.h): a result read only by the next pointwise op is
  /// never written to memory, and that operand never read back.
  bool fusedResult = false;
  llvm::SmallVector<bool, 4> fusedOperands;
  /// GPU ranks: an add a GEMM runs in its epilogue (`epilogue`, no kernel
  /// of its own), and that GEMM (`epilogueAdds`: it writes the add's
  /// result, in its own kernel, reading the add's other operand, of
  /// `epilogueReadBytes` global bytes; its product is never written).
  bool epilogue = false, epilogueAdds = false;
  double epilogueReadBytes = 0;
  /// Per operand, the dimensions that carry the batch (split by data
  /// parallelism, so a tensor axis must not split them again).
  llvm::SmallVector<llvm::SmallVector<bool, 4>, 4> batchDims;
  /// A contraction with a weight (linear layer: the weight read directly or
  /// through ops of weights alone, as a training export's transposed
  /// nn.Linear weight) or between two activations (attention scores and
  /// context).
  bool linear = false, activationMatmul = false;
  /// Computed from weights and constants alone (a mask, a transposed
  /// weight): the compiled program runs it in the pipeline stage of its
  /// first reader (pcc-apply-plan), wherever it sits in the node order.
  bool derived = false;
  /// A training step's backward work on this node against its forward's
  /// (backwardWork, found once: the planner reads it per candidate).
  double backwardPasses = 0;
  /// Derived from constants alone (a causal mask made from a sequence
  /// length): each pipeline stage that reads it makes its own
  /// (madeOfConstants in Stages.cpp), nothing is sent.
  bool madeOfConstants = false;
  /// A view of its operand, no kernel launched, nothing moved or held: a
  /// reshape; a 2-D transpose its GEMMs read through their transpose flags
  /// (GemmOperands.h); on GPU ranks, attention's head transposes.
  bool view = false;
  /// For an attention, the share of score pairs its kernels compute
  /// (visibleScoreFraction), found once: the mask analysis reads constants.
  double visibleScores = 1;
  /// A Gemm whose bias (C) GPU ranks add in the GEMM's epilogue rather
  /// than copying it into the result first.
  bool epilogueBias = false;
};

/// Nodes [begin, begin + period * count) are `count` copies of one block:
/// layers firstLayer .. firstLayer + count - 1 of the model.
struct RepeatedBlock {
  int begin = 0, period = 0, count = 0, firstLayer = 0;
  int end() const { return begin + period * count; }
  bool contains(int i) const { return i >= begin && i < end(); }
};

struct PlanGraph {
  mlir::func::FuncOp fn;
  std::vector<PlanNode> nodes;
  /// The repeated blocks, in node order, disjoint; each has 2 copies or
  /// more. Layers are numbered across them.
  std::vector<RepeatedBlock> blocks;
  /// Per node, whether selective recompute runs it again
  /// (recomputedNodes(graph, true)); empty when built by hand.
  std::vector<bool> selectiveAgain;
  /// The model's results that nodes compute: (node, result number).
  std::vector<std::pair<int, int>> outputs;
  /// Element type of the model's float tensors ("fp32", "bf16", "fp16")
  /// and its size in bytes.
  std::string dtype = "fp32";
  int64_t elementBytes = 4;
  double totalFlops = 0, totalParams = 0;
  /// Sums over the batch (a reduction whose reduced axes data parallelism
  /// splits): each is one all-reduce of its result over the data-parallel
  /// replicas, and `coupled` ones (batch norm's statistics, which the
  /// batch's own elements are then normalized by) one more in the
  /// backward pass (their gradients are sums over the batch too). A
  /// coupled sum ties the samples of a batch together: it forbids
  /// microbatches. The loss's sums (to one number) are not coupled.
  struct BatchSum {
    int node;
    double bytes;
    bool coupled;
  };
  std::vector<BatchSum> batchSums;
  bool couplesBatch() const {
    return llvm::any_of(batchSums, [](const BatchSum &s) { return s.coupled; });
  }
  /// A vocabulary pcc-pad-vocabulary padded: its rows, the padded rows
  /// (what the graph holds and the plan prices) and the multiple padded to
  /// (all 0 when not padded).
  struct Vocabulary {
    int64_t rows = 0, padded = 0, multiple = 0;
  } vocabulary;
  /// Leading dimension of the first input (what data parallelism splits).
  int64_t batch = 1;
  /// Second dimension of the first input when it has rank >= 2 (tokens of
  /// a sequence model; what sequence parallelism splits).
  int64_t sequence = 1;

  /// The block that holds node `i`, or null.
  const RepeatedBlock *blockOf(int i) const;
  /// The layer (block copy, numbered across blocks) node `i` is in, or -1.
  int layerOf(int i) const;
  /// Layers in all blocks.
  int layers() const;
  /// Node `i`'s block copy and offset mapped to its block's first copy;
  /// nodes outside blocks map to themselves.
  int representative(int i) const;
  /// Bytes of node `p`'s result `r` one device holds when it runs a share
  /// `scale` of the batch (resultShare).
  double resultBytes(int p, int r, double scale) const;
};

/// The share of `node`'s results one device holds when it runs a share
/// `scale` of the batch: what weights and constants alone make (a
/// transposed weight, a mask) does not shrink with it.
inline double resultShare(const PlanNode &node, double scale) {
  return node.derived ? 1.0 : scale;
}

/// ZeRO-3's gathers of `node`'s parameters in the backward pass: its
/// gradient rules' reads and, when full recompute runs it again
/// (`recomputed`), its forward reads once more (a transposed weight is
/// made once for the backward: TrainingPropagation.cpp).
inline int backwardGathers(const PlanNode &node, bool recomputed) {
  return node.backwardParameterReads +
         (recomputed && !node.derived ? node.forwardParameterReads : 0);
}

/// Full recompute runs each repeated layer's forward again in its
/// backward, from the layer's input up to the values that backward reads:
/// per node, whether it runs again (none outside repeated layers). With
/// `selective`, the layer's contractions are kept (Recompute.cpp): only
/// the ops between them and the values backward reads run again.
std::vector<bool> recomputedNodes(const PlanGraph &graph,
                                  bool selective = false);

/// `gpuKernels`: price what GPU ranks compile a 16-bit program to as well
/// (gpuFusions in PlanGraph.cpp): GEMM epilogues, attention reading the
/// heads of split projections in place.
/// `frozen`: initializers that are not trained (PlanNode::frozenWeights).
PlanGraph buildPlanGraph(mlir::func::FuncOp fn, bool gpuKernels = false,
                         llvm::ArrayRef<std::string> frozen = {});

/// A training step's backward work on `node` against its forward's. A matrix
/// product's two gradient products double its FLOPs; an attention's
/// gradient rule runs five products where its forward ran two (scores made
/// again, then dV, dP, dQ, dK), as FlashAttention's backward does. Any
/// other op's gradient reads its output's gradient and a saved operand or
/// result and writes its operand's gradient: three tensors where the
/// forward moved two. Ops of weights and constants alone carry none.
double backwardWork(const PlanNode &node);

/// The weight of `node`'s forward compute in a step: `forwardPasses` (2
/// under full recompute) and, training, its backward (backwardWork).
inline double stepWork(const PlanNode &node, double forwardPasses, bool train) {
  return forwardPasses + (train ? node.backwardPasses : 0.0);
}

/// Marks the ops of each copy of `fn`'s repeated blocks with kLayerAttr (the
/// layer's number), the layers activation recompute checkpoints, and
/// returns how many there are (0 when the model repeats no block).
int markRepeatedLayers(mlir::func::FuncOp fn);

/// Forward FLOPs and bytes of `op` when its operands and results have the
/// given shapes (global or per device). Everything but weights is scaled by
/// `activationScale`, the fraction of the batch the shapes stand for.
struct OpWork {
  double flops = 0, bytes = 0;
  /// For a matrix product, its smallest dimension (M, N or K of one GEMM);
  /// 0 otherwise. Thin GEMMs run below peak (ClusterSpec::gemmShape).
  double gemmMinDim = 0;
  /// Kernels the back ends launch for the op (a GEMM with a broadcast bias
  /// copies the bias into its output first).
  int launches = 1;
  /// Whether the op's arithmetic runs in BLAS GEMMs (pcc's attention
  /// kernels do not; see CostModel::kernelTime).
  bool viaBlas = true;
};
/// With `fusion`, bytes that stay in registers inside a fused chain are not
/// counted.
OpWork opWork(mlir::Operation *op,
              llvm::ArrayRef<llvm::SmallVector<int64_t>> operandShapes,
              llvm::ArrayRef<llvm::SmallVector<int64_t>> resultShapes,
              double activationScale = 1, const PlanNode *fusion = nullptr);

} // namespace pcc

#endif // PCC_PLAN_PLANGRAPH_H
