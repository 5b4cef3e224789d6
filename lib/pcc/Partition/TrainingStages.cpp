//===- TrainingStages.cpp - pipeline stages of a training step ------------===//
//
// After pcc-apply-plan cuts a training step's forward ops into stages:
// - a backward op runs in the stage of the forward op whose gradient rule
//   made it (`pcc.gradient_of` = that op's `pcc.forward_id`);
// - an update op runs in the stage of the weight it updates (the stage of
//   its gradient, for a weight several stages read);
// - every other device whose stages read a tied weight stores the new value
//   too (once: stages of one device share its bytes);
// - what no weight decides (AdamW's step count and bias corrections) is
//   computed by each stage that needs it and stored once per device, by its
//   last such stage (a device updates its stages in stage order, so each
//   of them reads the count the step started with).
//
//===----------------------------------------------------------------------===//

#include "pcc/Partition/Stages.h"

#include "pcc/Autodiff/TrainStep.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <map>

using namespace mlir;

namespace pcc {

LogicalResult stageTrainingStep(func::FuncOp fn, ArrayRef<Operation *> forward,
                                int64_t stages, int64_t devices) {
  auto deviceOf = [&](int64_t stage) { return stage % devices; };
  // A parameter's stages: those of the forward ops that read it.
  llvm::DenseMap<Value, llvm::SmallSetVector<int64_t, 2>> readers;
  llvm::DenseMap<int64_t, int64_t> stageOfForward;
  for (Operation *op : forward)
    if (std::optional<int64_t> s = stageOf(op)) {
      if (auto id = op->getAttrOfType<IntegerAttr>(kForwardIdAttr))
        stageOfForward[id.getInt()] = *s;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp(); def && isa<WeightOp>(def))
          readers[v].insert(*s);
    }
  Block &block = fn.getBody().front();
  SmallVector<Operation *> unstaged;
  for (Operation &op : block.without_terminator()) {
    if (isa<WeightOp, ConstantOp>(op) || stageOf(&op))
      continue;
    if (auto at = op.getAttrOfType<IntegerAttr>(kGradientOfAttr)) {
      setStage(&op, stageOfForward.lookup(at.getInt()));
      continue;
    }
    // The update: in its parameter's stage (its gradient's, which the
    // backward pass computed there). A weight several stages read (tied
    // embeddings) is updated where its gradient was summed.
    std::optional<int64_t> stage;
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || def->hasAttr(kStepWideAttr))
        continue;
      if (auto it = readers.find(v); it != readers.end()) {
        if (it->second.size() == 1)
          stage = std::max(stage.value_or(0), it->second.back());
      } else if (std::optional<int64_t> s = stageOf(def)) {
        stage = std::max(stage.value_or(0), *s);
      }
    }
    if (stage)
      setStage(&op, *stage);
    else
      unstaged.push_back(&op);
  }
  // What no parameter decides (AdamW's step count and bias corrections):
  // each stage that needs it computes its own, instead of receiving it every
  // step. Users come first, so a copy's operands find their own copies.
  llvm::DenseMap<std::pair<Operation *, int64_t>, Operation *> copyIn;
  SmallVector<AssignOp> unstagedAssigns;
  for (Operation *op : llvm::reverse(unstaged)) {
    if (auto assign = dyn_cast<AssignOp>(op)) {
      unstagedAssigns.push_back(assign);
      continue;
    }
    std::map<int64_t, SmallVector<OpOperand *>> usesByStage;
    for (OpOperand &use : op->getUses())
      if (std::optional<int64_t> s = stageOf(use.getOwner()))
        usesByStage[*s].push_back(&use);
    if (usesByStage.empty())
      usesByStage[0];
    bool first = true;
    for (auto &[stage, uses] : usesByStage) {
      Operation *at = op;
      if (!first) {
        OpBuilder b(op);
        at = b.clone(*op);
        for (OpOperand *use : uses)
          use->set(at->getResult(cast<OpResult>(use->get()).getResultNumber()));
      }
      setStage(at, stage);
      copyIn[{op, stage}] = at;
      first = false;
    }
  }
  // Each device stores its own step count, in its last stage using it.
  for (AssignOp assign : unstagedAssigns) {
    Operation *def = assign.getValue().getDefiningOp();
    bool stored = false;
    for (int64_t s = 0; def && s < stages; ++s) {
      Operation *at = copyIn.lookup({def, s});
      bool later = false;
      for (int64_t t = s + devices; t < stages; t += devices)
        later |= copyIn.count({def, t}) > 0;
      if (!at || later)
        continue;
      Operation *store = assign;
      if (stored) {
        OpBuilder b(assign);
        b.setInsertionPointAfter(assign);
        store = b.clone(*assign);
        store->setOperand(1, at->getResult(0));
      }
      setStage(store, s);
      stored = true;
    }
    if (!stored)
      setStage(assign, def ? stageOf(def).value_or(0) : 0);
  }
  // Every other device that reads a tied weight stores the new value in its
  // own copy (sent once per step), as Megatron keeps the first and last
  // stages' embeddings equal.
  for (auto assign : llvm::to_vector(block.getOps<AssignOp>())) {
    auto it = readers.find(assign.getTarget());
    if (it == readers.end() || it->second.size() < 2)
      continue;
    OpBuilder b(assign);
    b.setInsertionPointAfter(assign);
    llvm::SmallSetVector<int64_t, 4> stored;
    if (std::optional<int64_t> own = stageOf(assign))
      stored.insert(deviceOf(*own));
    for (int64_t s : it->second)
      if (stored.insert(deviceOf(s)))
        setStage(b.clone(*assign), s);
  }
  return success();
}

} // namespace pcc
