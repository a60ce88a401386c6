// The cost model of a cache step (gradcache/cost_model.h): the prediction the benchmarks
// judge a step against, and the retained share that meets a target.
#include <gradcache/cost_model.h>

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cmath>

namespace gc = gradcache;

namespace {
// F0 = 2, F = 3, B = 5, L = 1: accumulation costs F + B = 8.
gc::StepCosts parts() { return gc::StepCosts{2, 3, 5, 1}; }
}  // namespace

TEST(CostModel, PredictsCacheOverAccumulateWithAndWithoutRetainedChunks) {
  EXPECT_DOUBLE_EQ(gc::predicted_cache_over_accumulate(parts()), (2.0 + 3 + 5 + 1) / 8);
  // Half of F0 retained: that half of step 1 runs with grad and is not replayed.
  EXPECT_DOUBLE_EQ(gc::predicted_cache_over_accumulate(parts(), 0.5), (1.0 + 3 + 5 + 1) / 8);
  // Everything retained: accumulation plus the loss over the whole batch.
  EXPECT_DOUBLE_EQ(gc::predicted_cache_over_accumulate(parts(), 1), (3.0 + 5 + 1) / 8);
}

TEST(CostModel, RetainedShareForATargetInvertsThePrediction) {
  const double share = gc::retained_share_for(parts(), 1.2);  // 2 (1 - s) + 9 = 9.6
  EXPECT_NEAR(share, 0.7, 1e-12);
  EXPECT_NEAR(gc::predicted_cache_over_accumulate(parts(), share), 1.2, 1e-12);
  EXPECT_EQ(gc::retained_share_for(parts(), 1.5), 0);          // already 1.375
  EXPECT_TRUE(std::isnan(gc::retained_share_for(parts(), 1.1)));  // even all retained: 1.125
}

TEST(CostModel, RefusesPartsThatMakeNoStep) {
  EXPECT_THROW(gc::predicted_cache_over_accumulate(gc::StepCosts{1, 0, 0, 0}), c10::Error);
  EXPECT_THROW(gc::predicted_cache_over_accumulate(gc::StepCosts{-1, 1, 1, 0}), c10::Error);
  EXPECT_THROW(gc::predicted_cache_over_accumulate(parts(), 1.5), c10::Error);
}
