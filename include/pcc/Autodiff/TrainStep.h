//===- TrainStep.h - a model's training step as one function -----*- C++ -*-===//
//
// Turns a model's @main into one training step: the forward pass, the loss,
// the backward pass (each op's GradientOpInterface rule) and the optimizer
// update, ending in a pcc.assign per trained parameter and optimizer state.
// The step then plans, partitions and generates code like any other
// program: gradient all-reduces are the partitioner's reshards of a partial
// sum into the layout the weight is stored in.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_AUTODIFF_TRAINSTEP_H
#define PCC_AUTODIFF_TRAINSTEP_H

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace pcc {

enum class Optimizer { Sgd, AdamW };
enum class LossKind { ModelOutput, Mse, CrossEntropy };

/// PyTorch's definitions and defaults (torch.optim.SGD, torch.optim.AdamW).
enum class LossScaling { Auto, None, Dynamic };

struct TrainOptions {
  Optimizer optimizer = Optimizer::Sgd;
  /// The model's own scalar output 0, or this loss of output 0 against an
  /// extra input (the target) appended to the step's inputs.
  LossKind loss = LossKind::ModelOutput;
  double lr = 1e-3;
  double momentum = 0;
  /// SGD: 0; AdamW: 0.01 when unset.
  std::optional<double> weightDecay;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  /// Initializers that are not trained.
  std::vector<std::string> freeze;
  /// Recompute the layers marked kLayerAttr in the backward pass
  /// (recomputeLayers) instead of keeping their activations; selective:
  /// keep their products' results, recompute the ops between them.
  bool recompute = false, selective = false;
  /// Dynamic loss scaling (torch.cuda.amp.GradScaler's): the backward
  /// starts from the loss times a scale, first 2^lossScaleLog2; a step
  /// whose gradients are not all finite updates nothing and halves the
  /// scale, and every lossScaleWindow finite steps in a row double it.
  /// Auto: on when a trained weight is fp16. Unset: GradScaler's 2^16 for
  /// an f32 loss, 2^15 for a 16-bit one (fp16 holds at most 65504).
  LossScaling lossScaling = LossScaling::Auto;
  std::optional<int64_t> lossScaleLog2;
  int64_t lossScaleWindow = 2000;
};

/// What the step trains, for the compile summary.
struct TrainStepReport {
  int64_t parameters = 0, parameterElements = 0, stateElements = 0;
  /// Forward ops recomputed in the backward pass (--recompute).
  int64_t recomputedOps = 0;
};

/// With a loss --loss adds (options.loss other than ModelOutput): rewrites
/// @main to return that loss of its output 0, taking the target as a last
/// argument, so that planning sees what the step computes; the step is
/// then built with LossKind::ModelOutput. Fails with a diagnostic.
mlir::LogicalResult addTrainingLoss(mlir::ModuleOp module,
                                    const TrainOptions &options);

/// Rewrites @main of `module` into its training step, returning the loss.
/// Fails with a diagnostic at the op or argument at fault.
mlir::LogicalResult buildTrainingStep(mlir::ModuleOp module,
                                      const TrainOptions &options,
                                      TrainStepReport *report = nullptr);

/// The module attribute a training step carries (the runtime trains).
inline constexpr const char *kTrainStepAttr = "pcc.train_step";

/// On an op of the update whose value every pipeline stage's update reads
/// (the loss scaler's "all gradients are finite"): it does not decide the
/// stage of an update that reads it; it is sent there.
inline constexpr const char *kStepWideAttr = "pcc.step_wide";

} // namespace pcc

#endif // PCC_AUTODIFF_TRAINSTEP_H
