// The translation of a pattern from Oniguruma's Ruby syntax (what tokenizer.json holds) to PCRE2's,
// over code points, so that PCRE2 runs it as Oniguruma would. The Translator is declared here so
// that its methods can live in two files: regex_translate.cpp (atoms, repeats, groups, escapes
// outside brackets) and regex_class_syntax.cpp (bracket classes, properties, character escapes).
// regex.cpp tells the whole story.
#pragma once

#include <unicode/uniset.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hf/components.h"
#include "hf/regex_classes.h"

namespace gradcache::hf::detail {

/// `pattern` (UTF-8, Oniguruma's Ruby syntax) in PCRE2's syntax, to compile with PCRE2_UTF,
/// PCRE2_UCP and PCRE2_MULTILINE. A pattern that is not valid, or that uses what PCRE2 cannot run
/// as Oniguruma does, is a TokenizerError at `source` naming the pattern and the reason.
std::u32string translate_onig_pattern(const std::string& pattern, const Source& source);

namespace onig_translation {

/// An ASCII letter or digit.
inline bool is_ascii_alnum(char32_t c) {
  return (c >= U'0' && c <= U'9') || (c >= U'A' && c <= U'Z') || (c >= U'a' && c <= U'z');
}

/// A code point that a text can hold (not a surrogate, not above U+10FFFF).
inline bool is_scalar_value(char32_t c) { return c <= onig_classes::kMaxCodePoint && !(c >= 0xD800 && c <= 0xDFFF); }

/// One pattern's translation: construct, then run() once.
class Translator {
 public:
  Translator(const std::string& pattern, const Source& source);

  /// The whole pattern in PCRE2's syntax.
  std::u32string run();

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  static constexpr size_t kMaxTranslatedLength = size_t{1} << 22;
  static constexpr int kMaxClassNesting = 64;

  /// The pattern is not valid: a TokenizerError saying `what`, at character `where`.
  [[noreturn]] void error(const std::string& what, size_t where) const;
  /// The pattern uses `what`, which PCRE2 cannot run as Oniguruma does: a TokenizerError.
  [[noreturn]] void unsupported(const std::string& what, size_t where) const;

  char32_t peek(size_t offset = 0) const { return at_ + offset < p_.size() ? p_[at_ + offset] : 0; }
  bool has(size_t offset = 0) const { return at_ + offset < p_.size(); }

  void begin_atom() {
    atom_start_ = out_.size();
    quantified_ = false;
  }
  void no_atom() {
    atom_start_ = kNone;
    quantified_ = false;
  }

  /// Translates what begins at at_ (a character, a class, a group's start or end, a repeat...).
  void step();
  /// Appends a literal character; under (?i), with its case partners that PCRE2 may not know.
  void append_char(char32_t c);

  // ---- repeats (regex_translate.cpp)
  struct Interval {
    size_t end;  // just past '}'
    long min, max;  // max < 0: no upper bound
    bool exact;
  };

  /// The interval {n}, {n,}, {,m} or {n,m} at `from`, or nothing when a '{' there is literal.
  std::optional<Interval> parse_interval(size_t from) const;
  bool interval_at(size_t from) const { return parse_interval(from).has_value(); }
  /// Wraps the last atom (with its repeat) in a group, so that a repeat can follow a repeat.
  void wrap_atom();
  /// A repeat (*, +, ?, {..}) at at_, with its lazy or possessive mark, as Ruby reads them.
  void quantifier();

  // ---- groups (regex_translate.cpp)
  /// A group at at_: capturing, (?:..), lookaround, atomic, named, a comment or options.
  void open_group();
  /// (?<name>..) or (?'name'..).
  void named_group(char32_t close, size_t start);
  /// (?imx-imx) and (?imx-imx:...).
  void options_group(size_t start);
  /// Records a group opened at `start` in out_.
  void push_group(size_t start);

  // ---- escapes outside brackets (regex_translate.cpp)
  /// An escape at at_, outside brackets.
  void escape();
  /// A class, assertion or reference escape (\w, \p{..}, \b, \A, \R, \k<..>...) at at_, or false
  /// (at_ unchanged) when escape `e` is a character.
  bool class_or_assertion_escape(char32_t e, size_t where);
  /// \1 to \9...: a back reference, a digit or an octal character.
  void numbered_escape(char32_t e, size_t where);
  /// \k<name>, \k'name', \g<name>, \k<n>.
  void reference(char32_t kind);

  // ---- classes and character escapes (regex_class_syntax.cpp)
  /// \w \W \s \S \d \D \h \H as a set (`e` is the letter).
  icu::UnicodeSet shorthand_set(char32_t e, bool in_class) const;
  /// \p{Name}, \p{^Name}, \P{Name} at at_.
  icu::UnicodeSet parse_property(bool in_class);
  /// A character escape at at_ (\t, \cX, \xHH, \uHHHH, octal...), leaving at_ past it.
  char32_t escaped_char(bool in_class);
  /// \x{H...}, or \xHH (several, when they spell one character in UTF-8), after the "\x".
  char32_t hex_escape(size_t where);
  /// [...] at at_: the set inside the top-level negation, which `negated` reports.
  icu::UnicodeSet parse_class(bool& negated, int depth = 0);
  /// [:name:] or [:^name:] at at_, or nothing (at_ unchanged) when that is not what follows.
  std::optional<icu::UnicodeSet> posix_bracket();
  /// An escape inside brackets: a class (returned) or a character (in `single`).
  std::optional<icu::UnicodeSet> class_escape(char32_t& single);

  const std::string& original_;
  const Source& source_;
  const std::u32string p_;
  size_t at_ = 0;
  std::u32string out_;
  std::vector<size_t> groups_;  // where each open group begins in out_
  size_t atom_start_ = kNone;   // where the atom a repeat would apply to begins in out_
  bool quantified_ = false;     // that atom already has a repeat
  size_t captures_ = 0;         // the capture groups opened so far
  bool caseless_ = false;       // under (?i)
  std::vector<bool> caseless_before_;  // caseless_ where each open group began
};

}  // namespace onig_translation
}  // namespace gradcache::hf::detail
