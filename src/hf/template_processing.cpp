// TemplateProcessing, as `tokenizers` (processors/template.rs) runs it for one sequence: the
// "single" template's pieces in order, $A being the text's ids and each special token its ids.
// The "pair" template is kept for to_json() (encode() takes one text).
#include <algorithm>
#include <map>

#include "hf/components.h"
#include "hf/json_fields.h"

namespace gradcache::hf::detail {
namespace {

struct TemplatePiece {
  bool is_sequence;  // $A / $B, else a special token
  std::string id;    // "A" / "B", or the special token's name
  uint64_t type_id;
};

struct SpecialToken {
  std::vector<int64_t> ids;
  std::vector<std::string> tokens;
};

TemplatePiece read_piece(const Json& value, const Source& source) {
  expect_object(value, source);
  if (value.size() != 1 || (!value.contains("Sequence") && !value.contains("SpecialToken")))
    fail(source, "a template piece is {\"Sequence\": {...}} or {\"SpecialToken\": {...}}");
  const bool is_sequence = value.contains("Sequence");
  const Source inner = source.at(is_sequence ? "Sequence" : "SpecialToken");
  const Json& body = value.begin().value();
  expect_object(body, inner);
  TemplatePiece piece{is_sequence, read_string(body, "id", inner),
              read_count(body, "type_id", inner, std::nullopt, UINT32_MAX)};
  if (is_sequence && piece.id != "A" && piece.id != "B")
    fail(inner.at("id"), "a sequence is \"A\" or \"B\", not " + quote_for_message(piece.id));
  return piece;
}

std::vector<TemplatePiece> read_template(const Json& config, const char* key, const Source& source) {
  const Json& value = require_field(config, key, source);
  const Source where = source.at(key);
  if (!value.is_array()) fail(where, "expected an array of pieces, found " + describe_json(value));
  std::vector<TemplatePiece> pieces;
  for (size_t i = 0; i < value.size(); ++i) pieces.push_back(read_piece(value[i], where.at(std::to_string(i))));
  return pieces;
}

std::map<std::string, SpecialToken> read_special_tokens(const Json& value, const Source& source) {
  expect_object(value, source);
  std::map<std::string, SpecialToken> specials;
  for (const auto& [name, body] : value.items()) {
    const Source where = source.at(name);
    expect_object(body, where);
    const Json& ids = require_field(body, "ids", where);
    const Json& tokens = require_field(body, "tokens", where);
    if (!ids.is_array() || !tokens.is_array() || ids.size() != tokens.size())
      fail(where, "\"ids\" and \"tokens\" must be arrays of the same length");
    SpecialToken special;
    for (size_t i = 0; i < ids.size(); ++i) {
      special.ids.push_back(static_cast<int64_t>(as_count(ids[i], where.at("ids"), UINT32_MAX)));
      if (!tokens[i].is_string()) fail(where.at("tokens"), "expected strings, found " + describe_json(tokens[i]));
      special.tokens.push_back(tokens[i].get<std::string>());
    }
    specials.emplace(name, std::move(special));
  }
  return specials;
}

class TemplateProcessing final : public PostProcessor {
 public:
  TemplateProcessing(std::vector<TemplatePiece> single, std::vector<TemplatePiece> pair, std::map<std::string, SpecialToken> specials,
                     const Source& source)
      : single_(std::move(single)), pair_(std::move(pair)), specials_(std::move(specials)) {
    size_t sequences = 0;
    for (const TemplatePiece& piece : single_) {
      if (piece.is_sequence && piece.id == "B")
        fail(source.at("single"), "the single-sequence template uses $B, which only a pair has");
      sequences += piece.is_sequence ? 1 : 0;
    }
    if (sequences != 1) fail(source.at("single"), "the single-sequence template must hold $A exactly once");
    for (const auto* pieces : {&single_, &pair_})
      for (const TemplatePiece& piece : *pieces)
        if (!piece.is_sequence && specials_.count(piece.id) == 0)
          fail(source, "the templates use the special token " + quote_for_message(piece.id) +
                           ", which \"special_tokens\" does not define");
    bool seen_sequence = false;
    for (const TemplatePiece& piece : single_) {
      if (piece.is_sequence) {
        seen_sequence = true;
        continue;
      }
      const std::vector<int64_t>& ids = specials_.at(piece.id).ids;
      added_ += ids.size();
      if (!ids.empty() && !seen_sequence) before_id_ = ids.back();
      if (!ids.empty() && seen_sequence && after_id_ < 0) after_id_ = ids.front();
    }
  }

  std::vector<int64_t> process(const std::vector<int64_t>& ids) const override {
    std::vector<int64_t> out;
    out.reserve(ids.size() + added_);
    for (const TemplatePiece& piece : single_) {
      const std::vector<int64_t>& part = piece.is_sequence ? ids : specials_.at(piece.id).ids;
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  }

  size_t added_tokens() const override { return added_; }
  int64_t before_id() const override { return before_id_; }
  int64_t after_id() const override { return after_id_; }

  int64_t max_id() const override {
    int64_t max = -1;
    for (const auto& [name, special] : specials_)
      for (const int64_t id : special.ids) max = std::max(max, id);
    return max;
  }

  OrderedJson to_json() const override {
    OrderedJson j;
    j["type"] = "TemplateProcessing";
    j["single"] = pieces_json(single_);
    j["pair"] = pieces_json(pair_);
    OrderedJson specials = OrderedJson::object();
    for (const auto& [name, special] : specials_)
      specials[name] = OrderedJson{{"id", name}, {"ids", special.ids}, {"tokens", special.tokens}};
    j["special_tokens"] = std::move(specials);
    return j;
  }

 private:
  static OrderedJson pieces_json(const std::vector<TemplatePiece>& pieces) {
    OrderedJson out = OrderedJson::array();
    for (const TemplatePiece& piece : pieces)
      out.push_back(OrderedJson{{piece.is_sequence ? "Sequence" : "SpecialToken",
                                 OrderedJson{{"id", piece.id}, {"type_id", piece.type_id}}}});
    return out;
  }

  std::vector<TemplatePiece> single_;
  std::vector<TemplatePiece> pair_;
  std::map<std::string, SpecialToken> specials_;  // by name, as `tokenizers` writes them
  size_t added_ = 0;
  int64_t before_id_ = -1;
  int64_t after_id_ = -1;
};

}  // namespace

std::unique_ptr<PostProcessor> template_processing_from_json(const Json& config, const Source& source) {
  std::vector<TemplatePiece> single = read_template(config, "single", source);
  std::vector<TemplatePiece> pair = read_template(config, "pair", source);
  std::map<std::string, SpecialToken> specials =
      read_special_tokens(require_field(config, "special_tokens", source), source.at("special_tokens"));
  return std::make_unique<TemplateProcessing>(std::move(single), std::move(pair), std::move(specials), source);
}

}  // namespace gradcache::hf::detail
