// Token id lists into padded model inputs, and chunks padded only to their own length.
#pragma once

#include "retriever/model/encoders.h"

#include <gradcache/model_input.h>
#include <gradcache/split.h>

#include <cstdint>
#include <vector>

namespace gradcache {
namespace retriever {

/// Pads the sequences `rows` of `tokens` (in that order) into a TokenBatch, to the longest of
/// them. Padding id 0, attention mask true on real tokens.
TokenBatch pad_batch(const std::vector<std::vector<int64_t>>& tokens, const std::vector<int64_t>& rows);

/// `batch` with every tensor on `device`.
TokenBatch on_device(TokenBatch batch, const c10::Device& device);

/// Drops the columns that are padding in every row.
TokenBatch trim_padding(const TokenBatch& batch);

/// A GradCache split function for token batches: splits along dim 0 like
/// gradcache::split_input, then trims each chunk to its own longest sequence, so a chunk of
/// short texts is not padded to the longest text of the whole batch. Chunks are views.
std::vector<gradcache::ModelInput> split_and_trim(const gradcache::ModelInput& input, int64_t chunk_size);

/// A GradCache split function bounding chunks by tokens instead of rows: consecutive rows
/// join a chunk while (rows x its longest sequence) stays within `max_tokens` and rows within
/// the chunk size GradCache passes; each chunk is trimmed as by split_and_trim. Rows keep
/// their order (the cache concatenates chunk representations in order), so sort a batch by
/// length first to get chunks of similar lengths. A row longer than max_tokens is a chunk.
gradcache::SplitInputFn split_by_tokens(int64_t max_tokens);

/// The order of `rows` by their token count (stable): chunks of similar lengths pad less.
std::vector<int64_t> sorted_by_length(const std::vector<std::vector<int64_t>>& tokens, std::vector<int64_t> rows);

}  // namespace retriever
}  // namespace gradcache
