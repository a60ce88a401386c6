#include "retriever/batching.h"

#include <gradcache/split.h>

#include <ATen/ATen.h>

#include <algorithm>

namespace gradcache {
namespace retriever {

TokenBatch pad_batch(const std::vector<std::vector<int64_t>>& tokens, const std::vector<int64_t>& rows) {
  size_t longest = 1;
  for (auto r : rows) longest = std::max(longest, tokens.at(static_cast<size_t>(r)).size());
  auto ids = at::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(longest)}, at::kLong);
  auto mask = at::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(longest)}, at::kBool);
  auto ids_a = ids.accessor<int64_t, 2>();
  auto mask_a = mask.accessor<bool, 2>();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& seq = tokens[static_cast<size_t>(rows[i])];
    for (size_t j = 0; j < seq.size(); ++j) {
      ids_a[i][j] = seq[j];
      mask_a[i][j] = true;
    }
  }
  return {{"input_ids", ids}, {"attention_mask", mask}};
}

TokenBatch trim_padding(const TokenBatch& batch) {
  const auto& mask = batch.at("attention_mask");
  const int64_t longest = std::max<int64_t>(1, mask.sum(1).max().item<int64_t>());
  if (longest == mask.size(1)) return batch;
  TokenBatch out;
  for (const auto& [name, t] : batch) out.emplace(name, t.slice(1, 0, longest));
  return out;
}

std::vector<gradcache::ModelInput> split_and_trim(const gradcache::ModelInput& input, int64_t chunk_size) {
  auto chunks = gradcache::split_input(input, chunk_size);
  for (auto& chunk : chunks) {
    TORCH_CHECK(chunk.args().empty() && chunk.kwargs().count("input_ids") && chunk.kwargs().count("attention_mask"),
                "split_and_trim: expects keyword inputs input_ids and attention_mask");
    chunk = gradcache::ModelInput(trim_padding({{"input_ids", chunk.kwarg("input_ids")},
                                                {"attention_mask", chunk.kwarg("attention_mask")}}));
  }
  return chunks;
}

}  // namespace retriever
}  // namespace gradcache
