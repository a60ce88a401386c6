// The two sides of a retriever's texts: the prompt put before each query and each passage, and
// SGPT's bracket markers around them (--specb).
#include "retriever/model/tokenizer.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gradcache::retriever {

Tokenizer Tokenizer::with_prompts(Prompts prompts) const {
  Tokenizer t = *this;
  t.prompts_ = std::move(prompts);
  if (!t.prompts_.brackets) return t;
  if (!hf_) {
    throw std::invalid_argument("--specb (SGPT's bracket markers) needs a --model-dir model's tokenizer; the "
                                "sentencepiece tokenizer of the built-in encoder has no bracket tokens");
  }
  if (max_seq_length_ < hf_->num_special_tokens() + 3) {
    throw std::invalid_argument("--specb: tokenizer " + hf_->name() + " keeps " + std::to_string(max_seq_length_) +
                                " ids, which leaves no room for a token of text between the two brackets");
  }
  auto id_of = [&](const char* bracket) {
    const auto ids = hf_->encode(bracket, 0, /*add_special_tokens=*/false);
    if (ids.empty() || ids.front() == hf_->unk_id()) {
      throw std::invalid_argument(std::string("--specb: tokenizer ") + hf_->name() + " has no token for \"" + bracket +
                                  "\", so it cannot mark the sides with brackets; drop --specb");
    }
    return ids.front();  // as SGPT: tokenizer.encode(bracket, add_special_tokens=False)[0]
  };
  t.query_open_ = id_of("[");
  t.query_close_ = id_of("]");
  t.passage_open_ = id_of("{");
  t.passage_close_ = id_of("}");
  return t;
}

std::vector<int64_t> Tokenizer::encode_query(std::string_view text, size_t max_len) const {
  return encode_side(text, max_len, prompts_.query, query_open_, query_close_);
}

std::vector<int64_t> Tokenizer::encode_passage(std::string_view text, size_t max_len) const {
  return encode_side(text, max_len, prompts_.passage, passage_open_, passage_close_);
}

std::vector<int64_t> Tokenizer::encode_side(std::string_view text, size_t max_len, const std::string& prompt,
                                            int64_t open, int64_t close) const {
  if (!prompts_.brackets) return prompt.empty() ? encode(text, max_len) : encode(prompt + std::string(text), max_len);
  // with_prompts made sure of a Hugging Face tokenizer and room for the brackets
  const size_t cap = max_len == 0 ? max_seq_length_ : std::min(max_seq_length_, max_len);
  const size_t inner = std::max(cap, hf_->num_special_tokens() + 3) - 2;
  std::vector<int64_t> ids = encode(prompt + std::string(text), inner);
  ids.insert(ids.begin(), open);
  ids.push_back(close);
  return ids;
}

}  // namespace gradcache::retriever
