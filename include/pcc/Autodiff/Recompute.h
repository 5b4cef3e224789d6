//===- Recompute.h - activation recompute in a training step ----*- C++ -*-===//
//
// Full activation recompute, as Megatron's --recompute-granularity full:
// of each repeated layer (the forward ops marked kLayerAttr) the step keeps
// what leaves the layer (its output, the next layer's input) and recomputes
// the rest in the backward pass, just before that layer's gradients, from
// the layer's inputs. The planner prices the same memory (one layer's
// inputs per microbatch in flight, plus one layer's activations).
// Selective recompute also keeps the results of the layer's matrix products
// (and attention) and recomputes only the ops between them (layer norms,
// activations, elementwise chains): a fraction of the arithmetic for much
// of the bytes, and no repeated collective under tensor parallelism.
// (Megatron's selective granularity recomputes the attention core; pcc's
// fused attention never keeps the S x S scores in the first place.)
//
//===----------------------------------------------------------------------===//

#ifndef PCC_AUTODIFF_RECOMPUTE_H
#define PCC_AUTODIFF_RECOMPUTE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace pcc {

/// Rewrites the training step `fn` (buildTrainingStep's) so that its
/// backward ops read recomputed copies of each marked layer's internal
/// values, and removes the marks (`selective`: products' results are
/// kept, not recomputed). Returns the number of ops cloned.
int64_t recomputeLayers(mlir::func::FuncOp fn, bool selective = false);

} // namespace pcc

#endif // PCC_AUTODIFF_RECOMPUTE_H
