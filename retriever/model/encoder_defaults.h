// The built-in Transformer encoder's default shape, declared once: the model's options
// (EncoderOptions, model/encoders.h) and the program's flags (EncoderSettings,
// config/train_config.h) both start from it. Small on purpose: the built-in encoder trains
// from scratch in seconds on a 2-core machine; a real model comes from --model-dir.
#pragma once

#include <cstdint>

namespace gradcache {
namespace retriever {
namespace encoder_defaults {

constexpr int64_t vocab_size = 8000;  ///< also the trained tokenizer's vocabulary (--vocab-size)
constexpr int64_t dim = 64;
constexpr int64_t layers = 1;
constexpr int64_t heads = 4;
constexpr int64_t ffn_dim = 128;
constexpr int64_t projection_dim = 0;  ///< 0: no projection after pooling
constexpr double dropout = 0.1;
constexpr bool normalize = true;  ///< L2-normalise the output (cosine similarity)

}  // namespace encoder_defaults
}  // namespace retriever
}  // namespace gradcache
