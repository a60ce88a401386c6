// The tokenizer of a model directory without tokenizer.json: vocab.txt with tokenizer_config.json
// (and special_tokens_map.json), read as transformers' BertTokenizer reads them. It builds the
// tokenizer.json that BertTokenizer builds in memory (the same normaliser, pre-tokeniser,
// WordPiece and template), so both paths share one reader.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "files/atomic_file.h"
#include "gradcache/hf/tokenizer.h"
#include "hf/json_fields.h"
#include "hf/tokenizer_state.h"
#include "hf/unicode.h"

namespace gradcache::hf {
namespace detail {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxVocabLines = size_t{1} << 22;  // as the tokenizer.json reader's kMaxWordPieceVocabSize
constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{1} << 30;

/// The tokens of vocab.txt by line, as `tokenizers`' WordPiece::read_file reads them: lines split
/// at '\n', each with its trailing white space removed.
std::vector<std::string> read_vocab_lines(std::string_view text, const std::string& name) {
  const size_t lines =
      static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + (!text.empty() && text.back() != '\n' ? 1 : 0);
  if (lines > kMaxVocabLines)
    fail(Source{name, ""}, std::to_string(lines) + " lines, more than the " + std::to_string(kMaxVocabLines) +
                               " tokens this reader accepts; is it a vocab.txt?");
  std::vector<std::string> tokens;
  tokens.reserve(lines);
  std::unordered_map<std::string, size_t> line_of;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const Source line{name, "line " + std::to_string(tokens.size() + 1)};
    const std::string_view bytes = text.substr(begin, end - begin);
    if (const auto bad = unicode::find_invalid_utf8(bytes))
      fail(line, "byte " + std::to_string(*bad + 1) + " is not UTF-8; vocab.txt is UTF-8 text");
    std::u32string token = unicode::decode_utf8(bytes);
    while (!token.empty() && unicode::is_whitespace(token.back())) token.pop_back();
    std::string utf8 = unicode::encode_utf8(token);
    const auto [it, fresh] = line_of.emplace(utf8, tokens.size() + 1);
    if (!fresh)
      fail(line, "repeats the token " + quote_for_message(utf8) + " of line " + std::to_string(it->second) +
                     "; each token must have one line (its line number is its id)");
    tokens.push_back(std::move(utf8));
    begin = end + 1;
  }
  if (tokens.empty()) fail(Source{name, ""}, "is empty; vocab.txt has one token a line");
  return tokens;
}

Json parse_json_object(std::string_view text, const Source& source) {
  if (text.empty()) return Json::object();
  Json value;
  try {
    value = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    fail(source, std::string("not valid JSON (") + e.what() + ")");
  }
  expect_object(value, source);
  return value;
}

Side read_side(const Json& config, const char* key, const Source& source) {
  const std::string side = read_string(config, key, source, "right");
  if (side != "left" && side != "right")
    fail(source.at(key), quote_for_message(side) + " is not \"left\" or \"right\"");
  return side == "left" ? Side::kLeft : Side::kRight;
}

/// A special token as tokenizer_config.json names it: a string, or an AddedToken object.
std::optional<std::string> special_token(const Json& config, const char* key, const Source& source) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return read_string(*it, "content", source.at(key));
  fail(source.at(key), "expected a string or {\"content\": ...}, found " + describe_json(*it));
}

void check_tokenizer_class(const Json& config, const Source& source) {
  static const char* const kBertClasses[] = {"BertTokenizer",           "BertTokenizerFast", "DistilBertTokenizer",
                                             "DistilBertTokenizerFast", "ElectraTokenizer",  "ElectraTokenizerFast"};
  const auto it = config.find("tokenizer_class");
  if (it == config.end() || it->is_null()) return;
  const std::string name = it->is_string() ? it->get<std::string>() : it->dump();
  for (const char* bert : kBertClasses)
    if (name == bert) return;
  fail(source.at("tokenizer_class"),
       quote_for_message(name) +
           " cannot be read from vocab.txt here (supported: BertTokenizer, DistilBertTokenizer, "
           "ElectraTokenizer and their Fast forms); give the model's tokenizer.json instead");
}

struct Specials {
  std::string unk, sep, pad, cls, mask;
};

Specials read_specials(const Json& config, const Source& config_source, const Json& map, const Source& map_source) {
  const auto pick = [&](const char* key, const char* fallback) {
    if (auto value = special_token(config, key, config_source)) return *value;
    if (auto value = special_token(map, key, map_source)) return *value;
    return std::string(fallback);
  };
  return {pick("unk_token", "[UNK]"), pick("sep_token", "[SEP]"), pick("pad_token", "[PAD]"),
          pick("cls_token", "[CLS]"), pick("mask_token", "[MASK]")};
}

Json special_piece(const std::string& token, int type_id) {
  return Json{{"SpecialToken", Json{{"id", token}, {"type_id", type_id}}}};
}

Json sequence_piece(const char* id, int type_id) { return Json{{"Sequence", Json{{"id", id}, {"type_id", type_id}}}}; }

