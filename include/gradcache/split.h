// Splitting a model input into chunks along dim 0.
#pragma once

#include <gradcache/model_input.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace gradcache {

/// Signature of a user split function: the input and the chunk size in, the chunks out.
using SplitInputFn = std::function<std::vector<ModelInput>(const ModelInput& input, int64_t chunk_size)>;

/// Splits every tensor of `input` along dim 0 into chunks of `chunk_size` rows (the last one
/// may be shorter), keeping the structure: tuples, lists and dicts are split element-wise.
/// Throws if the input holds no tensor, if its tensors disagree on dim 0, if it is empty,
/// or if it holds a value that cannot be split (a string, a number, ...): such inputs need a
/// split function (GradCacheOptions::split_input_fn).
std::vector<ModelInput> split_input(const ModelInput& input, int64_t chunk_size);

}  // namespace gradcache
