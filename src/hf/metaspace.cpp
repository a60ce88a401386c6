// Metaspace, as `tokenizers` (pre_tokenizers/metaspace.rs) runs it, SentencePiece's way of
// keeping spaces: every ' ' (U+0020 only) becomes the replacement character ("▁"), the
// replacement goes in front of the text unless it starts with one (prepend_scheme "always"; with
// "first" only for the text that begins where the original text begins, which `tokenizers` checks
// as offsets_original().0 == 0; "never"), and with split the text is cut before each replacement
// character (MergedWithNext: "▁Hello▁world" is "▁Hello", "▁world").
//
// Files written before prepend_scheme existed say add_prefix_space instead: false means "never"
// and contradicts any other declared scheme (an error in `tokenizers` too, which also defaults a
// missing prepend_scheme to "always", so add_prefix_space false alone is refused); true changes
// nothing.
#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/split_behavior.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

enum class PrependScheme { kFirst, kNever, kAlways };

constexpr std::pair<PrependScheme, const char*> kSchemeNames[] = {
    {PrependScheme::kFirst, "first"}, {PrependScheme::kNever, "never"}, {PrependScheme::kAlways, "always"}};

const char* scheme_name(PrependScheme scheme) {
  for (const auto& [value, name] : kSchemeNames)
    if (value == scheme) return name;
  return "always";
}

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(char32_t replacement, PrependScheme scheme, bool split)
      : replacement_(replacement), scheme_(scheme), split_(split) {}

  void split(std::u32string_view text, bool at_origin, Words& out) const override {
    thread_local std::u32string replaced;
    replaced.clear();
    const bool prepend = !text.empty() && text.front() != U' ' && text.front() != replacement_ &&
                         (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && at_origin));
    if (prepend) replaced.push_back(replacement_);
    for (const char32_t c : text) replaced.push_back(c == U' ' ? replacement_ : c);
    if (!split_) {
      out.push(replaced, at_origin);
      return;
    }
    thread_local std::vector<Match> matches;
    matches.clear();
    for (size_t i = 0; i < replaced.size(); ++i)
      if (replaced[i] == replacement_) matches.emplace_back(i, i + 1);
    split_at_matches(replaced, matches, SplitBehavior::kMergedWithNext, /*invert=*/false, at_origin, out);
  }

  OrderedJson to_json() const override {
    std::string replacement;
    unicode::append_utf8(replacement, replacement_);
    return OrderedJson{{"type", "Metaspace"},
                       {"replacement", replacement},
                       {"prepend_scheme", scheme_name(scheme_)},
                       {"split", split_}};
  }

 private:
  char32_t replacement_;
  PrependScheme scheme_;
  bool split_;
};

}  // namespace

std::unique_ptr<PreTokenizer> metaspace_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  const std::string replacement_text = read_string(config, "replacement", source);
  const std::u32string replacement = unicode::decode_utf8(replacement_text);
  if (replacement.size() != 1)
    fail(source.at("replacement"), "expected a single character, found " + quote_for_message(replacement_text) +
                                       " (" + std::to_string(replacement.size()) + " characters)");

  PrependScheme scheme = PrependScheme::kAlways;  // serde's default in metaspace.rs
  if (config.contains("prepend_scheme")) {
    const std::string name = read_string(config, "prepend_scheme", source);
    bool known = false;
    for (const auto& [value, scheme_text] : kSchemeNames)
      if (name == scheme_text) {
        scheme = value;
        known = true;
      }
    if (!known)
      fail(source.at("prepend_scheme"),
           "unknown prepend_scheme " + quote_for_message(name) + " (expected \"first\", \"never\" or \"always\")");
  }
  if (read_optional_bool(config, "add_prefix_space", source) == false) {
    if (scheme != PrependScheme::kNever)
      fail(source.at("add_prefix_space"),
           std::string("add_prefix_space is false but prepend_scheme is \"") + scheme_name(scheme) +
               "\" (\"always\" when missing), which `tokenizers` refuses as contradictory; set prepend_scheme "
               "to \"never\" (and drop add_prefix_space)");
    scheme = PrependScheme::kNever;
  }
  const bool split = read_optional_bool(config, "split", source).value_or(true);
  if (config.contains("str_rep") && !config["str_rep"].is_string() && !config["str_rep"].is_null())
    fail(source.at("str_rep"), "expected a string or null, found " + describe_json(config["str_rep"]));
  return std::make_unique<Metaspace>(replacement.front(), scheme, split);
}

}  // namespace gradcache::hf::detail
