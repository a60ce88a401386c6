#include "hf/layers/relative_position.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cmath>

namespace gradcache {
namespace hf {
namespace detail {

at::Tensor relative_positions(int64_t length, const at::Tensor& like) {
  const at::Tensor position = at::arange(length, like.options().dtype(at::kLong));
  return position.view({1, length}) - position.view({length, 1});
}

at::Tensor relative_position_bucket(const at::Tensor& relative_position, bool bidirectional, int64_t buckets,
                                    int64_t max_distance) {
  TORCH_CHECK(buckets >= (bidirectional ? 4 : 2) && max_distance >= 1, "relative_position_bucket: ", buckets,
              " buckets up to distance ", max_distance, " leave no exact bucket");
  at::Tensor bucket = at::zeros_like(relative_position);
  at::Tensor distance;
  if (bidirectional) {
    buckets /= 2;
    bucket = bucket + relative_position.gt(0).to(at::kLong) * buckets;
    distance = relative_position.abs();
  } else {
    distance = -at::minimum(relative_position, at::zeros_like(relative_position));
  }
  const int64_t max_exact = buckets / 2;
  const at::Tensor is_small = distance.lt(max_exact);
  // transformers divides an fp32 tensor by Python numbers: each operand is rounded to fp32 as
  // here, so a distance on a bucket boundary lands on the same side. The logarithm of distance 0
  // is -inf, which the where() below discards.
  const double log_ratio = std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact));
  at::Tensor if_large =
      (at::log(distance.to(at::kFloat) / max_exact) / log_ratio * (buckets - max_exact)).to(at::kLong) + max_exact;
  if_large = at::minimum(if_large, at::full_like(if_large, buckets - 1));
  return bucket + at::where(is_small, distance, if_large);
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
