//===- Recompute.cpp - activation recompute in a training step ------------===//
//
// A layer's values split in two: those a forward op outside the layer reads
// (its output: the checkpoint, kept) and the internal ones. Backward ops
// that read internal values read clones instead, made just before the
// first of them from the layer's inputs and checkpoints, so the originals
// die within the forward pass. Clones run in the backward pass: they carry
// kGradientOfAttr (a pipeline runs them in the layer's stage, per
// microbatch, after its forward) and keep the forward ops' layouts.
//
//===----------------------------------------------------------------------===//

#include "pcc/Autodiff/Recompute.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace pcc {

int64_t recomputeLayers(func::FuncOp fn, bool selective) {
  Block &body = fn.getBody().front();
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t firstBackward = -1;
  llvm::MapVector<int64_t, SmallVector<Operation *>> layers;
  for (Operation &op : body) {
    int64_t at = position.size();
    position[&op] = at;
    if (firstBackward < 0 && op.hasAttr(kGradientOfAttr))
      firstBackward = at;
    if (auto layer = op.getAttrOfType<IntegerAttr>(kLayerAttr)) {
      layers[layer.getInt()].push_back(&op);
      op.removeAttr(kLayerAttr);
    }
  }
  if (firstBackward < 0)
    return 0;
  auto isBackward = [&](Operation *op) {
    return position.lookup(op) >= firstBackward;
  };

  int64_t cloned = 0;
  for (auto &[layer, ops] : layers) {
    llvm::DenseSet<Operation *> inLayer(ops.begin(), ops.end());
    // Internal values some backward op reads, and the first such reader
    // (a later layer's backward reads this one's output, not its insides).
    // Kept: what escapes the layer and, selective, its products' results.
    llvm::DenseSet<Value> escaping, wanted;
    for (Operation *op : ops)
      for (Value r : op->getResults()) {
        if (selective && isa<ContractionOpInterface>(op))
          escaping.insert(r);
        for (Operation *user : r.getUsers()) {
          if (isBackward(user))
            wanted.insert(r);
          else if (!inLayer.contains(user))
            escaping.insert(r);
        }
      }
    for (Value v : escaping)
      wanted.erase(v);
    if (wanted.empty())
      continue;
    Operation *first = nullptr;
    for (Value v : wanted)
      for (Operation *user : v.getUsers())
        if (isBackward(user) && (!first || position[user] < position[first]))
          first = user;
    // The ops the wanted values need, back to inputs and checkpoints.
    llvm::DenseSet<Operation *> needed;
    for (Operation *op : llvm::reverse(ops)) {
      bool want = llvm::any_of(op->getResults(), [&](Value r) {
        return wanted.contains(r) ||
               llvm::any_of(r.getUsers(), [&](Operation *u) {
                 return needed.contains(u) && !escaping.contains(r);
               });
      });
      if (want)
        needed.insert(op);
    }
    // Recompute the whole dependency chain except what is kept anyway.
    OpBuilder b(first);
    IRMapping map;
    Attribute stage = first->getAttr(kGradientOfAttr);
    for (Operation *op : ops) {
      if (!needed.contains(op))
        continue;
      Operation *copy = b.clone(*op, map);
      if (Attribute id = copy->removeAttr(kForwardIdAttr))
        copy->setAttr(kRecomputeOfAttr, id);
      if (stage)
        copy->setAttr(kGradientOfAttr, stage);
      // A kept value the clone made is the original's: keep reading the
      // original (it is live anyway), so only internal values repeat.
      for (Value r : op->getResults())
        if (escaping.contains(r))
          map.map(r, r);
      ++cloned;
    }
    for (Operation *op : ops)
      for (Value r : op->getResults()) {
        if (!wanted.contains(r))
          continue;
        // Clones are not in `position`: they keep what they were built on.
        r.replaceUsesWithIf(map.lookup(r), [&](OpOperand &use) {
          return position.count(use.getOwner()) && isBackward(use.getOwner());
        });
      }
  }
  return cloned;
}

} // namespace pcc
