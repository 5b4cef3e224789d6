//===- ParallelPlan.cpp - the one plan object -----------------------------===//

#include "pcc/Sharding/ParallelPlan.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;

namespace pcc {

namespace {

/// Each plan enum's values with their names, in one place: the name and
/// parse functions below read them (the first entry names a value out of
/// range).
template <typename E> using NameTable = std::pair<E, StringLiteral>;

constexpr NameTable<TensorMode> kTensorModes[] = {
    {TensorMode::OneD, "1d"},
    {TensorMode::TwoD, "2d"},
    {TensorMode::TwoPointFiveD, "2.5d"},
    {TensorMode::ThreeD, "3d"}};
constexpr NameTable<SequenceMode> kSequenceModes[] = {
    {SequenceMode::Ulysses, "ulysses"}, {SequenceMode::Ring, "ring"}};
constexpr NameTable<TensorLayouts> kTensorLayouts[] = {
    {TensorLayouts::Megatron, "megatron"},
    {TensorLayouts::Planned, "planned"},
    {TensorLayouts::MegatronSequence, "megatron-sp"}};
constexpr NameTable<Recompute> kRecomputes[] = {
    {Recompute::None, "none"},
    {Recompute::Full, "full"},
    {Recompute::Selective, "selective"}};

template <typename E, size_t N>
StringRef nameIn(const NameTable<E> (&table)[N], E value) {
  for (const auto &[v, name] : table)
    if (v == value)
      return name;
  return table[0].second;
}

template <typename E, size_t N>
std::optional<E> parseIn(const NameTable<E> (&table)[N], StringRef name) {
  for (const auto &[v, n] : table)
    if (n == name)
      return v;
  return std::nullopt;
}

} // namespace

StringRef tensorModeName(TensorMode mode) { return nameIn(kTensorModes, mode); }
std::optional<TensorMode> parseTensorMode(StringRef name) {
  return parseIn(kTensorModes, name);
}
StringRef sequenceModeName(SequenceMode mode) {
  return nameIn(kSequenceModes, mode);
}
std::optional<SequenceMode> parseSequenceMode(StringRef name) {
  return parseIn(kSequenceModes, name);
}
StringRef tensorLayoutsName(TensorLayouts layouts) {
  return nameIn(kTensorLayouts, layouts);
}
std::optional<TensorLayouts> parseTensorLayouts(StringRef name) {
  return parseIn(kTensorLayouts, name);
}
StringRef recomputeName(Recompute r) { return nameIn(kRecomputes, r); }
std::optional<Recompute> parseRecompute(StringRef name) {
  return parseIn(kRecomputes, name);
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
  if (plan.microbatches <= 1)
    return mesh;
  // Microbatches run one after another, a pipeline's stages overlapping
  // them; without stages a training step accumulates its gradients over
  // them, holding one microbatch's activations at a time, as planned.
  int64_t pp = mesh.axisNamed("pp");
  int64_t at = pp < 0 ? 0 : pp + 1;
  mesh.shape.insert(mesh.shape.begin() + at, plan.microbatches);
  mesh.axisNames.insert(mesh.axisNames.begin() + at, kMicrobatchAxis.str());
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
    if (name == "pp" && zeroBubble)
      s += " (ZB-H1)";
  }
  return s.empty() ? "1 device" : s;
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
      plan.train, recomputeName(plan.recompute), plan.zero, plan.virtualStages,
      plan.zeroBubble);
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
  plan.zeroBubble = attr.getZeroBubble();
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
