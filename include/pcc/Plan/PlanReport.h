//===- PlanReport.h - print a plan as text, JSON or dot ---------*- C++ -*-===//

#ifndef PCC_PLAN_PLANREPORT_H
#define PCC_PLAN_PLANREPORT_H

#include "pcc/Plan/Planner.h"

#include "llvm/Support/raw_ostream.h"

namespace pcc {

struct ReportOptions {
  std::string modelPath;
  /// The target whose kernels were priced ("cpu", "cuda"; empty: unsaid).
  std::string target;
  bool compare = false, explain = false;
  /// Alternatives listed by --compare.
  int alternatives = 12;
};

void printPlanText(llvm::raw_ostream &os, const PlanGraph &g,
                   const ClusterSpec &cluster, const PlanOptions &options,
                   const Plan &plan, const ReportOptions &report);
/// Schema "pcc-plan-report/1", documented in docs/planner.md.
void printPlanJSON(llvm::raw_ostream &os, const PlanGraph &g,
                   const ClusterSpec &cluster, const PlanOptions &options,
                   const Plan &plan, const ReportOptions &report);
/// The partitioned graph: the prefix, one copy of a repeated block and the
/// suffix, each op with its layout; edges that need a collective in red.
void printPlanDot(llvm::raw_ostream &os, const PlanGraph &g, const Plan &plan);

} // namespace pcc

#endif // PCC_PLAN_PLANREPORT_H
