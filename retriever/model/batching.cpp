#include "retriever/model/batching.h"

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

TokenBatch on_device(TokenBatch batch, const c10::Device& device) {
  for (auto& [name, t] : batch) t = t.to(device);
  return batch;
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

gradcache::SplitInputFn split_by_tokens(int64_t max_tokens) {
  TORCH_CHECK(max_tokens > 0, "split_by_tokens: the token budget must be positive, got ", max_tokens);
  return [max_tokens](const gradcache::ModelInput& input, int64_t max_rows) {
    TORCH_CHECK(input.kwargs().count("input_ids") && input.kwargs().count("attention_mask"),
                "split_by_tokens: expects keyword inputs input_ids and attention_mask");
    const auto& ids = input.kwarg("input_ids");
    const auto& mask = input.kwarg("attention_mask");
    TORCH_CHECK(ids.size(0) > 0, "split_by_tokens: the input is empty (0 rows)");
    const auto lengths = mask.sum(1).to(at::kCPU).contiguous();
    const auto* len = lengths.data_ptr<int64_t>();
    std::vector<gradcache::ModelInput> chunks;
    int64_t start = 0, longest = 0;
    auto cut = [&](int64_t end) {
      chunks.emplace_back(trim_padding({{"input_ids", ids.slice(0, start, end)},
                                        {"attention_mask", mask.slice(0, start, end)}}));
      start = end;
      longest = 0;
    };
    for (int64_t row = 0; row < ids.size(0); ++row) {
      const int64_t grown = std::max(longest, std::max<int64_t>(1, len[row]));
      if (row > start && ((row - start + 1) * grown > max_tokens || row - start >= max_rows)) {
        cut(row);
        longest = std::max<int64_t>(1, len[row]);
      } else {
        longest = grown;
      }
    }
    cut(ids.size(0));
    return chunks;
  };
}

std::vector<int64_t> sorted_by_length(const std::vector<std::vector<int64_t>>& tokens, std::vector<int64_t> rows) {
  std::stable_sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) {
    return tokens[static_cast<size_t>(a)].size() < tokens[static_cast<size_t>(b)].size();
  });
  return rows;
}

}  // namespace retriever
}  // namespace gradcache
