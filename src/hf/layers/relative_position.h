// T5's relative-position buckets (transformers' T5Attention._relative_position_bucket, which
// MPNet's MPNetEncoder.relative_position_bucket repeats): each query-key distance falls in one of
// a few buckets, exact for short distances and logarithmic up to max_distance; a learned table
// of per-head biases is then looked up by bucket.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace gradcache {
namespace hf {
namespace detail {

/// key position - query position for `length` tokens: [length, length] int64 on `like`'s device
/// (row: query, column: key), positions 0 .. length-1 on every row of the batch.
at::Tensor relative_positions(int64_t length, const at::Tensor& like);

/// The bucket of each relative position (key - query, int64) among `buckets`, as transformers
/// computes it, in the same dtypes (the logarithm in fp32) so that the same distances fall in
/// the same buckets. `bidirectional`: half the buckets for keys after the query, half for keys
/// before it (encoders); else keys after the query all share bucket 0 (decoders). Distances of
/// max_distance and more share the last bucket of their side.
at::Tensor relative_position_bucket(const at::Tensor& relative_position, bool bidirectional, int64_t buckets,
                                    int64_t max_distance);

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
