//===- ControlFlowImport.cpp - If and Loop, resolved at compile time ------===//
//
// pcc's programs are straight-line: a rank's step is one fixed sequence of
// kernels and collectives. An If whose condition folds (a shape test in a
// scripted module, a constant flag) is replaced by the branch it takes; a
// Loop whose trip count and condition fold is unrolled, each iteration's
// body imported again under the same names. Scan outputs are stacked along
// a new first axis. A condition known only at run time is refused with the
// node's name.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "ImportContext.h"

#include "pcc/Dialect/PCC/IR/PCCOps.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace pcc::import {

namespace {

/// The single integer (or boolean) `v` holds, if it is a constant of one
/// element.
std::optional<int64_t> foldedScalar(Value v) {
  DenseElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || attr.getNumElements() != 1 ||
      !attr.getElementType().isIntOrIndex())
    return std::nullopt;
  return (*attr.getValues<APInt>().begin()).getSExtValue();
}

/// Why `v` is not what foldedScalar reads.
std::string whyNotScalar(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return "must be a compile-time constant";
  if (attr.getNumElements() != 1)
    return "holds " + std::to_string(attr.getNumElements()) +
           " elements, not one";
  return "is not a boolean or an integer";
}

/// The rank a body input is declared with (scalars may be declared [1]).
SmallVector<int64_t> declaredScalarShape(const onnx::ValueInfoProto &info) {
  if (info.type().has_tensor_type() && info.type().tensor_type().has_shape() &&
      info.type().tensor_type().shape().dim_size() == 1)
    return {1};
  return {};
}

} // namespace

FailureOr<SmallVector<Value>>
GraphImporter::importBody(const onnx::GraphProto &body, ArrayRef<Value> args,
                          Location loc) {
  if (body.input_size() != static_cast<int>(args.size()))
    return emitError(loc) << "subgraph '" << body.name() << "' takes "
                          << body.input_size() << " inputs, given "
                          << args.size();
  // Nested loops multiply: the budget counts every body node imported.
  unrolledNodes += body.node_size();
  if (unrolledNodes > kMaxUnrolledNodes)
    return emitError(loc) << "If and Loop bodies unroll to more than "
                          << kMaxUnrolledNodes << " nodes";
  // Sorted and its names listed once: an unrolled loop imports its body
  // once per iteration.
  auto [cached, fresh] = bodies.try_emplace(&body);
  Body &info = cached->second;
  if (fresh) {
    if (!sortNodes(body, info.order, diagFn(), /*nested=*/true)) {
      bodies.erase(cached);
      return failure();
    }
    for (const auto &in : body.input())
      info.names.push_back(in.name());
    for (const auto &init : body.initializer())
      info.names.push_back(init.name());
    for (const auto &node : body.node())
      for (const auto &out : node.output())
        if (!out.empty())
          info.names.push_back(out);
  }
  const std::vector<int> &order = info.order;
  // The body's names, and what they meant around it, restored on return.
  const std::vector<std::string> &names = info.names;
  struct Saved {
    std::optional<Value> value;
    std::optional<std::string> unavailable;
    const onnx::TensorProto *initializer = nullptr;
  };
  std::unordered_map<std::string, Saved> saved;
  for (const std::string &name : names) {
    if (saved.count(name))
      continue;
    Saved &s = saved[name];
    if (auto it = values.find(name); it != values.end())
      s.value = it->second;
    if (auto it = unavailable.find(name); it != unavailable.end())
      s.unavailable = it->second;
    if (auto it = initializers.find(name); it != initializers.end())
      s.initializer = it->second;
    values.erase(name);
    unavailable.erase(name);
    initializers.erase(name);
  }
  auto restore = [&] {
    for (auto &[name, s] : saved) {
      values.erase(name);
      unavailable.erase(name);
      initializers.erase(name);
      if (s.value)
        values[name] = *s.value;
      if (s.unavailable)
        unavailable[name] = *s.unavailable;
      if (s.initializer)
        initializers[name] = s.initializer;
    }
  };

  for (auto [in, arg] : llvm::zip(body.input(), args))
    values[in.name()] = arg;
  for (const auto &init : body.initializer())
    initializers[init.name()] = &init;
  SmallVector<Value> results;
  bool ok = true;
  for (int index : order)
    if (failed(importNode(body.node(index), index))) {
      ok = false;
      break;
    }
  for (int i = 0; ok && i < body.output_size(); ++i) {
    auto v = lookup(body.output(i).name(), loc);
    ok = succeeded(v);
    if (ok)
      results.push_back(*v);
  }
  restore();
  if (!ok)
    return failure();
  return results;
}

