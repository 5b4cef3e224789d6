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

std::vector<int> balanceStages(llvm::ArrayRef<double> cost, int parts) {
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
  std::vector<int> starts = greedy(hi);
  // Fewer runs than parts: split the costliest run of two units or more
  // where its halves are most even (never raises the max). By cost, not by
  // units: a run of a few cheap ops (a torch export's embeddings, adds and
  // casts before its layers) split into stages of one op each leaves the
  // layers' runs whole, and an interleaved pipeline's device holds the sum
  // of its chunks.
  auto runCost = [&](int begin, int end) {
    double sum = 0;
    for (int i = begin; i < end; ++i)
      sum += cost[i];
    return sum;
  };
  while (int(starts.size()) < parts) {
    int best = -1;
    double bestCost = -1;
    for (size_t s = 0; s < starts.size(); ++s) {
      int end = s + 1 < starts.size() ? starts[s + 1] : n;
      double c = runCost(starts[s], end);
      if (end - starts[s] > 1 && c > bestCost) {
        bestCost = c;
        best = s;
      }
    }
    if (best < 0)
      break;
    int begin = starts[best];
    int end = best + 1 < int(starts.size()) ? starts[best + 1] : n;
    int cut = begin + 1;
    double left = 0, bestMax = INFINITY;
    for (int k = begin + 1; k < end; ++k) {
      left += cost[k - 1];
      double worst = std::max(left, bestCost - left);
      if (worst < bestMax) {
        bestMax = worst;
        cut = k;
      }
    }
    starts.insert(starts.begin() + best + 1, cut);
  }
  return starts;
}

} // namespace pcc
