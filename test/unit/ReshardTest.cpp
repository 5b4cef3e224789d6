//===- ReshardTest.cpp - the steps between two layouts --------------------===//
//
// planReshard is what the partitioner emits and what the planner prices, so
// its steps are checked against the three-phase definition in Reshard.h:
// named cases, then properties over every pair of layouts of a small tensor
// on a 2 x 3 mesh.
//
//===----------------------------------------------------------------------===//

#include "pcc/Sharding/Reshard.h"

#include <gtest/gtest.h>

using namespace pcc;

namespace pcc {
/// Failures print layouts readably.
void PrintTo(const TensorSharding &s, std::ostream *os) {
  Mesh mesh;
  mesh.shape = {2, 3};
  mesh.axisNames = {"dp", "tp"};
  *os << describe(s, mesh);
}
} // namespace pcc

namespace {

Mesh twoByThree() {
  Mesh mesh;
  mesh.shape = {2, 3};
  mesh.axisNames = {"dp", "tp"};
  return mesh;
}

TensorSharding layout(std::initializer_list<std::vector<int64_t>> dims,
                      std::vector<int64_t> partial = {}, int64_t groups = 1) {
  TensorSharding s;
  for (const auto &axes : dims) {
    DimSharding d;
    d.axes.assign(axes.begin(), axes.end());
    d.groups = axes.empty() ? 1 : groups;
    s.dims.push_back(d);
  }
  s.partial.assign(partial.begin(), partial.end());
  return s;
}

std::string kinds(const std::vector<ReshardStep> &steps) {
  std::string out;
  for (const ReshardStep &s : steps) {
    out += out.empty() ? "" : " ";
    out += reshardKindName(s.kind).str();
  }
  return out;
}

TEST(Reshard, EqualLayoutsNeedNothing) {
  auto s = layout({{0}, {1}});
  EXPECT_TRUE(planReshard(s, s).empty());
}

TEST(Reshard, PartialSumIntoASplitIsOneReduceScatter) {
  auto steps = planReshard(layout({{}, {}}, {1}), layout({{}, {1}}));
  ASSERT_EQ(kinds(steps), "reduce_scatter");
  EXPECT_EQ(steps[0].dim, 1);
  EXPECT_EQ(steps[0].axes, (llvm::SmallVector<int64_t, 2>{1}));
}

TEST(Reshard, PartialSumOverMoreAxesThanTheSplitScattersThenSumsTheBlock) {
  // Partial over both axes, wanted split over tp: the tp scatter, then the
  // dp sum of each device's block (a third of the bytes of summing first;
  // not a sum over both and a slice).
  auto steps = planReshard(layout({{}, {}}, {0, 1}), layout({{}, {1}}));
  ASSERT_EQ(kinds(steps), "reduce_scatter all_reduce");
  EXPECT_EQ(steps[0].axes, (llvm::SmallVector<int64_t, 2>{1}));
  EXPECT_EQ(steps[0].dim, 1);
  EXPECT_EQ(steps[0].after, layout({{}, {1}}, {0}));
  EXPECT_EQ(steps[1].axes, (llvm::SmallVector<int64_t, 2>{0}));
  EXPECT_EQ(steps[1].after, layout({{}, {1}}));
  Mesh mesh = twoByThree();
  EXPECT_EQ(stepBufferBytes(steps[1], 600, mesh), 200);
}

TEST(Reshard, AccumulatedSumsComeBeforeTheScatter) {
  // Partial over microbatches (axis 0, accumulated) and tp: the runs'
  // blocks are added first, so the scatter runs once, on their sum.
  auto steps = planReshard(layout({{}, {}}, {0, 1}), layout({{}, {1}}), {0});
  ASSERT_EQ(kinds(steps), "all_reduce reduce_scatter");
  EXPECT_EQ(steps[0].axes, (llvm::SmallVector<int64_t, 2>{0}));
  EXPECT_EQ(steps[0].after.partial, (llvm::SmallVector<int64_t, 2>{1}));
  EXPECT_EQ(steps[1].axes, (llvm::SmallVector<int64_t, 2>{1}));
  EXPECT_TRUE(steps[1].after.partial.empty());
}

TEST(Reshard, PartialSumSlicedOverAnotherAxisIsSlicedFirst) {
  // A gradient summed over dp for an update split over tp: each device
  // slices its tp block, then sums that block over dp (a third of the
  // bytes of summing the whole and slicing after).
  auto steps = planReshard(layout({{}, {}}, {0}), layout({{1}, {}}));
  ASSERT_EQ(kinds(steps), "all_slice all_reduce");
  EXPECT_EQ(steps[0].after, layout({{1}, {}}, {0}));
  EXPECT_EQ(steps[1].axes, (llvm::SmallVector<int64_t, 2>{0}));
  EXPECT_EQ(steps[1].after, layout({{1}, {}}));
  Mesh mesh = twoByThree();
  EXPECT_EQ(stepBufferBytes(steps[1], 600, mesh), 200);
}

TEST(Reshard, PartialSumWantedWholeIsAnAllReduce) {
  auto steps = planReshard(layout({{0}, {}}, {1}), layout({{0}, {}}));
  ASSERT_EQ(kinds(steps), "all_reduce");
  EXPECT_EQ(steps[0].axes, (llvm::SmallVector<int64_t, 2>{1}));
}

TEST(Reshard, MovingASplitIsOneAllToAll) {
  // Sequence split to head split (Ulysses): dim 0's split moves to dim 1.
  auto steps = planReshard(layout({{1}, {}}), layout({{}, {1}}));
  ASSERT_EQ(kinds(steps), "all_to_all");
  EXPECT_EQ(steps[0].dim, 0);
  EXPECT_EQ(steps[0].toDim, 1);
  EXPECT_EQ(steps[0].axes, (llvm::SmallVector<int64_t, 2>{1}));
  // Behind a split the target keeps (dp major on dim 1), tp moves minor.
  auto kept = planReshard(layout({{1}, {0}}), layout({{}, {0, 1}}));
  ASSERT_EQ(kinds(kept), "all_to_all");
  EXPECT_EQ(kept[0].toDim, 1);
}

TEST(Reshard, MovingAGroupedSplitGathersThenSlices) {
  auto steps = planReshard(layout({{1}, {}}, {}, 3), layout({{}, {1}}));
  ASSERT_EQ(kinds(steps), "all_gather all_slice");
}

TEST(Reshard, MinorAxesAreGatheredMajorOnesKept) {
  auto steps = planReshard(layout({{0, 1}, {}}), layout({{0}, {}}));
  ASSERT_EQ(kinds(steps), "all_gather");
  EXPECT_EQ(steps[0].axes, (llvm::SmallVector<int64_t, 2>{1}));
}

TEST(Reshard, GatherOverTwoAxesRunsTheMinorAxisFirst) {
  // ZeRO-3's weight stored split over tp x dp, read whole: gathered over dp
  // (a third of the weight moves) and then over tp.
  Mesh mesh = twoByThree();
  auto steps = planReshard(layout({{1, 0}, {}}), layout({{}, {}}));
  ASSERT_EQ(kinds(steps), "all_gather all_gather");
  EXPECT_EQ(steps[0].axes, (llvm::SmallVector<int64_t, 2>{0}));
  EXPECT_EQ(steps[0].after, layout({{1}, {}}));
  EXPECT_EQ(steps[1].axes, (llvm::SmallVector<int64_t, 2>{1}));
  EXPECT_DOUBLE_EQ(stepBufferBytes(steps[0], 600, mesh), 200);
  EXPECT_DOUBLE_EQ(stepBufferBytes(steps[1], 600, mesh), 600);
  // Same bytes in all as one ring over the six devices.
  EXPECT_DOUBLE_EQ(stepsMovedBytes(steps, 600, mesh), 800);
}

TEST(Reshard, ScatterOverTwoAxesRunsTheMajorAxisFirst) {
  // The weight's gradient, partial over dp and tp, into its tp x dp part:
  // scattered over tp, then its third over dp.
  Mesh mesh = twoByThree();
  auto steps = planReshard(layout({{}, {}}, {0, 1}), layout({{1, 0}, {}}));
  ASSERT_EQ(kinds(steps), "reduce_scatter reduce_scatter");
  EXPECT_EQ(steps[0].axes, (llvm::SmallVector<int64_t, 2>{1}));
  EXPECT_EQ(steps[0].after, layout({{1}, {}}, {0}));
  EXPECT_EQ(steps[1].axes, (llvm::SmallVector<int64_t, 2>{0}));
  EXPECT_EQ(steps[1].after, layout({{1, 0}, {}}));
  EXPECT_DOUBLE_EQ(stepBufferBytes(steps[0], 600, mesh), 600);
  EXPECT_DOUBLE_EQ(stepBufferBytes(steps[1], 600, mesh), 200);
}

TEST(Reshard, ScatterOntoTwoDimensionsRunsTheMinorAxisFirst) {
  // A 2D layer's weight gradient under ZeRO, partial over dp and tp, into
  // its state's [dp, tp] split: scattered over tp onto the columns, then
  // its third over dp onto the rows (not an all-reduce over tp).
  Mesh mesh = twoByThree();
  auto steps = planReshard(layout({{}, {}}, {0, 1}), layout({{0}, {1}}));
  ASSERT_EQ(kinds(steps), "reduce_scatter reduce_scatter");
  EXPECT_EQ(steps[0].axes, (llvm::SmallVector<int64_t, 2>{1}));
  EXPECT_EQ(steps[0].dim, 1);
  EXPECT_EQ(steps[0].after, layout({{}, {1}}, {0}));
  EXPECT_EQ(steps[1].axes, (llvm::SmallVector<int64_t, 2>{0}));
  EXPECT_EQ(steps[1].dim, 0);
  EXPECT_EQ(steps[1].after, layout({{0}, {1}}));
  EXPECT_DOUBLE_EQ(stepBufferBytes(steps[0], 600, mesh), 600);
  EXPECT_DOUBLE_EQ(stepBufferBytes(steps[1], 600, mesh), 200);
}

TEST(Reshard, GroupedSplitsAreUndoneWhole) {
  // Fused Q|K|V columns (3 groups) to plain columns: the groups differ, so
  // nothing is shared.
  auto steps =
      planReshard(layout({{}, {1}}, {}, 3), layout({{}, {1}}, {}, 1));
  ASSERT_EQ(kinds(steps), "all_gather all_slice");
  EXPECT_EQ(steps[0].groups, 3);
  EXPECT_EQ(steps[1].groups, 1);
}

TEST(Reshard, GroupedSplitsAreScatteredFurtherWithinEachGroup) {
  // A 3D layer's fused Q|K|V weight gradient: split over dp in 3 groups,
  // partial over tp, into its stored [dp, tp] split of the same groups:
  // one reduce-scatter within each group, not an all-reduce and a cut.
  auto steps = planReshard(layout({{}, {0}}, {1}, 3), layout({{}, {0, 1}}, {}, 3));
  ASSERT_EQ(kinds(steps), "reduce_scatter");
  EXPECT_EQ(steps[0].axes, (llvm::SmallVector<int64_t, 2>{1}));
  EXPECT_EQ(steps[0].dim, 1);
  EXPECT_EQ(steps[0].groups, 3);
  EXPECT_EQ(steps[0].after, layout({{}, {0, 1}}, {}, 3));
}

TEST(Reshard, BufferBytesFollowTheLayoutAroundEachStep) {
  Mesh mesh = twoByThree();
  // Split over dp on dim 0 and tp on dim 1, gather tp: the gathered buffer
  // still holds half the tensor.
  auto steps = planReshard(layout({{0}, {1}}), layout({{0}, {}}));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_DOUBLE_EQ(stepBufferBytes(steps[0], 600, mesh), 300);
  auto rs = planReshard(layout({{0}, {}}, {1}), layout({{0}, {1}}));
  ASSERT_EQ(kinds(rs), "reduce_scatter");
  EXPECT_DOUBLE_EQ(stepBufferBytes(rs[0], 600, mesh), 300);
}

/// Every layout of a rank-2 tensor on two axes: each axis unused, partial,
/// or splitting one dimension (in either order when both split the same).
std::vector<TensorSharding> allLayouts() {
  std::vector<TensorSharding> out;
  // Per axis: 0 unused, 1 partial, 2 dim 0, 3 dim 1.
  for (int a0 = 0; a0 < 4; ++a0)
    for (int a1 = 0; a1 < 4; ++a1)
      for (int order = 0; order < 2; ++order) {
        TensorSharding s = TensorSharding::replicated(2);
        int place[2] = {a0, a1};
        for (int k = 0; k < 2; ++k) {
          int axis = order ? 1 - k : k;
          if (place[axis] == 1)
            s.partial.push_back(axis);
          else if (place[axis] >= 2)
            s.dims[place[axis] - 2].axes.push_back(axis);
        }
        // Partial axes are a set: one order of them.
        llvm::sort(s.partial);
        out.push_back(s);
      }
  return out;
}

TEST(Reshard, EveryPairEndsAtTheTargetThroughConsistentSteps) {
  for (const TensorSharding &from : allLayouts())
    for (const TensorSharding &to : allLayouts()) {
      // A whole value never becomes a partial sum: no rule asks for it.
      if (llvm::any_of(to.partial, [&](int64_t a) {
            return !llvm::is_contained(from.partial, a);
          }))
        continue;
      auto steps = planReshard(from, to);
      TensorSharding cur = from;
      bool sawGatherOrSlice = false, sawSliceOnly = true;
      for (const ReshardStep &s : steps) {
        EXPECT_EQ(s.before, cur);
        ASSERT_FALSE(s.axes.empty());
        switch (s.kind) {
        case ReshardKind::AllReduce:
        case ReshardKind::ReduceScatter:
          // Sums come first (or last, after slices over other axes only:
          // planReshard slices a sum's block first) and only over axes the
          // source holds partial and the target does not.
          if (sawGatherOrSlice) {
            EXPECT_TRUE(sawSliceOnly);
            EXPECT_EQ(s.kind, ReshardKind::AllReduce);
            EXPECT_EQ(&s, &steps.back());
          }
          if (s.kind == ReshardKind::ReduceScatter) {
            EXPECT_EQ(s.axes.size(), 1u);
          }
          for (int64_t a : s.axes) {
            EXPECT_TRUE(llvm::is_contained(from.partial, a));
            EXPECT_FALSE(llvm::is_contained(to.partial, a));
          }
          break;
        case ReshardKind::AllGather:
          EXPECT_EQ(s.axes.size(), 1u);
          for (int64_t a : s.axes)
            EXPECT_TRUE(llvm::is_contained(cur.dims[s.dim].axes, a));
          sawGatherOrSlice = true;
          sawSliceOnly = false;
          break;
        case ReshardKind::AllSlice:
          for (int64_t a : s.axes)
            EXPECT_TRUE(llvm::is_contained(to.dims[s.dim].axes, a));
          sawGatherOrSlice = true;
          break;
        case ReshardKind::AllToAll:
          // Moves exactly its axes from `dim` to `toDim`.
          EXPECT_NE(s.dim, s.toDim);
          for (int64_t a : s.axes) {
            EXPECT_TRUE(llvm::is_contained(cur.dims[s.dim].axes, a));
            EXPECT_FALSE(llvm::is_contained(s.after.dims[s.dim].axes, a));
            EXPECT_TRUE(llvm::is_contained(s.after.dims[s.toDim].axes, a));
          }
          sawGatherOrSlice = true;
          sawSliceOnly = false;
          break;
        }
        cur = s.after;
      }
      EXPECT_EQ(cur, to);
      // Adding splits alone never communicates.
      bool onlyAdds = from.partial == to.partial;
      for (auto [f, t] : llvm::zip(from.dims, to.dims))
        onlyAdds &= f.axes.empty() || f == t;
      if (onlyAdds) {
        for (const ReshardStep &s : steps)
          EXPECT_EQ(s.kind, ReshardKind::AllSlice);
      }
    }
}

} // namespace
