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

std::vector<int> balanceStages(llvm::ArrayRef<double> cost, int parts,
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
