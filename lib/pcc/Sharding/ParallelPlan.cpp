//===- ParallelPlan.cpp - the one plan object -----------------------------===//

#include "pcc/Sharding/ParallelPlan.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;

namespace pcc {

StringRef tensorModeName(TensorMode mode) {
  switch (mode) {
  case TensorMode::OneD:
    return "1d";
  case TensorMode::TwoD:
    return "2d";
  case TensorMode::TwoPointFiveD:
    return "2.5d";
  case TensorMode::ThreeD:
    return "3d";
  }
  return "?";
}

std::optional<TensorMode> parseTensorMode(StringRef name) {
  for (TensorMode m : {TensorMode::OneD, TensorMode::TwoD,
                       TensorMode::TwoPointFiveD, TensorMode::ThreeD})
    if (tensorModeName(m) == name)
      return m;
  return std::nullopt;
}

StringRef sequenceModeName(SequenceMode mode) {
  return mode == SequenceMode::Ring ? "ring" : "ulysses";
}

std::optional<SequenceMode> parseSequenceMode(StringRef name) {
  for (SequenceMode m : {SequenceMode::Ulysses, SequenceMode::Ring})
    if (sequenceModeName(m) == name)
      return m;
  return std::nullopt;
}

ParallelPlan ParallelPlan::withDegrees(int64_t pp, int64_t dp, int64_t sp,
                                       int64_t tp) {
  ParallelPlan plan;
  plan.mesh = meshForDegrees({{"pp", pp}, {"dp", dp}, {"sp", sp}, {"tp", tp}});
  return plan;
}

/// Replaces the tp axis of `mesh` by the plan's tensor grid.
void expandTensorGrid(const ParallelPlan &plan, Mesh &mesh) {
  int64_t tp = mesh.axisNamed("tp");
  if (tp < 0 || plan.tensorMode == TensorMode::OneD)
    return;
  int64_t n = mesh.shape[tp], depth = std::max<int64_t>(plan.tensorDepth, 1);
  SmallVector<std::pair<StringRef, int64_t>, 3> grid;
  auto root = [](int64_t v, int k) {
    int64_t r = std::llround(std::pow(double(v), 1.0 / k));
    return r;
  };
  switch (plan.tensorMode) {
  case TensorMode::OneD:
    return;
  case TensorMode::TwoD:
    grid = {{"tp_row", root(n, 2)}, {"tp_col", root(n, 2)}};
    break;
  case TensorMode::TwoPointFiveD:
    grid = {{"tp_dep", depth},
            {"tp_row", root(n / depth, 2)},
            {"tp_col", root(n / depth, 2)}};
    break;
  case TensorMode::ThreeD:
    grid = {{"tp_x", root(n, 3)}, {"tp_y", root(n, 3)}, {"tp_z", root(n, 3)}};
    break;
  }
  mesh.shape.erase(mesh.shape.begin() + tp);
  mesh.axisNames.erase(mesh.axisNames.begin() + tp);
  for (auto [i, axis] : llvm::enumerate(grid)) {
    mesh.shape.insert(mesh.shape.begin() + tp + i, axis.second);
    mesh.axisNames.insert(mesh.axisNames.begin() + tp + i, axis.first.str());
  }
}

Mesh programMesh(const ParallelPlan &plan) {
  Mesh mesh = plan.mesh;
  expandTensorGrid(plan, mesh);
  int64_t pp = mesh.axisNamed("pp");
  if (pp < 0 || mesh.shape[pp] == 1 || plan.microbatches <= 1)
    return mesh;
  mesh.shape.insert(mesh.shape.begin() + pp + 1, plan.microbatches);
  mesh.axisNames.insert(mesh.axisNames.begin() + pp + 1,
                        kMicrobatchAxis.str());
  return mesh;
}

int64_t ParallelPlan::degree(StringRef role) const {
  int64_t axis = mesh.axisNamed(role);
  return axis < 0 ? 1 : mesh.shape[axis];
}

std::string ParallelPlan::describe() const {
  std::string s;
  for (auto [name, size] : llvm::zip(mesh.axisNames, mesh.shape)) {
    if (size <= 1)
      continue;
    s += (s.empty() ? "" : " x ") + llvm::formatv("{0} {1}", name, size).str();
    if (name == "sp")
      s += " (" + sequenceModeName(sequenceMode).str() + ")";
    if (name == "pp" && virtualStages > 1)
      s += llvm::formatv(" (interleaved 1F1B, {0} chunks per device)",
                         virtualStages)
               .str();
  }
  return s.empty() ? "1 device" : s;
}

StringRef recomputeName(Recompute r) {
  switch (r) {
  case Recompute::None:
    return "none";
  case Recompute::Full:
    return "full";
  case Recompute::Selective:
    return "selective";
  }
  return "none";
}

std::optional<Recompute> parseRecompute(StringRef name) {
  for (Recompute r : {Recompute::None, Recompute::Full, Recompute::Selective})
    if (recomputeName(r) == name)
      return r;
  return std::nullopt;
}

StringRef tensorLayoutsName(TensorLayouts layouts) {
  switch (layouts) {
  case TensorLayouts::Megatron:
    return "megatron";
  case TensorLayouts::Planned:
    return "planned";
  case TensorLayouts::MegatronSequence:
    return "megatron-sp";
  }
  return "megatron";
}

std::optional<TensorLayouts> parseTensorLayouts(StringRef name) {
  for (TensorLayouts l : {TensorLayouts::Megatron, TensorLayouts::Planned,
                          TensorLayouts::MegatronSequence})
    if (tensorLayoutsName(l) == name)
      return l;
  return std::nullopt;
}

PlanAttr toAttr(MLIRContext *ctx, const ParallelPlan &plan) {
  Builder b(ctx);
  SmallVector<Attribute> axes;
  for (const std::string &name : plan.mesh.axisNames)
    axes.push_back(b.getStringAttr(name));
  return PlanAttr::get(
      ctx, b.getArrayAttr(axes), b.getDenseI64ArrayAttr(plan.mesh.shape),
      tensorModeName(plan.tensorMode), tensorLayoutsName(plan.tensorLayouts),
      sequenceModeName(plan.sequenceMode), plan.tensorDepth, plan.microbatches,
      plan.train, recomputeName(plan.recompute), plan.zero, plan.virtualStages);
}

ParallelPlan fromAttr(PlanAttr attr) {
  ParallelPlan plan;
  for (Attribute a : attr.getAxes())
    plan.mesh.axisNames.push_back(cast<StringAttr>(a).getValue().str());
  plan.mesh.shape.assign(attr.getSizes().asArrayRef().begin(),
                         attr.getSizes().asArrayRef().end());
  // The verifier admits only known names.
  plan.tensorMode =
      parseTensorMode(attr.getTensorMode()).value_or(TensorMode::OneD);
  plan.tensorLayouts = parseTensorLayouts(attr.getTensorLayout())
                           .value_or(TensorLayouts::Megatron);
  plan.sequenceMode = parseSequenceMode(attr.getSequenceMode())
                          .value_or(SequenceMode::Ulysses);
  plan.tensorDepth = attr.getTensorDepth();
  plan.microbatches = attr.getMicrobatches();
  plan.train = attr.getTrain();
  plan.recompute =
      parseRecompute(attr.getRecompute()).value_or(Recompute::None);
  plan.zero = attr.getZero();
  plan.virtualStages = attr.getVirtualStages();
  return plan;
}

std::optional<ParallelPlan> readPlan(ModuleOp module) {
  auto attr = module->getAttrOfType<PlanAttr>(kPlanAttr);
  if (!attr)
    return std::nullopt;
  return fromAttr(attr);
}

void writePlan(ModuleOp module, const ParallelPlan &plan) {
  module->setAttr(kPlanAttr, toAttr(module.getContext(), plan));
}

} // namespace pcc
