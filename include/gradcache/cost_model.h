// The cost model of a cache step (docs/design.md §3): what the cache costs over gradient
// accumulation, from the parts of a step measured on the machine at hand. On CPU the
// backward is not 2 x the forward, so a fixed target (the paper's +20%) says little; the
// benchmarks judge a step against this prediction instead.
#pragma once

namespace gradcache {

/// The parts of one training step, each summed over all chunks of all models (any unit of
/// time, the same for all).
struct StepCosts {
  double forward_no_grad = 0;  ///< F0: step 1's forward without grad
  double forward = 0;          ///< F: forward with grad (step 3's replay; accumulation's forward)
  double backward = 0;         ///< B: backward through the chunks' graphs
  double loss = 0;             ///< L: the loss over the whole batch, forward and backward
};

/// Predicted cache / accumulate time: (F0 (1 - retained_share) + F + B + L) / (F + B).
/// `retained_share`: the part of F0 that retained chunks skip (in [0, 1]; with chunks of
/// equal cost, retained chunks / all chunks): a retained chunk runs its step-1 forward with
/// grad (F, counted once) and is not replayed, so it costs what accumulation costs.
double predicted_cache_over_accumulate(const StepCosts& costs, double retained_share = 0);

/// The least retained share of F0 for which the prediction is <= `target`: 0 when nothing
/// needs retaining, NaN when even retaining every chunk stays above it.
double retained_share_for(const StepCosts& costs, double target);

}  // namespace gradcache
