//===- PlanPricing.h - what a candidate's layouts cost, stage by stage ----===//
//
// The Planner's pricing helpers that see one candidate's layouts and the
// graph, not the search: closed-form grid layouts, pipeline units, live
// bytes, stage transfers. Internal to lib/pcc/Plan.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_LIB_PLAN_PLANPRICING_H
#define PCC_LIB_PLAN_PLANPRICING_H

#include "pcc/Plan/Planner.h"

namespace pcc::planning {

struct Grid {
  TensorMode mode;
  int64_t size, q, depth;
};

/// Closed-form costs of Colossal-AI's 2D (SUMMA), 2.5D (Tesseract) and 3D
/// linear layers (used when the partitioner's grid layouts are not given).
SearchResult gridLayout(const PlanGraph &g, const CostModel &cost,
                        const Grid &grid, double scale,
                        const ClusterSpec &cluster, bool layouts);

/// The heads of the model's attention: their gcd over attention ops, or 0.
int64_t headCount(const PlanGraph &g);

/// Units pipeline stages are made of: single nodes, or whole block copies.
struct Unit {
  int first, last; // nodes [first, last]
  int block;       // index in PlanGraph::blocks of a copy's block, or -1
};

std::vector<Unit> makeUnits(const PlanGraph &g);

/// Per node, the last node that reads its result (the node count for a
/// model output, -1 for none).
std::vector<int> lastUses(const PlanGraph &g);

/// Peak bytes of live results on one device while nodes [first, last] run
/// one microbatch.
double peakLiveBytes(const PlanGraph &g, const SearchResult &layout,
                     llvm::ArrayRef<int> lastUse, int first, int last);

/// What stage transfers depend on that no candidate changes: where each
/// node runs relative to the cuts, and the edges into nodes that run.
struct TransferEdges {
  /// Per node, the node whose stage it runs in: itself, or for a node
  /// computed from weights alone its first reader's (pcc-apply-plan places
  /// it there, wherever the node order put it).
  std::vector<int> placedAt;
  struct Edge {
    int consumer, producer;
    /// The node whose result bytes the value has (a view's source), and
    /// the value's share of them.
    int base;
    double share;
    const void *value;
  };
  std::vector<Edge> edges;
};

TransferEdges transferEdges(const PlanGraph &g);

/// The values each stage sends later ones, one per (value, receiving
/// stage), with the bytes of one device's block per microbatch.
std::vector<PlanCandidate::StageTransfer>
stageTransfers(const TransferEdges &t, const SearchResult &layout,
               llvm::ArrayRef<int> stageBegin);

/// Bytes each copy of block `b` passes to the next (the residual stream).
double blockBoundaryBytes(const PlanGraph &g, const RepeatedBlock &b,
                          const SearchResult &layout);

/// The mesh a candidate's tensor-axis layouts are priced on: its one tp
/// axis, or its grid (tensorGridMesh).
Mesh tensorLayoutMesh(const PlanCandidate &c);

/// Trained weights ZeRO keeps whole over dp (zeroSplitDim finds no
/// dimension: a fused Q|K|V bias split by groups): all-reduced over dp in
/// one bucket, never reduce-scattered or gathered.
struct WholeOverDp {
  int64_t tensors = 0, forwardReads = 0;
  double bytes = 0;
  WholeOverDp &operator+=(const WholeOverDp &o) {
    tensors += o.tensors;
    forwardReads += o.forwardReads;
    bytes += o.bytes;
    return *this;
  }
};

/// Those of node `i`'s trained weights it reads first, as its layout `s`
/// on `mesh` holds them under `dp` replicas: how many, their bytes per
/// device and their forward reads.
WholeOverDp wholeOverDp(const PlanGraph &g, int i, const OpSharding &s,
                        const Mesh &mesh, int64_t dp);

} // namespace pcc::planning

#endif // PCC_LIB_PLAN_PLANPRICING_H