LogicalResult GraphImporter::importIf(const onnx::NodeProto &node,
                                      Location loc) {
  const onnx::GraphProto *thenBranch = nullptr, *elseBranch = nullptr;
  for (const auto &a : node.attribute()) {
    if (a.name() == "then_branch" && a.has_g())
      thenBranch = &a.g();
    if (a.name() == "else_branch" && a.has_g())
      elseBranch = &a.g();
  }
  if (!thenBranch || !elseBranch || node.input_size() != 1 ||
      node.input(0).empty())
    return emitError(loc) << "If needs a condition and both branches";
  auto cond = lookup(node.input(0), loc);
  if (failed(cond))
    return failure();
  std::optional<int64_t> taken = foldedScalar(*cond);
  if (!taken)
    return emitError(loc) << "If condition '" << node.input(0) << "' "
                          << whyNotScalar(*cond)
                          << " (pcc imports the branch it names)";
  const onnx::GraphProto &branch = *taken ? *thenBranch : *elseBranch;
  auto results = importBody(branch, {}, loc);
  if (failed(results))
    return failure();
  if (static_cast<int>(results->size()) < node.output_size())
    return emitError(loc) << "If branch '" << branch.name() << "' has "
                          << results->size() << " outputs, the node "
                          << node.output_size();
  for (int i = 0; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      values[node.output(i)] = (*results)[i];
  return success();
}

LogicalResult GraphImporter::importLoop(const onnx::NodeProto &node,
                                        Location loc) {
  const onnx::GraphProto *body = nullptr;
  for (const auto &a : node.attribute())
    if (a.name() == "body" && a.has_g())
      body = &a.g();
  if (!body || node.input_size() < 2)
    return emitError(loc) << "Loop needs a body, a trip count and a condition "
                             "input (either may be empty)";
  int carried = node.input_size() - 2;
  int scans = body->output_size() - 1 - carried;
  if (body->input_size() != carried + 2 || scans < 0 ||
      node.output_size() > carried + scans)
    return emitError(loc) << "Loop body '" << body->name() << "' takes "
                          << body->input_size() << " inputs and makes "
                          << body->output_size() << " outputs, which do not "
                          << "match the node's " << node.input_size()
                          << " inputs";

  auto looked = lookupInputs(node, loc);
  if (failed(looked))
    return failure();
  SmallVector<Value> &inputs = *looked;
  std::optional<int64_t> tripCount;
  if (inputs[0]) {
    tripCount = foldedScalar(inputs[0]);
    if (!tripCount)
      return emitError(loc)
             << "Loop trip count '" << node.input(0) << "' "
             << whyNotScalar(inputs[0]) << " (pcc unrolls the loop)";
  }
  std::optional<int64_t> cond = 1;
  if (inputs[1] && !(cond = foldedScalar(inputs[1])))
    return emitError(loc) << "Loop condition '" << node.input(1) << "' "
                          << whyNotScalar(inputs[1])
                          << " (pcc unrolls the loop)";
  if (!tripCount && !inputs[1])
    return emitError(loc) << "Loop has neither a trip count nor a condition: "
                             "it never ends";
  int64_t nodesPerIteration = std::max(body->node_size(), 1);
  int64_t limit = kMaxUnrolledNodes / nodesPerIteration;
  if (tripCount && *tripCount > limit)
    return emitError(loc) << "Loop runs " << *tripCount << " iterations of "
                          << body->node_size() << " nodes; pcc unrolls loops "
                          << "at import, up to " << kMaxUnrolledNodes
                          << " nodes";

  NodeContext c(node, builder, loc, inputs, opset);
  c.training = training;
  c.seed = seed;
  auto boolType = RankedTensorType::get(declaredScalarShape(body->input(1)),
                                        builder.getI1Type());
  auto iterType = RankedTensorType::get(declaredScalarShape(body->input(0)),
                                        builder.getI64Type());
  SmallVector<Value> state(inputs.begin() + 2, inputs.end());
  SmallVector<SmallVector<Value>> scanned(scans);
  for (int64_t i = 0; (!tripCount || i < *tripCount) && *cond; ++i) {
    if (i >= limit)
      return emitError(loc) << "Loop runs more than " << limit
                            << " iterations of " << body->node_size()
                            << " nodes; pcc unrolls loops at import, up to "
                            << kMaxUnrolledNodes << " nodes";
    SmallVector<Value> args = {
        c.constant(DenseElementsAttr::get(iterType, APInt(64, i))),
        c.constant(DenseElementsAttr::get(boolType, true))};
    args.append(state);
    auto results = importBody(*body, args, loc);
    if (failed(results))
      return failure();
    state.assign(results->begin() + 1, results->begin() + 1 + carried);
    for (int s = 0; s < scans; ++s)
      scanned[s].push_back((*results)[1 + carried + s]);
    bool last = tripCount && i + 1 == *tripCount;
    if (!last && !(cond = foldedScalar((*results)[0])))
      return emitError(loc)
             << "Loop condition '" << body->output(0).name() << "' "
             << whyNotScalar((*results)[0]) << " after iteration " << i
             << " (pcc unrolls the loop)";
  }

  for (int i = 0; i < node.output_size(); ++i) {
    const std::string &out = node.output(i);
    if (out.empty())
      continue;
    if (i < carried) {
      values[out] = state[i];
      continue;
    }
    // Scan outputs: each iteration's value under a new first axis.
    ArrayRef<Value> parts = scanned[i - carried];
    if (parts.empty())
      return emitError(loc) << "Loop scan output '" << out
                            << "' of zero iterations has no shape pcc knows";
    SmallVector<Value> stacked;
    for (Value v : parts) {
      SmallVector<int64_t> shape = {1};
      llvm::append_range(shape, cast<RankedTensorType>(v.getType()).getShape());
      auto r = c.build1<ReshapeOp>({v}, {c.i64s("shape", shape)});
      if (failed(r))
        return failure();
      stacked.push_back(*r);
    }
    auto joined = c.build1<ConcatOp>(stacked, {c.i64("axis", 0)});
    if (failed(joined))
      return failure();
    values[out] = *joined;
  }
  return success();
}

} // namespace pcc::import
