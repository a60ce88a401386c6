#include <gradcache/cost_model.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>

namespace gradcache {
namespace {

void check(const StepCosts& c) {
  TORCH_CHECK(c.forward_no_grad >= 0 && c.forward >= 0 && c.backward >= 0 && c.loss >= 0,
              "cost model: the parts of a step must be >= 0, got F0 ", c.forward_no_grad, ", F ", c.forward, ", B ",
              c.backward, ", L ", c.loss);
  TORCH_CHECK(c.forward + c.backward > 0, "cost model: F + B must be positive (accumulation's cost)");
}

}  // namespace

double predicted_cache_over_accumulate(const StepCosts& c, double retained_share) {
  check(c);
  TORCH_CHECK(retained_share >= 0 && retained_share <= 1, "cost model: retained_share must be in [0, 1], got ",
              retained_share);
  return (c.forward_no_grad * (1 - retained_share) + c.forward + c.backward + c.loss) / (c.forward + c.backward);
}

double retained_share_for(const StepCosts& c, double target) {
  check(c);
  if (predicted_cache_over_accumulate(c, 0) <= target) return 0;
  if (predicted_cache_over_accumulate(c, 1) > target) return NAN;
  // Solve F0 (1 - s) + F + B + L = target (F + B) for s (F0 > 0 here, else share 0 held).
  const double share = 1 - (target * (c.forward + c.backward) - c.forward - c.backward - c.loss) / c.forward_no_grad;
  return std::clamp(share, 0.0, 1.0);
}

}  // namespace gradcache
