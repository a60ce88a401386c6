// The regular expressions of tokenizer.json (Split's and Replace's patterns, ByteLevel's GPT-2
// pattern), which `tokenizers` runs with Oniguruma, run here with PCRE2 over code points (its
// 32-bit library, UTF and Unicode properties on, JIT-compiled where the platform allows): the
// patterns real tokenizers use (GPT-2, Llama-3, Qwen2, BLOOM) mean the same in both.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hf/components.h"

namespace gradcache::hf::detail {

/// [begin, end) in code points.
using Match = std::pair<size_t, size_t>;

class Regex {
 public:
  /// Compiles `pattern` (UTF-8). One that does not compile is a TokenizerError at `source`
  /// naming the pattern and PCRE2's reason.
  Regex(const std::string& pattern, const Source& source);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  /// Appends the matches in `text`, left to right, as `tokenizers`' SysRegex::find_iter yields
  /// them (Oniguruma's FindMatches: non-overlapping; an empty match right where the previous
  /// match ended is skipped by moving on one character). A match that exceeds PCRE2's match or
  /// depth limit (a pattern that backtracks catastrophically on this text) is a TokenizerError
  /// naming the pattern, never a hang.
  void find_all(std::u32string_view text, std::vector<Match>& matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;
  Source source_;
  std::unique_ptr<Compiled> compiled_;
};

/// A literal string as a pattern (tokenizer.json's {"String": "..."}): every character escaped.
std::string escape_regex(std::string_view literal);

/// The pattern of Split and Replace in tokenizer.json: {"String": "..."}, a literal, or
/// {"Regex": "..."} (serde's form of the enum: an object with exactly one of the two keys).
struct PatternSpec {
  bool is_regex = false;
  std::string text;

  OrderedJson to_json() const { return OrderedJson{{is_regex ? "Regex" : "String", text}}; }
  /// What Regex compiles: `tokenizers` escapes a literal and runs it as a regular expression too.
  std::string regex() const { return is_regex ? text : escape_regex(text); }
};

/// The field `key` of `config` as a PatternSpec; it must be there.
PatternSpec read_pattern_spec(const Json& config, const char* key, const Source& source);

}  // namespace gradcache::hf::detail
