//===- StageBalance.cpp - contiguous stages of least maximum cost ---------===//
//
// Binary search on the largest stage cost; for a candidate limit, greedy
// filling gives the fewest stages that respect it, which is exact for
// contiguous runs of non-negative costs.
//
//===----------------------------------------------------------------------===//

#include "pcc/Support/StageBalance.h"

#include <algorithm>

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
  // Fewer runs than parts: split the longest runs (never raises the max).
  while (int(starts.size()) < parts) {
    int best = -1, bestLen = 1;
    for (size_t s = 0; s < starts.size(); ++s) {
      int end = s + 1 < starts.size() ? starts[s + 1] : n;
      if (end - starts[s] > bestLen) {
        bestLen = end - starts[s];
        best = s;
      }
    }
    if (best < 0)
      break;
    starts.insert(starts.begin() + best + 1, starts[best] + bestLen / 2);
  }
  return starts;
}

} // namespace pcc