// BertTokenizer's template: "[CLS]:0 $A:0 [SEP]:0" and "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1".
Json bert_template(const Specials& specials, int64_t cls_id, int64_t sep_id) {
  return Json{
      {"type", "TemplateProcessing"},
      {"single", Json::array({special_piece(specials.cls, 0), sequence_piece("A", 0), special_piece(specials.sep, 0)})},
      {"pair", Json::array({special_piece(specials.cls, 0), sequence_piece("A", 0), special_piece(specials.sep, 0),
                            sequence_piece("B", 1), special_piece(specials.sep, 1)})},
      {"special_tokens",
       Json{{specials.cls, Json{{"id", specials.cls}, {"ids", {cls_id}}, {"tokens", {specials.cls}}}},
            {specials.sep, Json{{"id", specials.sep}, {"ids", {sep_id}}, {"tokens", {specials.sep}}}}}}};
}

// The added tokens as BertTokenizer makes them: those of tokenizer_config.json's
// added_tokens_decoder (which must be lines of vocab.txt), then the named special tokens in
// transformers' order, special and not normalised; one missing from vocab.txt gets the next id.
Json added_tokens(const Json& config, const Source& config_source, const Specials& specials,
                  const std::unordered_map<std::string, int64_t>& ids) {
  Json added = Json::array();
  std::unordered_map<std::string, bool> present;
  const auto decoder = config.find("added_tokens_decoder");
  if (decoder != config.end() && !decoder->is_null()) {
    const Source where = config_source.at("added_tokens_decoder");
    expect_object(*decoder, where);
    for (const auto& [id_text, entry] : decoder->items()) {
      const Source at = where.at(id_text);
      expect_object(entry, at);
      const std::string content = read_string(entry, "content", at);
      const auto id = ids.find(content);
      if (id == ids.end())
        fail(at, "the token " + quote_for_message(content) +
                     " is not in vocab.txt; tokens beyond vocab.txt are read from tokenizer.json only");
      if (std::to_string(id->second) != id_text)
        fail(at, "the token " + quote_for_message(content) + " has the id " + id_text + " here but " +
                     std::to_string(id->second) + " in vocab.txt (its line number - 1)");
      Json token = entry;
      token["id"] = id->second;
      added.push_back(std::move(token));
      present[content] = true;
    }
  }
  auto next_id = static_cast<int64_t>(ids.size());
  for (const std::string* token : {&specials.unk, &specials.sep, &specials.pad, &specials.cls, &specials.mask}) {
    if (present[*token]) continue;
    present[*token] = true;
    const auto id = ids.find(*token);
    added.push_back(Json{{"id", id != ids.end() ? id->second : next_id++},
                         {"content", *token},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", true}});
  }
  return added;
}

Json vocab_object(const std::vector<std::string>& tokens) {
  Json vocab = Json::object();
  for (size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = id;
  return vocab;
}

}  // namespace

std::unique_ptr<TokenizerState> tokenizer_from_vocab(std::string_view vocab_txt, const std::string& vocab_name,
                                                     std::string_view config_json, const std::string& config_name,
                                                     std::string_view map_json, const std::string& map_name) {
  const Source config_source{config_name, ""};
  const Json config = parse_json_object(config_json, config_source);
  const Json map = parse_json_object(map_json, Source{map_name, ""});
  check_tokenizer_class(config, config_source);
  const std::vector<std::string> tokens = read_vocab_lines(vocab_txt, vocab_name);
  const Specials specials = read_specials(config, config_source, map, Source{map_name, ""});
  std::unordered_map<std::string, int64_t> ids;
  for (size_t id = 0; id < tokens.size(); ++id) ids.emplace(tokens[id], static_cast<int64_t>(id));
  for (const auto& [role, token] : {std::pair<const char*, const std::string*>{"unknown", &specials.unk},
                                    {"classifier", &specials.cls},
                                    {"separator", &specials.sep}})
    if (ids.count(*token) == 0)
      fail(Source{vocab_name, ""}, std::string("has no line ") + quote_for_message(*token) + " (the " + role +
                                       " token); a BERT vocabulary needs its [UNK], [CLS] and [SEP] tokens");
  const std::optional<bool> strip_accents = read_optional_bool(config, "strip_accents", config_source);
  Json root{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added_tokens(config, config_source, specials, ids)},
      {"normalizer", Json{{"type", "BertNormalizer"},
                          {"clean_text", true},
                          {"handle_chinese_chars", read_bool(config, "tokenize_chinese_chars", config_source, true)},
                          {"strip_accents", strip_accents ? Json(*strip_accents) : Json(nullptr)},
                          {"lowercase", read_bool(config, "do_lower_case", config_source, true)}}},
      {"pre_tokenizer", Json{{"type", "BertPreTokenizer"}}},
      {"post_processor", bert_template(specials, ids.at(specials.cls), ids.at(specials.sep))},
      {"decoder", Json{{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model", Json{{"type", "WordPiece"},
                     {"unk_token", specials.unk},
                     {"continuing_subword_prefix", "##"},
                     {"max_input_chars_per_word", 100},
                     {"vocab", vocab_object(tokens)}}}};
  std::unique_ptr<TokenizerState> state = tokenizer_from_json(root, Source{vocab_name, ""});
  state->pad_id = state->added->token_to_id(specials.pad).value_or(-1);
  return state;
}

namespace {

std::string read_file(const fs::path& path) {
  if (const auto problem = files::regular_file_problem(path.string()); !problem.empty())
    throw TokenizerError(unicode::printable_utf8(path.string()) + ": " + problem);
  std::error_code error;
  const std::uintmax_t size = fs::file_size(path, error);
  if (error) throw TokenizerError(unicode::printable_utf8(path.string()) + ": cannot be read: " + error.message());
  if (size > kMaxFileBytes)
    throw TokenizerError(unicode::printable_utf8(path.string()) + ": " + std::to_string(size) +
                         " bytes, too large for a tokenizer file (at most 1 GiB)");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw TokenizerError(unicode::printable_utf8(path.string()) + ": cannot be read");
  return text.str();
}

bool file_exists(const fs::path& path) {
  std::error_code error;
  return fs::exists(path, error);
}

std::string read_if_present(const fs::path& path) { return file_exists(path) ? read_file(path) : std::string(); }

}  // namespace
}  // namespace detail

namespace detail {

void apply_tokenizer_config(TokenizerState& state, std::string_view config_json, const std::string& config_name) {
  const Source source{config_name, ""};
  const Json config = parse_json_object(config_json, source);
  if (config.contains("padding_side")) state.padding_side = read_side(config, "padding_side", source);
  if (config.contains("truncation_side")) state.truncation_side = read_side(config, "truncation_side", source);
  const auto length = config.find("model_max_length");
  // transformers writes int(1e30) (VERY_LARGE_INTEGER) for a model without a limit.
  if (length != config.end() && length->is_number_unsigned() && length->get<uint64_t>() <= UINT32_MAX)
    state.model_max_length = length->get<uint64_t>();
  // The pad token transformers pads with (one the vocabulary does not hold is left to the
  // padding section: transformers would fail on it). Written into the padding section, so that
  // to_json() keeps it and the side (a checkpoint, an export) and from_json() reads them back.
  if (const auto pad = special_token(config, "pad_token", source)) {
    std::optional<int64_t> id = state.added->token_to_id(*pad);
    if (!id) id = state.model->token_to_id(*pad);
    if (id) state.pad_id = *id;
  }
  if (state.pad_id >= 0 && (config.contains("pad_token") || config.contains("padding_side"))) {
    if (!state.padding.is_object())
      state.padding = Json{{"strategy", "BatchLongest"}, {"pad_to_multiple_of", nullptr}, {"pad_type_id", 0}};
    state.padding["direction"] = state.padding_side == Side::kLeft ? "Left" : "Right";
    state.padding["pad_id"] = state.pad_id;
    const std::string* token = state.added->id_to_token(state.pad_id);
    if (token == nullptr) token = state.model->id_to_token(state.pad_id);
    if (token != nullptr) state.padding["pad_token"] = *token;
  }
}

}  // namespace detail

Tokenizer Tokenizer::from_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  std::error_code error;
  if (!fs::is_directory(root, error))
    throw TokenizerError(unicode::printable_utf8(dir) +
                         ": not a directory; give the model directory that holds tokenizer.json or vocab.txt");
  const fs::path json = root / "tokenizer.json";
  const fs::path config = root / "tokenizer_config.json";
  if (detail::file_exists(json)) {
    std::unique_ptr<detail::TokenizerState> state = detail::parse_tokenizer_json(files::read_file(json), json.string());
    detail::apply_tokenizer_config(*state, detail::read_if_present(config), config.string());
    return Tokenizer(std::move(state));
  }
  const fs::path vocab = root / "vocab.txt";
  if (!detail::file_exists(vocab))
    throw TokenizerError(
        unicode::printable_utf8(dir) +
        ": holds neither tokenizer.json nor vocab.txt; a Hugging Face model directory has one of them");
  const fs::path map = root / "special_tokens_map.json";
  const std::string config_text = detail::read_if_present(config);
  std::unique_ptr<detail::TokenizerState> state = detail::tokenizer_from_vocab(
      files::read_file(vocab), vocab.string(), config_text, config.string(), detail::read_if_present(map), map.string());
  detail::apply_tokenizer_config(*state, config_text, config.string());
  return Tokenizer(std::move(state));
}

Tokenizer Tokenizer::from_vocab(std::string_view vocab_txt, std::string_view tokenizer_config_json,
                                const std::string& name, std::string_view special_tokens_map_json) {
  return Tokenizer(detail::tokenizer_from_vocab(vocab_txt, name, tokenizer_config_json,
                                                name + " (tokenizer_config.json)", special_tokens_map_json,
                                                name + " (special_tokens_map.json)"));
}

}  // namespace gradcache::hf
