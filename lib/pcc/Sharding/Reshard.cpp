//===- Reshard.cpp - the collectives that turn one layout into another ----===//

#include "pcc/Sharding/Reshard.h"

using namespace llvm;

namespace pcc {

StringRef reshardKindName(ReshardKind kind) {
  switch (kind) {
  case ReshardKind::AllReduce:
    return "all_reduce";
  case ReshardKind::ReduceScatter:
    return "reduce_scatter";
  case ReshardKind::AllGather:
    return "all_gather";
  case ReshardKind::AllSlice:
    return "all_slice";
  case ReshardKind::AllToAll:
    return "all_to_all";
  }
  return "?";
}

namespace {

/// A reduce-scatter of summed axes onto dimension `dim`, which `to` splits
/// by the axes already there plus `axes` (minor).
struct Scatter {
  int64_t dim;
  SmallVector<int64_t, 2> axes;
};

/// The dimensions summed axes scatter onto: greedily, the one that
/// scatters the most of those still unclaimed first. A dimension takes
/// them when they split it whole, or already split in `cur` as its minor
/// axes (each device's block is scattered further; a split with groups, a
/// fused QKV weight's, within each group).
SmallVector<Scatter, 2> scatterTargets(const TensorSharding &cur,
                                       const TensorSharding &to,
                                       ArrayRef<int64_t> sum) {
  SmallVector<Scatter, 2> out;
  SmallVector<int64_t, 2> claimed;
  while (true) {
    Scatter best{-1, {}};
    for (auto [d, f, t] : enumerate(cur.dims, to.dims)) {
      size_t kept = f.isSplit() ? f.axes.size() : 0;
      if (!t.isSplit() || t.axes.size() <= kept + best.axes.size() ||
          any_of(out, [&](const Scatter &s) { return s.dim == int64_t(d); }) ||
          (kept && (f.groups != t.groups ||
                    ArrayRef<int64_t>(t.axes).take_front(kept) !=
                        ArrayRef<int64_t>(f.axes))))
        continue;
      ArrayRef<int64_t> added = ArrayRef<int64_t>(t.axes).drop_front(kept);
      if (all_of(added, [&](int64_t a) {
            return is_contained(sum, a) && !is_contained(claimed, a);
          }))
        best = {int64_t(d), SmallVector<int64_t, 2>(added)};
    }
    if (best.dim < 0)
      return out;
    claimed.append(best.axes.begin(), best.axes.end());
    out.push_back(std::move(best));
  }
}

/// Phase 1: sums the partial axes `to` does not keep: a reduce-scatter per
/// axis onto the dimensions that take them, then an all-reduce of the
/// others on the scattered block (the `accumulated` among them before the
/// scatters).
void sumPartials(TensorSharding &cur, const TensorSharding &to,
                 ArrayRef<int64_t> accumulated,
                 std::vector<ReshardStep> &steps) {
  SmallVector<int64_t, 2> sum;
  for (int64_t a : cur.partial)
    if (!is_contained(to.partial, a))
      sum.push_back(a);
  if (sum.empty())
    return;
  SmallVector<Scatter, 2> scatters = scatterTargets(cur, to, sum);
  if (scatters.empty()) {
    // One all-reduce over them all (pcc-accumulate-microbatches splits off
    // the accumulation).
    TensorSharding before = cur;
    cur.partial.assign(to.partial.begin(), to.partial.end());
    steps.push_back(
        ReshardStep{ReshardKind::AllReduce, sum, -1, 1, before, cur});
    return;
  }
  SmallVector<int64_t, 2> scattered, first, last;
  for (const Scatter &s : scatters)
    scattered.append(s.axes.begin(), s.axes.end());
  for (int64_t a : sum)
    if (!is_contained(scattered, a))
      (is_contained(accumulated, a) ? first : last).push_back(a);
  SmallVector<int64_t, 2> pending(scattered); // summed axes not yet reduced
  pending.append(last.begin(), last.end());
  auto leave = [&](ReshardStep step) {
    cur.partial.assign(to.partial.begin(), to.partial.end());
    cur.partial.append(pending.begin(), pending.end());
    step.after = cur;
    steps.push_back(std::move(step));
  };
  if (!first.empty())
    leave(ReshardStep{ReshardKind::AllReduce, first, -1, 1, cur, cur});
  // One axis at a time: within a dimension the major first (a weight's
  // gradient scattered over tp inside a node, then its part over dp across
  // nodes); across dimensions those over the mesh's minor axes first (the
  // fast links), so the major ones carry the smaller block.
  llvm::stable_sort(scatters, [](const Scatter &a, const Scatter &b) {
    return *llvm::max_element(a.axes) > *llvm::max_element(b.axes);
  });
  for (const Scatter &s : scatters) {
    const DimSharding &target = to.dims[s.dim];
    size_t kept = target.axes.size() - s.axes.size();
    for (auto [k, a] : enumerate(s.axes)) {
      ReshardStep one{ReshardKind::ReduceScatter, {a}, s.dim, target.groups,
                      cur, cur};
      cur.dims[s.dim] = target;
      cur.dims[s.dim].axes.resize(kept + k + 1);
      pending.erase(llvm::find(pending, a));
      leave(std::move(one));
    }
  }
  if (!last.empty()) {
    pending.clear();
    leave(ReshardStep{ReshardKind::AllReduce, last, -1, 1, cur, cur});
  }
}

/// The dimension other than `d` that `to` splits by `cur`'s axes there plus
/// exactly `moved` (minor), so that one all-to-all over `moved` moves the
/// split; -1 if none. Grouped splits are gathered instead.
int64_t moveTarget(const TensorSharding &cur, const TensorSharding &to,
                   size_t d, ArrayRef<int64_t> moved) {
  if (cur.dims[d].groups != 1)
    return -1;
  for (size_t e = 0; e < cur.dims.size(); ++e) {
    const DimSharding &c = cur.dims[e], &t = to.dims[e];
    if (e == d || t.groups != 1 || (c.isSplit() && c.groups != 1) ||
        t.axes.size() != c.axes.size() + moved.size())
      continue;
    if (ArrayRef<int64_t>(t.axes).take_front(c.axes.size()) ==
            ArrayRef<int64_t>(c.axes) &&
        ArrayRef<int64_t>(t.axes).drop_front(c.axes.size()) == moved)
      return e;
  }
  return -1;
}

} // namespace

std::vector<ReshardStep> planReshard(const TensorSharding &from,
                                     const TensorSharding &to,
                                     ArrayRef<int64_t> accumulated) {
  std::vector<ReshardStep> steps;
  if (from == to)
    return steps;
  TensorSharding cur = from;
  sumPartials(cur, to, accumulated, steps);

  // Phase 2: per dimension, keep the leading axes both layouts share (with
  // the same groups) and gather the rest.
  SmallVector<size_t> keep(cur.dims.size(), 0);
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    const DimSharding f = cur.dims[d], &t = to.dims[d];
    if (f == t) {
      keep[d] = f.axes.size();
      continue;
    }
    size_t common = 0;
    if (f.groups == t.groups)
      while (common < f.axes.size() && common < t.axes.size() &&
             f.axes[common] == t.axes[common])
        ++common;
    keep[d] = common;
    if (common == f.axes.size())
      continue;
    ArrayRef<int64_t> undone = ArrayRef<int64_t>(f.axes).drop_front(common);
    if (int64_t e = moveTarget(cur, to, d, undone); e >= 0) {
      ReshardStep step{ReshardKind::AllToAll, {}, int64_t(d), f.groups, cur,
                       cur};
      step.axes.assign(undone.begin(), undone.end());
      step.toDim = e;
      cur.dims[d].axes.resize(common);
      cur.dims[e] = to.dims[e];
      step.after = cur;
      steps.push_back(std::move(step));
      continue;
    }
    // A gather over several axes runs one axis at a time, the minor first
    // (its blocks are the contiguous ones): each earlier one gathers a
    // smaller block (ZeRO-3's weight stored over tp x dp gathered over dp
    // across nodes, then over tp inside one).
    for (size_t k = f.axes.size(); k > common; --k) {
      ReshardStep step{ReshardKind::AllGather, {f.axes[k - 1]}, int64_t(d),
                       f.groups, cur, cur};
      cur.dims[d].axes.resize(k - 1);
      step.after = cur;
      steps.push_back(std::move(step));
    }
  }

