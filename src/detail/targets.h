// Each query's positive column, shared by the dense and streaming losses and the dual cache:
// the stride-(1 + k) layout, or explicit targets.
#pragma once

#include <ATen/ATen.h>

#include <string>

namespace gradcache {
namespace detail {

/// The positive column of each of `n` queries among `m` passages, int64 [n] on `device`:
/// `target` if defined (checked), else i * (1 + k) with m = n * (1 + k). `who` starts messages.
inline at::Tensor positive_columns(const at::Tensor& target, int64_t n, int64_t m, const c10::Device& device,
                                   const std::string& who) {
  if (!target.defined()) {
    TORCH_CHECK(m % n == 0, who, ": ", m, " passages for ", n, " queries: the number of passages must be ",
                "a multiple of the number of queries (each query's positive followed by its k hard negatives); ",
                "pass explicit targets for other layouts");
    return at::arange(0, m, m / n, at::TensorOptions().dtype(at::kLong).device(device));
  }
  TORCH_CHECK(target.dim() == 1 && target.size(0) == n, who, ": target must have one entry per query (", n,
              "), got shape ", target.sizes());
  TORCH_CHECK(target.scalar_type() == at::kLong, who, ": target must be int64, got ", target.scalar_type());
  if (n > 0) {
    const auto lo = target.min().item<int64_t>(), hi = target.max().item<int64_t>();
    TORCH_CHECK(lo >= 0 && hi < m, who, ": target entries must be passage rows in [0, ", m, "), got [", lo, ", ", hi,
                "]");
  }
  return target.to(device);
}

}  // namespace detail
}  // namespace gradcache
