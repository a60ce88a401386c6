// Reading and writing tokenizer.json, the file `tokenizers` saves a whole tokenizer in: the
// components by their "type" (component_registry.cpp), the added tokens with the ids `tokenizers`
// gives them, the truncation and padding sections (kept, not applied by encode()), the decoder
// (kept as it is: encode() never decodes).
#include <algorithm>
#include <unordered_map>

#include "hf/json_fields.h"
#include "hf/tokenizer_state.h"

namespace gradcache::hf::detail {
namespace {

/// More added tokens than this is not a tokenizer anyone trained (real ones have a few hundred).
constexpr size_t kMaxAddedTokens = size_t{1} << 20;

template <class Component>
std::unique_ptr<Component> optional_component(const Json& root, const char* key, const Source& source,
                                              std::unique_ptr<Component> (*make)(const Json&, const Source&)) {
  const auto it = root.find(key);
  if (it == root.end() || it->is_null()) return nullptr;
  return make(*it, source.at(key));
}

AddedToken read_added_token(const Json& entry, const Source& where) {
  expect_object(entry, where);
  AddedToken token;
  token.content = read_string(entry, "content", where);
  token.single_word = read_bool(entry, "single_word", where, false);
  token.lstrip = read_bool(entry, "lstrip", where, false);
  token.rstrip = read_bool(entry, "rstrip", where, false);
  token.normalized = read_bool(entry, "normalized", where, true);
  token.special = read_bool(entry, "special", where, false);
  return token;
}

// `tokenizers` does not take the ids of "added_tokens" from the file: a token of the model's
// vocabulary has its id there, another the next id after the vocabulary. A file whose ids say
// otherwise was edited by hand or made for another vocabulary, so it is refused.
std::vector<AddedToken> read_added_tokens(const Json& root, const Source& source, const Model& model) {
  const auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return {};
  const Source where = source.at("added_tokens");
  if (!it->is_array()) fail(where, "expected an array, found " + describe_json(*it));
  if (it->size() > kMaxAddedTokens)
    fail(where, std::to_string(it->size()) + " added tokens, more than the " + std::to_string(kMaxAddedTokens) +
                    " this reader accepts");
  std::vector<AddedToken> tokens;
  std::unordered_map<std::string, size_t> by_content;
  int64_t next_id = model.size();
  for (size_t i = 0; i < it->size(); ++i) {
    const Source at = where.at(std::to_string(i));
    AddedToken token = read_added_token((*it)[i], at);
    const auto declared = static_cast<int64_t>(read_count((*it)[i], "id", at, std::nullopt, UINT32_MAX));
    if (token.content.empty()) continue;  // `tokenizers` skips it too
    const auto known = by_content.find(token.content);
    if (known != by_content.end()) {
      token.id = tokens[known->second].id;
      tokens[known->second] = token;  // the later flags win
    } else {
      token.id = model.token_to_id(token.content).value_or(next_id);
      if (token.id == next_id) ++next_id;
      by_content.emplace(token.content, tokens.size());
      tokens.push_back(token);
    }
    if (declared != token.id)
      fail(at, "the token " + quote_for_message(token.content) + " has the id " + std::to_string(declared) +
                   ", but `tokenizers` gives it " + std::to_string(token.id) +
                   " (its id in the model's vocabulary, else the next one after it): the ids disagree with the "
                   "vocabulary; re-save the tokenizer with `tokenizers`");
  }
  return tokens;
}

void read_truncation(TokenizerState& state, const Json& root, const Source& source) {
  const auto it = root.find("truncation");
  if (it == root.end() || it->is_null()) return;
  const Source where = source.at("truncation");
  expect_object(*it, where);
  state.truncation_max_length = read_count(*it, "max_length", where, std::nullopt, UINT32_MAX);
  read_count(*it, "stride", where, std::nullopt, UINT32_MAX);
  const std::string strategy = read_string(*it, "strategy", where);
  if (strategy != "LongestFirst" && strategy != "OnlyFirst" && strategy != "OnlySecond")
    fail(where.at("strategy"), quote_for_message(strategy) + " is not LongestFirst, OnlyFirst or OnlySecond");
  const std::string direction = read_string(*it, "direction", where, "Right");
  if (direction != "Left" && direction != "Right")
    fail(where.at("direction"), quote_for_message(direction) + " is not Left or Right");
  state.truncation_side = direction == "Left" ? Side::kLeft : Side::kRight;
  state.truncation = *it;
}

void read_padding(TokenizerState& state, const Json& root, const Source& source) {
  const auto it = root.find("padding");
  if (it != root.end() && !it->is_null()) {
    const Source where = source.at("padding");
    expect_object(*it, where);
    state.pad_id = static_cast<int64_t>(read_count(*it, "pad_id", where, 0, UINT32_MAX));
    const std::string direction = read_string(*it, "direction", where, "Right");
    if (direction != "Left" && direction != "Right")
      fail(where.at("direction"), quote_for_message(direction) + " is not Left or Right");
    state.padding_side = direction == "Left" ? Side::kLeft : Side::kRight;
    if (state.pad_id >= state.vocab_size)
      fail(where.at("pad_id"), "the id " + std::to_string(state.pad_id) + " is out of range: the vocabulary has " +
                                   std::to_string(state.vocab_size) + " ids");
    state.padding = *it;
    return;
  }
  // Without a padding section, the pad token of BERT's vocabulary.
  std::optional<int64_t> pad = state.added->token_to_id("[PAD]");
  if (!pad) pad = state.model->token_to_id("[PAD]");
  state.pad_id = pad.value_or(-1);
}

void read_version(const Json& root, const Source& source) {
  const auto it = root.find("version");
  if (it == root.end()) return;
  if (!it->is_string() || it->get<std::string>() != "1.0")
    fail(source.at("version"),
         "unknown tokenizer.json version " + quote_for_message(it->dump()) + " (`tokenizers` writes \"1.0\")");
}

template <class Sorted>
OrderedJson ordered(const Sorted& value) {
  return value.is_null() ? OrderedJson(nullptr) : OrderedJson::parse(value.dump());
}

}  // namespace

std::unique_ptr<TokenizerState> tokenizer_from_json(const Json& root, const Source& source) {
  expect_object(root, source);
  read_version(root, source);
  auto state = std::make_unique<TokenizerState>();
  state->name = source.file;
  state->model = make_model(require_field(root, "model", source), source.at("model"));
  state->normalizer = optional_component(root, "normalizer", source, make_normalizer);
  state->pre_tokenizer = optional_component(root, "pre_tokenizer", source, make_pre_tokenizer);
  state->post_processor = optional_component(root, "post_processor", source, make_post_processor);
  std::vector<AddedToken> added = read_added_tokens(root, source, *state->model);
  state->vocab_size = state->model->size();
  for (const AddedToken& token : added) state->vocab_size = std::max(state->vocab_size, token.id + 1);
  state->added = std::make_unique<AddedVocabulary>(std::move(added), state->normalizer.get());
  if (state->post_processor && state->post_processor->max_id() >= state->vocab_size)
    fail(source.at("post_processor"), "adds the id " + std::to_string(state->post_processor->max_id()) +
                                          ", out of range: the vocabulary has " + std::to_string(state->vocab_size) +
                                          " ids");
  read_truncation(*state, root, source);
  read_padding(*state, root, source);
  const auto decoder = root.find("decoder");
  if (decoder != root.end()) state->decoder = *decoder;
  return state;
}

std::unique_ptr<TokenizerState> parse_tokenizer_json(std::string_view text, const std::string& name) {
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    fail(Source{name, ""}, std::string("not valid JSON (") + e.what() + "); is it a tokenizer.json?");
  }
  return tokenizer_from_json(root, Source{name, ""});
}

std::string write_tokenizer_json(const TokenizerState& state) {
  OrderedJson root;
  root["version"] = "1.0";
  root["truncation"] = ordered(state.truncation);
  root["padding"] = ordered(state.padding);
  OrderedJson added = OrderedJson::array();
  for (const AddedToken& token : state.added->tokens())
    added.push_back(OrderedJson{{"id", token.id},
                                {"content", token.content},
                                {"single_word", token.single_word},
                                {"lstrip", token.lstrip},
                                {"rstrip", token.rstrip},
                                {"normalized", token.normalized},
                                {"special", token.special}});
  root["added_tokens"] = std::move(added);
  root["normalizer"] = state.normalizer ? state.normalizer->to_json() : OrderedJson(nullptr);
  root["pre_tokenizer"] = state.pre_tokenizer ? state.pre_tokenizer->to_json() : OrderedJson(nullptr);
  root["post_processor"] = state.post_processor ? state.post_processor->to_json() : OrderedJson(nullptr);
  root["decoder"] = ordered(state.decoder);
  root["model"] = state.model->to_json();
  return root.dump(2);
}

}  // namespace gradcache::hf::detail
