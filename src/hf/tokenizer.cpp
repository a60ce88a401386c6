// The encoding pipeline of `tokenizers` (TokenizerImpl::encode_single_sequence and post_process)
// for one text: added tokens out of the raw text; each remaining piece normalised, the
// normalized=true added tokens out of it, pre-tokenised into words, each word through the model;
// then truncation and the post-processor's special tokens.
#include "gradcache/hf/tokenizer.h"

#include "hf/tokenizer_state.h"
#include "hf/unicode.h"

namespace gradcache::hf {
namespace {

using detail::TextPiece;
using detail::TokenizerState;
using detail::Words;

// One piece of normalised text (between added tokens) through the pre-tokeniser and the model.
// `at_origin`: the piece begins where the text begins (Metaspace's prepend_scheme "first").
void tokenize_normalized(const TokenizerState& state, std::u32string_view text, bool at_origin,
                         std::vector<int64_t>& ids) {
  if (text.empty()) return;
  if (!state.pre_tokenizer) {
    state.model->tokenize(text, ids);
    return;
  }
  thread_local Words words;
  words.clear();
  state.pre_tokenizer->split(text, at_origin, words);
  for (size_t i = 0; i < words.size(); ++i) state.model->tokenize(words[i], ids);
}

std::vector<int64_t> piece_ids(const TokenizerState& state, std::string_view text) {
  const std::u32string chars = unicode::decode_utf8(text);
  std::vector<int64_t> ids;
  std::vector<TextPiece> raw_pieces;
  state.added->split(chars, false, raw_pieces);
  std::vector<TextPiece> pieces;
  for (const TextPiece& raw : raw_pieces) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      continue;
    }
    std::u32string segment = chars.substr(raw.begin, raw.end - raw.begin);
    // How many leading characters of the normalised segment `tokenizers` aligns with the
    // segment's original start (1 before normalising: the first). A piece of it begins where the
    // text begins (offsets_original().0 == 0, which Metaspace's prepend_scheme "first" asks)
    // when the segment does and the piece begins among those characters: a normaliser that
    // drops or merges the first characters (Strip on "  hi") moves the start off the text's.
    size_t at_origin = 1;
    if (state.normalizer) at_origin = state.normalizer->normalize(segment, at_origin);
    pieces.clear();
    state.added->split(segment, true, pieces);
    for (const TextPiece& piece : pieces) {
      if (piece.id >= 0) {
        ids.push_back(piece.id);
      } else {
        tokenize_normalized(state, std::u32string_view(segment).substr(piece.begin, piece.end - piece.begin),
                            raw.begin == 0 && piece.begin < at_origin, ids);
      }
    }
  }
  return ids;
}

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const detail::TokenizerState> state) : state_(std::move(state)) {}

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, const std::string& name) {
  return Tokenizer(detail::parse_tokenizer_json(tokenizer_json, name));
}

std::vector<int64_t> Tokenizer::encode(std::string_view text, size_t max_len, bool add_special_tokens) const {
  const size_t added = add_special_tokens ? num_special_tokens() : 0;
  if (max_len > 0 && max_len < added)
    throw std::invalid_argument("Tokenizer::encode: max_len " + std::to_string(max_len) + " leaves no room for the " +
                                std::to_string(added) + " special tokens of " + state_->name + "; give at least " +
                                std::to_string(added) + " (or 0: no truncation)");
  std::vector<int64_t> ids = piece_ids(*state_, text);
  if (max_len > 0 && ids.size() > max_len - added) {
    const size_t keep = max_len - added;
    if (state_->truncation_side == Side::kLeft) ids.erase(ids.begin(), ids.end() - static_cast<ptrdiff_t>(keep));
    ids.resize(keep);
  }
  return add_special_tokens && state_->post_processor ? state_->post_processor->process(ids) : ids;
}

std::vector<std::string> Tokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> pieces;
  for (const int64_t id : piece_ids(*state_, text)) pieces.push_back(id_to_token(id).value_or(""));
  return pieces;
}

std::optional<std::string> Tokenizer::id_to_token(int64_t id) const {
  const std::string* token = state_->added->id_to_token(id);
  if (token == nullptr) token = state_->model->id_to_token(id);
  return token != nullptr ? std::optional<std::string>(*token) : std::nullopt;
}

std::string Tokenizer::to_json() const { return detail::write_tokenizer_json(*state_); }

int64_t Tokenizer::vocab_size() const { return state_->vocab_size; }

std::optional<int64_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto id = state_->added->token_to_id(token)) return id;
  return state_->model->token_to_id(token);
}

int64_t Tokenizer::pad_id() const { return state_->pad_id; }
int64_t Tokenizer::cls_id() const { return state_->post_processor ? state_->post_processor->before_id() : -1; }
int64_t Tokenizer::sep_id() const { return state_->post_processor ? state_->post_processor->after_id() : -1; }
int64_t Tokenizer::unk_id() const { return state_->model->unk_id(); }

size_t Tokenizer::num_special_tokens() const {
  return state_->post_processor ? state_->post_processor->added_tokens() : 0;
}

std::optional<size_t> Tokenizer::truncation_max_length() const { return state_->truncation_max_length; }
Side Tokenizer::padding_side() const { return state_->padding_side; }
Side Tokenizer::truncation_side() const { return state_->truncation_side; }
std::optional<size_t> Tokenizer::model_max_length() const { return state_->model_max_length; }
const std::string& Tokenizer::name() const { return state_->name; }

std::string lower_case(std::string_view text) {
  std::u32string lowered;
  for (char32_t c : unicode::decode_utf8(text)) unicode::append_lowercase(lowered, c);
  return unicode::encode_utf8(lowered);
}

}  // namespace gradcache::hf
