//===- StageBalance.cpp - contiguous stages of least maximum cost ---------===//
//
// Binary search on the largest stage cost; for a candidate limit, greedy
// filling gives the fewest stages that respect it, which is exact for
// contiguous runs of non-negative costs.
//
//===----------------------------------------------------------------------===//

#include "pcc/Support/StageBalance.h"

#include <algorithm>
#include <cmath>

namespace pcc {

namespace {

/// Interleaved chunks (run s on device s % devices): moves one unit at a
/// time across a run boundary while that lowers the busiest device's load
/// (ties: the sum of squared loads), no run growing past the largest run
/// of `starts`, so the pipeline's bubble does not grow. The cuts tried
/// before leave a device a layer more than the others where the layers do
/// not divide evenly among the chunks (36 layers in 16: 10 layers' worth
/// on one device where 9 and the head can be had).
std::vector<int> evenDevices(llvm::ArrayRef<double> prefix,
                             std::vector<int> starts, int devices) {
  int n = int(prefix.size()) - 1, runs = starts.size();
  auto runEnd = [&](int s) { return s + 1 < runs ? starts[s + 1] : n; };
  auto runCost = [&](int begin, int end) {
    return prefix[end] - prefix[begin];
  };
  std::vector<double> load(devices, 0.0);
  double largest = 0;
  for (int s = 0; s < runs; ++s) {
    double c = runCost(starts[s], runEnd(s));
    load[s % devices] += c;
    largest = std::max(largest, c);
  }
  double cap = largest * (1 + 1e-12);
  auto key = [&](const std::vector<double> &l) {
    double most = 0, squares = 0;
    for (double x : l) {
      most = std::max(most, x);
      squares += x * x;
    }
    return std::pair(most, squares);
  };
  auto better = [](std::pair<double, double> a, std::pair<double, double> b) {
    const double eps = 1e-12;
    if (a.first < b.first * (1 - eps))
      return true;
    return a.first <= b.first * (1 + eps) && a.second < b.second * (1 - eps);
  };
  auto now = key(load);
  // Each accepted move strictly lowers the key; the bound only guards
  // against rounding.
  for (int pass = 0; pass < 4 * n; ++pass) {
    bool moved = false;
    for (int s = 1; s < runs; ++s)
      for (int step : {-1, 1}) {
        int b = starts[s] + step, first = starts[s - 1], end = runEnd(s);
        if (b <= first || b >= end)
          continue;
        double left = runCost(first, b), right = runCost(b, end);
        if (left > cap || right > cap)
          continue;
        std::vector<double> next = load;
        next[(s - 1) % devices] += left - runCost(first, starts[s]);
        next[s % devices] += right - runCost(starts[s], end);
        auto k = key(next);
        if (!better(k, now))
          continue;
        starts[s] = b;
        load = std::move(next);
        now = k;
        moved = true;
      }
    if (!moved)
      break;
  }
  return starts;
}

} // namespace

std::vector<int> balanceStages(llvm::ArrayRef<double> cost, int parts,
                               int devices) {
  std::vector<int> starts = leastLargestStages(cost, parts, devices);
  if (devices <= 1 || devices >= int(starts.size()))
    return starts;
  std::vector<double> prefix(cost.size() + 1, 0.0);
  for (size_t i = 0; i < cost.size(); ++i)
    prefix[i + 1] = prefix[i] + cost[i];
  return evenDevices(prefix, std::move(starts), devices);
}

std::vector<int> leastLargestStages(llvm::ArrayRef<double> cost, int parts,
                                    int devices) {
  int n = cost.size();
  if (n == 0)
    return {};
  auto greedy = [&](double limit) {
    std::vector<int> starts{0};
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      if (sum + cost[i] > limit && sum > 0) {
        starts.push_back(i);
        sum = 0;
      }
      sum += cost[i];
    }
    return starts;
  };
  // Whether greedy filling under `limit` needs at most `parts` runs (the
  // search's test: counted, stopping early, nothing allocated).
  auto fits = [&](double limit) {
    int runs = 1;
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      if (sum + cost[i] > limit && sum > 0) {
        if (++runs > parts)
          return false;
        sum = 0;
      }
      sum += cost[i];
    }
    return true;
  };
  double lo = *std::max_element(cost.begin(), cost.end()), hi = 0;
  for (double c : cost)
    hi += c;
  for (int it = 0; it < 60 && hi - lo > 1e-12 * hi; ++it) {
    double mid = (lo + hi) / 2;
    if (fits(mid))
      hi = mid;
    else
      lo = mid;
  }
  std::vector<int> least = greedy(hi);
  if (int(least.size()) >= parts)
    return least;
  auto runCost = [&](int begin, int end) {
    double sum = 0;
    for (int i = begin; i < end; ++i)
      sum += cost[i];
    return sum;
  };
  auto runEnd = [&](const std::vector<int> &starts, size_t s) {
    return s + 1 < starts.size() ? starts[s + 1] : n;
  };
  // Fewer runs than parts: split runs until there are enough (never raises
  // the max), either the one of most units in halves, or the costliest where
  // its halves are most even.
  auto splitRuns = [&](bool byCost) {
    std::vector<int> starts = least;
    while (int(starts.size()) < parts) {
      int best = -1;
      double bestKey = byCost ? -1 : 1;
      for (size_t s = 0; s < starts.size(); ++s) {
        int begin = starts[s], end = runEnd(starts, s);
        double key = byCost ? runCost(begin, end) : end - begin;
        if (end - begin > 1 && key > bestKey) {
          bestKey = key;
          best = s;
        }
      }
      if (best < 0)
        break;
      int begin = starts[best], end = runEnd(starts, best);
      int cut = begin + (end - begin) / 2;
      if (byCost) {
        double left = 0, bestMax = INFINITY;
        for (int k = begin + 1; k < end; ++k) {
          left += cost[k - 1];
          if (double worst = std::max(left, bestKey - left); worst < bestMax) {
            bestMax = worst;
            cut = k;
          }
        }
      }
      starts.insert(starts.begin() + best + 1, cut);
    }
    return starts;
  };
  std::vector<int> halves = splitRuns(false);
  // A run per device: the largest run is all that counts, and neither way
  // of splitting raises it.
  if (devices >= parts)
    return halves;
  // An interleaved pipeline's device holds the sum of its chunks (run s on
  // device s % devices): a run of a few cheap ops (a torch export's
  // embeddings, adds and mask ops before its layers) cut into one-op stages
  // leaves the layers' runs whole.
  auto busiest = [&](const std::vector<int> &starts) {
    std::vector<double> sum(std::max(devices, 1), 0.0);
    for (size_t s = 0; s < starts.size(); ++s)
      sum[s % sum.size()] += runCost(starts[s], runEnd(starts, s));
    return *std::max_element(sum.begin(), sum.end());
  };
  std::vector<int> even = splitRuns(true);
  if (busiest(even) < busiest(halves) * (1 - 1e-12))
    return even;
  return halves;
}

} // namespace pcc
