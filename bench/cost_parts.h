// The parts of a step that the cost model (gradcache/cost_model.h) predicts from: F0, F, B
// and the loss, timed as steps of their own that interleave with the steps they predict, so
// that a shared machine's drifts hit the parts and the steps alike.
#pragma once

#include "measure.h"
#include "workload.h"

#include <gradcache/cost_model.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace gcbench {

/// Which clock a figure is read from.
enum class Clock { wall, cpu };

/// The parts of one step on a batch, each a pass over all chunks of both models as the cache
/// runs them: F0 (no-grad forward, each chunk timed), F and B (each chunk's forward with grad
/// and its backward right after), L (the loss over the batch, forward and backward), and,
/// if asked, F0 under c10::InferenceMode. Every call of a step records one sample per part.
class StepParts {
 public:
  StepParts(const Workload& workload, const Batch& batch, int64_t chunk, bool inference_mode = false);
  /// The steps to time with the others (time_interleaved); they share this object's state.
  std::vector<NamedStep> steps();
  /// Forgets the samples of the first `calls` calls of each step (the warm-up rounds).
  void discard_first(int64_t calls);
  /// Medians over the recorded calls.
  gradcache::StepCosts costs(Clock clock) const;
  /// The share of F0 that the first retained[m] chunks of each model m make up (CPU time).
  double retained_share(const std::vector<int64_t>& retained) const;
  /// Predicted cache / accumulate with retained[m] chunks of each model retained.
  double predicted(Clock clock, const std::vector<int64_t>& retained) const;
  /// The medians in seconds, the clock, the predictions with nothing retained.
  Json to_json() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace gcbench