  // Phase 3: the target's new splits, made locally.
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    const DimSharding &t = to.dims[d];
    if (cur.dims[d] == t || keep[d] >= t.axes.size())
      continue;
    ReshardStep step{ReshardKind::AllSlice, {}, int64_t(d), t.groups, cur,
                     cur};
    step.axes.assign(t.axes.begin() + keep[d], t.axes.end());
    cur.dims[d] = t;
    step.after = cur;
    steps.push_back(std::move(step));
  }

  // A sum then sliced over other axes is sliced first: each device sums
  // only its block (a gradient summed over dp for an update split over tp),
  // which moves less and leaves the sum's result to its reader alone.
  bool sumThenSlices =
      steps.size() >= 2 && steps[0].kind == ReshardKind::AllReduce &&
      llvm::all_of(llvm::drop_begin(steps), [&](const ReshardStep &s) {
        return s.kind == ReshardKind::AllSlice &&
               llvm::none_of(s.axes, [&](int64_t a) {
                 return is_contained(steps[0].axes, a);
               });
      });
  if (sumThenSlices) {
    ReshardStep sum = steps.front();
    steps.erase(steps.begin());
    for (ReshardStep &slice : steps) {
      slice.before.partial = from.partial;
      slice.after.partial = from.partial;
    }
    sum.before = steps.back().after;
    sum.after = to;
    steps.push_back(std::move(sum));
  }
  return steps;
}

int64_t splitFactor(const TensorSharding &s, const Mesh &mesh) {
  int64_t f = 1;
  for (const DimSharding &d : s.dims)
    f *= mesh.size(d.axes);
  return f;
}

double stepBufferBytes(const ReshardStep &step, double wholeBytes,
                       const Mesh &mesh) {
  switch (step.kind) {
  case ReshardKind::AllReduce:
  case ReshardKind::ReduceScatter:
    return wholeBytes / splitFactor(step.before, mesh);
  case ReshardKind::AllGather:
    return wholeBytes / splitFactor(step.after, mesh);
  case ReshardKind::AllToAll:
    return wholeBytes / splitFactor(step.before, mesh);
  case ReshardKind::AllSlice:
    return 0;
  }
  return 0;
}

double stepsMovedBytes(ArrayRef<ReshardStep> steps, double wholeBytes,
                       const Mesh &mesh) {
  double bytes = 0;
  for (const ReshardStep &step : steps)
    bytes += stepBufferBytes(step, wholeBytes, mesh) *
             (step.kind == ReshardKind::AllReduce ? 2 : 1);
  return bytes;
}

} // namespace pcc
