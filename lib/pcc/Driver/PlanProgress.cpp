//===- PlanProgress.cpp - the planner's progress line on stderr -----------===//
//
// On a terminal the line is rewritten in place and erased when the search
// ends, and appears only once a search has taken a second (most take less).
// Forced on (--progress always, for logs and tests) it prints each update
// on a line of its own, throttled to one every half second, and the totals.
//
//===----------------------------------------------------------------------===//

#include "pcc/Driver/Driver.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace pcc {

std::function<void(const PlanProgress &)> planProgressPrinter(bool always) {
  llvm::raw_ostream &os = llvm::errs();
  bool terminal = os.is_displayed();
  if (!always && !terminal)
    return nullptr;
  auto shown = std::make_shared<bool>(false);
  auto lastLine = std::make_shared<double>(-1);
  return [&os, always, terminal, shown, lastLine](const PlanProgress &p) {
    std::string line = llvm::formatv(
        "planning: pipeline depth {0} of {1}, {2} candidates priced, {3} "
        "layout searches, {4:F1} s",
        p.depthsDone, p.depths, p.candidates, p.searches, p.seconds);
    if (terminal && !always) {
      if (p.done) {
        if (*shown)
          os << "\r\x1b[K";
      } else if (p.seconds >= 1) {
        os << "\r" << line << "\x1b[K";
        *shown = true;
      }
      os.flush();
      return;
    }
    if (!p.done && p.seconds - *lastLine < 0.5)
      return;
    *lastLine = p.seconds;
    os << (p.done ? llvm::formatv("planning: done, {0} candidates priced, {1} "
                                  "layout searches, {2:F1} s",
                                  p.candidates, p.searches, p.seconds)
                        .str()
                  : line)
       << "\n";
    os.flush();
  };
}

} // namespace pcc
