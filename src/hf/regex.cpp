// The regular expressions of tokenizer.json as `tokenizers` runs them (utils/onig.rs: Oniguruma
// 6.9.10 with its default, Ruby syntax and Unicode 16.0 tables), run with PCRE2 (32-bit, over code
// points). The two engines backtrack alike, but their pattern languages differ in places real
// tokenizers use, so a pattern is translated before PCRE2 compiles it:
// - every class is written out as code point ranges computed here with Oniguruma's meaning:
//   \s (White_Space, where PCRE2's lacks U+0085), \w (Oniguruma's Word, which outside brackets
//   also holds ² ³ ¹ ¼ ½ ¾), \d, \h (a hex digit in Ruby, horizontal space in PCRE2), \p{..} and
//   [...] (nested classes such as BLOOM's ` ?[^(\s|[.,!?…。，、।۔،])]+`, `&&`, POSIX brackets). The
//   Unicode data is ICU's restricted to Unicode 16.0, completed by unicode16_tables.h, so neither
//   PCRE2's nor ICU's own Unicode version shows; \b and \B become lookarounds on that \w;
// - Ruby's spellings: \uHHHH, \xHH bytes of UTF-8, \v (only U+000B), unknown letter escapes (the
//   letter), \nnn (octal unless that many groups precede it), (?m) (PCRE2's (?s)), `{,n}`, `{n}?`
//   and `{n,m}+` (a second repeat, not lazy or possessive), `^`/`$` at every line (MULTILINE).
// Under (?i) each engine folds case by simple (one character to one) folding; the case pairs of
// Unicode 16.0 are added where PCRE2's tables predate them. Oniguruma's folds of one character to
// several (ß ~ "ss", İ ~ "i̇") are not reproduced: the contractions (?i:'s|'t|'re|'ve|'m|'ll|'d)
// of real tokenizers involve none. What PCRE2 cannot do as Oniguruma does ((?x), the absent
// operator (?~..), \y, \X, \M-x, repeat counts above 65,535) is refused with a message rather
// than run differently. Every code point's membership in each class has been compared with
// Oniguruma's through `tokenizers`.
//
// Speed: a class of hundreds of ranges (\p{L}) costs PCRE2 a scan of its ranges for a character
// above U+00FF (ASCII and Latin-1 go through a bitmap); CJK-heavy text runs at about the speed of
// `tokenizers` itself, several times slower than PCRE2's own \p{L} would, which is not Oniguruma's.
#include "hf/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 32
#include <pcre2.h>
#include <unicode/uchar.h>
#include <unicode/uniset.h>
#include <unicode/uscript.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "hf/json_fields.h"
#include "hf/unicode.h"
#include "hf/unicode16_tables.h"

namespace gradcache::hf::detail {
namespace {

// ---- Oniguruma's classes, as code point sets ---------------------------------------------------

constexpr char32_t kMaxCodePoint = 0x10FFFF;

// The characters this ICU assigns after Unicode 16.0 (none with ICU 72): unassigned for Oniguruma.
const icu::UnicodeSet& newer_than_unicode_16() {
  static const icu::UnicodeSet set = [] {
    icu::UnicodeSet s;
    for (UChar32 c = 0; c <= static_cast<UChar32>(kMaxCodePoint); ++c) {
      UVersionInfo age;
      u_charAge(c, age);
      if (age[0] > 16) s.add(c);
    }
    s.freeze();
    return s;
  }();
  return set;
}

// The characters unicode16_tables.h describes: ICU's answer for them is replaced by the table's.
const icu::UnicodeSet& table_characters() {
  static const icu::UnicodeSet set = [] {
    icu::UnicodeSet s;
    for (const unicode16::Row& row : unicode16::kRows)
      s.add(static_cast<UChar32>(row.first), static_cast<UChar32>(row.last));
    s.freeze();
    return s;
  }();
  return set;
}

// ICU's set for property = value, as Unicode 16.0 has it: without the characters assigned later,
// and with the table's characters added where `row_has` says so.
template <class RowPredicate>
icu::UnicodeSet unicode16_set(UProperty property, int32_t value, RowPredicate row_has) {
  icu::UnicodeSet set;
  UErrorCode status = U_ZERO_ERROR;
  set.applyIntPropertyValue(property, value, status);
  if (U_FAILURE(status)) set.clear();
  set.removeAll(newer_than_unicode_16());
  set.removeAll(table_characters());
  for (const unicode16::Row& row : unicode16::kRows)
    if (row_has(row)) set.add(static_cast<UChar32>(row.first), static_cast<UChar32>(row.last));
  return set;
}

icu::UnicodeSet category_set(uint32_t mask) {
  icu::UnicodeSet set = unicode16_set(UCHAR_GENERAL_CATEGORY_MASK, static_cast<int32_t>(mask),
                                      [mask](const unicode16::Row& row) { return (U_MASK(row.category) & mask) != 0; });
  if ((mask & U_GC_CN_MASK) != 0) set.addAll(newer_than_unicode_16());
  return set;
}

icu::UnicodeSet flag_set(UProperty property, uint8_t flag) {
  return unicode16_set(property, 1, [flag](const unicode16::Row& row) { return (row.flags & flag) != 0; });
}

icu::UnicodeSet range_set(char32_t first, char32_t last) {
  return icu::UnicodeSet(static_cast<UChar32>(first), static_cast<UChar32>(last));
}

icu::UnicodeSet white_space() {
  icu::UnicodeSet set;
  UErrorCode status = U_ZERO_ERROR;
  set.applyIntPropertyValue(UCHAR_WHITE_SPACE, 1, status);  // unchanged since Unicode 6.3
  return set;
}

icu::UnicodeSet hex_digit() {
  icu::UnicodeSet set(U'0', U'9');
  set.add(U'A', U'F').add(U'a', U'f');
  return set;
}

// Oniguruma's Word: Alphabetic, marks, decimal digits and connector punctuation (not
// Join_Control). Outside brackets (\w, \W, \p{Word}, \b) it also counts ² ³ ¹ ¼ ½ ¾, as its
// Latin-1 table does; inside them ([\w], [[:word:]]) it does not.
icu::UnicodeSet word(bool in_class) {
  icu::UnicodeSet set = flag_set(UCHAR_ALPHABETIC, unicode16::kAlphabetic);
  set.addAll(category_set(U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK));
  if (!in_class) set.add(0xB2, 0xB3).add(0xB9).add(0xBC, 0xBE);
  return set;
}

// Graph: everything but white space, controls, unassigned and surrogates.
icu::UnicodeSet graph() {
  icu::UnicodeSet set = white_space();
  set.addAll(category_set(U_GC_CC_MASK | U_GC_CN_MASK | U_GC_CS_MASK));
  return set.complement();
}

// A property name as Oniguruma compares them: case, spaces, '_' and '-' do not count.
std::string loose_name(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c == ' ' || c == '_' || c == '-') continue;
    out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
  }
  return out;
}

// The names whose Oniguruma meaning is its own (the POSIX-like ones), or nothing.
std::optional<icu::UnicodeSet> onig_named_set(const std::string& name, bool posix_bracket, bool in_class) {
  if (name == "any") return range_set(0, kMaxCodePoint);
  if (name == "ascii") return range_set(0, 0x7F);
  if (name == "assigned") return category_set(U_GC_CN_MASK).complement();
  if (name == "alpha" || name == "alphabetic") return flag_set(UCHAR_ALPHABETIC, unicode16::kAlphabetic);
  if (name == "upper" || name == "uppercase") return flag_set(UCHAR_UPPERCASE, unicode16::kUppercase);
  if (name == "lower" || name == "lowercase") return flag_set(UCHAR_LOWERCASE, unicode16::kLowercase);
  if (name == "space" || name == "whitespace") return white_space();
  if (name == "digit") return category_set(U_GC_ND_MASK);
  if (name == "alnum") {
    icu::UnicodeSet set = flag_set(UCHAR_ALPHABETIC, unicode16::kAlphabetic);
    return set.addAll(category_set(U_GC_ND_MASK));
  }
  // \p{Punct} is punctuation; the POSIX bracket [[:punct:]] adds the symbols.
  if (name == "punct") return category_set(posix_bracket ? (U_GC_P_MASK | U_GC_S_MASK) : U_GC_P_MASK);
  if (name == "word") return word(in_class);
  if (name == "xdigit") return hex_digit();
  if (name == "cntrl") return category_set(U_GC_CC_MASK);
  if (name == "graph") return graph();
  if (name == "print") return graph().addAll(category_set(U_GC_ZS_MASK));
  if (name == "blank") return category_set(U_GC_ZS_MASK).add(U'\t');
  return std::nullopt;
}

std::optional<icu::UnicodeSet> script_set(const std::string& name) {
  const int32_t script = u_getPropertyValueEnum(UCHAR_SCRIPT, name.c_str());
  if (script != UCHAR_INVALID_CODE) {
    const char* long_name = u_getPropertyValueName(UCHAR_SCRIPT, script, U_LONG_PROPERTY_NAME);
    const std::string wanted = loose_name(long_name ? long_name : "");
    return unicode16_set(UCHAR_SCRIPT, script,
                         [&wanted](const unicode16::Row& row) { return loose_name(row.script) == wanted; });
  }
  // A script of Unicode 16.0 that this ICU does not know: the table has all its characters.
  for (const auto& aliases : unicode16::kNewScriptAliases) {
    if (name != loose_name(aliases[0]) && name != loose_name(aliases[1])) continue;
    icu::UnicodeSet set;
    for (const unicode16::Row& row : unicode16::kRows)
      if (loose_name(row.script) == loose_name(aliases[0]))
        set.add(static_cast<UChar32>(row.first), static_cast<UChar32>(row.last));
    return set;
  }
  return std::nullopt;
}

// \p{name} as Oniguruma 6.9.10 means it: its POSIX-like names, general categories, scripts,
// binary properties (ICU's, restricted to Unicode 16.0: those other than Alphabetic, Uppercase,
// Lowercase, White_Space, Emoji and Ideographic, which the table does not cover, miss the
// characters of Unicode 15.1 and 16.0) and blocks ("In_..."; ICU's blocks). Nothing for an
// unknown name. `posix_bracket`: [:name:]; `in_class`: inside brackets.
std::optional<icu::UnicodeSet> property_set(const std::string& raw_name, bool posix_bracket, bool in_class) {
  const std::string name = loose_name(raw_name);
  if (name.empty() || name.find_first_of("&=") != std::string::npos) return std::nullopt;
  if (auto set = onig_named_set(name, posix_bracket, in_class)) return set;
  if (posix_bracket) return std::nullopt;
  const int32_t mask = u_getPropertyValueEnum(UCHAR_GENERAL_CATEGORY_MASK, name.c_str());
  if (mask != UCHAR_INVALID_CODE) return category_set(static_cast<uint32_t>(mask));
  if (auto set = script_set(name)) return set;
  const UProperty property = u_getPropertyEnum(name.c_str());
  if (property == UCHAR_EMOJI) return flag_set(property, unicode16::kEmoji);
  if (property == UCHAR_IDEOGRAPHIC) return flag_set(property, unicode16::kIdeographic);
  if (property >= UCHAR_BINARY_START && property < UCHAR_BINARY_LIMIT) {
    icu::UnicodeSet set;
    UErrorCode status = U_ZERO_ERROR;
    set.applyIntPropertyValue(property, 1, status);
    if (U_SUCCESS(status)) return set.removeAll(newer_than_unicode_16());
  }
  if (name.size() > 2 && name.compare(0, 2, "in") == 0) {
    const int32_t block = u_getPropertyValueEnum(UCHAR_BLOCK, name.c_str() + 2);
    if (block != UCHAR_INVALID_CODE) {
      icu::UnicodeSet set;
      UErrorCode status = U_ZERO_ERROR;
      set.applyIntPropertyValue(UCHAR_BLOCK, block, status);
      if (U_SUCCESS(status)) return set;
    }
  }
  return std::nullopt;
}

// The case pairs that Unicode 16.0 added (Oniguruma folds them under (?i); PCRE2 before 10.45,
// whose tables are older, does not): upper case, lower case.
constexpr std::pair<char32_t, char32_t> kUnicode16CasePairs[] = {
    {0x1C89, 0x1C8A}, {0xA7CB, 0x0264}, {0xA7CC, 0xA7CD}, {0xA7DA, 0xA7DB}, {0xA7DC, 0x019B},
};
constexpr char32_t kGarayCapitals = 0x10D50, kGaraySmall = 0x10D70, kGarayPairs = 0x16;

void add_unicode16_case_partners(icu::UnicodeSet& set) {
  auto pair = [&set](char32_t upper, char32_t lower) {
    if (set.contains(static_cast<UChar32>(upper)) || set.contains(static_cast<UChar32>(lower)))
      set.add(static_cast<UChar32>(upper)).add(static_cast<UChar32>(lower));
  };
  for (const auto& [upper, lower] : kUnicode16CasePairs) pair(upper, lower);
  for (char32_t i = 0; i < kGarayPairs; ++i) pair(kGarayCapitals + i, kGaraySmall + i);
}

// ---- the translation -------------------------------------------------------------------------

bool is_ascii_alnum(char32_t c) { return (c >= U'0' && c <= U'9') || (c >= U'A' && c <= U'Z') || (c >= U'a' && c <= U'z'); }
bool is_hex(char32_t c) { return (c >= U'0' && c <= U'9') || (c >= U'A' && c <= U'F') || (c >= U'a' && c <= U'f'); }
int hex_value(char32_t c) { return c <= U'9' ? static_cast<int>(c - U'0') : static_cast<int>((c | 0x20) - U'a' + 10); }

void append_ascii(std::u32string& out, std::string_view text) { out.append(text.begin(), text.end()); }

bool is_scalar_value(char32_t c) { return c <= kMaxCodePoint && !(c >= 0xD800 && c <= 0xDFFF); }

// A character as a PCRE2 literal: letters and digits as themselves, the rest as \x{..}, which
// is never a metacharacter, inside a class or out.
void append_literal(std::u32string& out, char32_t c) {
  if (is_ascii_alnum(c)) {
    out.push_back(c);
    return;
  }
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\x{%X}", static_cast<unsigned>(c));
  append_ascii(out, buffer);
}

// A set as a PCRE2 class ("[^...]" when `negated`). An empty positive class matches nothing.
void append_class(std::u32string& out, const icu::UnicodeSet& set_with_surrogates, bool negated) {
  icu::UnicodeSet set(set_with_surrogates);
  set.remove(0xD800, 0xDFFF);  // never in a text, and PCRE2 refuses them in UTF mode
  if (set.isEmpty()) {
    append_ascii(out, negated ? "[\\x{0}-\\x{10FFFF}]" : "(?!)");
    return;
  }
  out += negated ? U"[^" : U"[";
  // PCRE2 tries a class's ranges above U+00FF one after the other, in the order written: the
  // largest first (CJK ideographs, Hangul...) is what keeps a class of hundreds of ranges fast.
  std::vector<std::pair<char32_t, char32_t>> ranges;
  for (int32_t i = 0; i < set.getRangeCount(); ++i)
    ranges.emplace_back(static_cast<char32_t>(set.getRangeStart(i)), static_cast<char32_t>(set.getRangeEnd(i)));
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const auto& a, const auto& b) { return a.second - a.first > b.second - b.first; });
  for (const auto& [first, last] : ranges) {
    append_literal(out, first);
    if (last == first) continue;
    if (last > first + 1) out.push_back(U'-');
    append_literal(out, last);
  }
  out.push_back(U']');
}

// A class written outside brackets (\w, \p{L}...): the smaller of the set and its complement,
// shielded from (?i), since Oniguruma does not case-fold \p{Lu} outside brackets.
void append_escape_class(std::u32string& out, const icu::UnicodeSet& set) {
  icu::UnicodeSet complement(set);
  complement.complement();
  append_ascii(out, "(?-i:");
  if (complement.getRangeCount() < set.getRangeCount())
    append_class(out, complement, true);
  else
    append_class(out, set, false);
  out.push_back(U')');
}

class Translator {
 public:
  Translator(const std::string& pattern, const Source& source)
      : original_(pattern), source_(source), p_(unicode::decode_utf8(pattern)) {}

  std::u32string run() {
    while (at_ < p_.size()) {
      step();
      // Each class is written out in full (\p{L} is some 8,000 characters): a pattern made of
      // thousands of them is refused rather than compiled into gigabytes.
      if (out_.size() > kMaxTranslatedLength)
        unsupported("so many classes that its translation exceeds " + std::to_string(kMaxTranslatedLength) +
                        " characters",
                    at_);
    }
    if (!groups_.empty()) error("a group is not closed (missing ')')", p_.size());
    return out_;
  }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  static constexpr size_t kMaxTranslatedLength = size_t{1} << 22;
  static constexpr int kMaxClassNesting = 64;

  [[noreturn]] void error(const std::string& what, size_t where) const {
    fail(source_, "the regular expression " + quote_for_message(original_) + " is not valid: " + what +
                      " (at character " + std::to_string(where) + ")");
  }
  [[noreturn]] void unsupported(const std::string& what, size_t where) const {
    fail(source_, "the regular expression " + quote_for_message(original_) + " uses " + what +
                      " (at character " + std::to_string(where) +
                      "), which this implementation cannot run as Oniguruma does; rewrite the pattern without it");
  }

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

  void step() {
    const char32_t c = p_[at_];
    switch (c) {
      case U'\\': escape(); return;
      case U'[': {
        bool negated = false;
        icu::UnicodeSet set = parse_class(negated);
        if (caseless_) add_unicode16_case_partners(set);
        begin_atom();
        append_class(out_, set, negated);
        return;
      }
      case U'(': open_group(); return;
      case U')':
        if (groups_.empty()) error("unmatched ')'", at_);
        out_.push_back(U')');
        ++at_;
        atom_start_ = groups_.back();
        quantified_ = false;
        groups_.pop_back();
        caseless_ = caseless_before_.back();  // (?i) lasts to the end of its group
        caseless_before_.pop_back();
        return;
      case U'|':
        out_.push_back(U'|');
        ++at_;
        no_atom();
        return;
      case U'^':
      case U'$':
        out_.push_back(c);
        ++at_;
        no_atom();
        return;
      case U'.':
        begin_atom();
        out_.push_back(U'.');
        ++at_;
        return;
      case U'*':
      case U'+':
      case U'?': quantifier(); return;
      case U'{':
        if (interval_at(at_)) {
          quantifier();
        } else {  // not a repeat: a literal brace, as in Oniguruma
          begin_atom();
          append_literal(out_, c);
          ++at_;
        }
        return;
      default:
        begin_atom();
        append_char(c);
        ++at_;
        return;
    }
  }

  // A literal character; under (?i), with its case partners that PCRE2 may not know.
  void append_char(char32_t c) {
    if (caseless_) {
      icu::UnicodeSet set(static_cast<UChar32>(c), static_cast<UChar32>(c));
      add_unicode16_case_partners(set);
      if (set.size() > 1) {
        append_class(out_, set, false);
        return;
      }
    }
    append_literal(out_, c);
  }

  // ---- repeats
  struct Interval {
    size_t end;  // just past '}'
    long min, max;  // max < 0: no upper bound
    bool exact;
  };

  std::optional<Interval> parse_interval(size_t from) const {
    size_t i = from + 1;
    auto number = [&](long& value) {
      const size_t start = i;
      value = 0;
      while (i < p_.size() && p_[i] >= U'0' && p_[i] <= U'9') {
        value = std::min<long>(value * 10 + static_cast<long>(p_[i] - U'0'), 1000000);
        ++i;
      }
      return i > start;
    };
    Interval interval{0, 0, -1, false};
    const bool has_min = number(interval.min);
    if (i < p_.size() && p_[i] == U',') {
      ++i;
      const bool has_max = number(interval.max);
      if (!has_max) interval.max = -1;
      if (!has_min && !has_max) return std::nullopt;  // "{,}" is literal
      if (!has_min) interval.min = 0;                  // Ruby's {,n} is {0,n}
    } else {
      if (!has_min) return std::nullopt;
      interval.max = interval.min;
      interval.exact = true;
    }
    if (i >= p_.size() || p_[i] != U'}') return std::nullopt;
    interval.end = i + 1;
    return interval;
  }
  bool interval_at(size_t from) const { return parse_interval(from).has_value(); }

  // Wraps the last atom (with its repeat) in a group, so that a repeat can follow a repeat.
  void wrap_atom() {
    out_.insert(atom_start_, U"(?:");
    out_.push_back(U')');
  }

  void quantifier() {
    const size_t where = at_;
    if (atom_start_ == kNone) error("a repeat follows nothing that can repeat", where);
    if (quantified_) wrap_atom();  // Ruby allows a** and a+*: a repeat of a repeat
    bool interval = false, exact = false;
    if (p_[at_] == U'{') {
      Interval range = *parse_interval(at_);
      constexpr long kMaxRepeat = 65535;  // PCRE2's limit (Oniguruma's is 100,000)
      if (range.min > kMaxRepeat || range.max > kMaxRepeat)
        unsupported("a repeat count above " + std::to_string(kMaxRepeat), where);
      if (range.max >= 0 && range.min > range.max) std::swap(range.min, range.max);  // Ruby: {3,1} is {1,3}
      std::string text = "{" + std::to_string(range.min);
      if (!range.exact) text += "," + (range.max >= 0 ? std::to_string(range.max) : std::string());
      append_ascii(out_, text + "}");
      at_ = range.end;
      interval = true;
      exact = range.exact;
    } else {
      out_.push_back(p_[at_++]);
    }
    quantified_ = true;
    if (!has()) return;
    if (peek() == U'?') {
      ++at_;
      if (exact) {  // Ruby: a{n}? is (?:a{n})?, not a lazy a{n}
        wrap_atom();
        out_.push_back(U'?');
      } else {
        out_.push_back(U'?');  // lazy
      }
    } else if (peek() == U'+') {
      ++at_;
      if (interval) {  // Ruby: a{n,m}+ is (?:a{n,m})+, not possessive
        wrap_atom();
        out_.push_back(U'+');
      } else {
        out_.push_back(U'+');  // possessive
      }
    }
  }

  // ---- groups
  void open_group() {
    const size_t where = at_;
    const size_t start = out_.size();
    if (peek(1) != U'?') {
      out_.push_back(U'(');
      ++at_;
      ++captures_;
      push_group(start);
      return;
    }
    const char32_t kind = peek(2);
    switch (kind) {
      case U'#': {  // a comment
        size_t end = at_ + 3;
        while (end < p_.size() && p_[end] != U')') ++end;
        if (end >= p_.size()) error("a comment (?#... is not closed", where);
        at_ = end + 1;
        return;
      }
      case U':':
      case U'=':
      case U'!':
      case U'>':
        out_ += std::u32string{U'(', U'?', kind};
        at_ += 3;
        push_group(start);
        return;
      case U'<':
        if (peek(3) == U'=' || peek(3) == U'!') {
          out_ += std::u32string{U'(', U'?', U'<', peek(3)};
          at_ += 4;
          push_group(start);
          return;
        }
        named_group(U'>', start);
        return;
      case U'\'': named_group(U'\'', start); return;
      case U'~': unsupported("the absent operator (?~...)", where);
      default: options_group(start); return;
    }
  }

  void named_group(char32_t close, size_t start) {
    const size_t where = at_;
    size_t end = at_ + 3;
    while (end < p_.size() && p_[end] != close) ++end;
    if (end >= p_.size() || end == at_ + 3) error("a group name is not closed", where);
    append_ascii(out_, "(?<");
    for (size_t i = at_ + 3; i < end; ++i) {
      if (!is_ascii_alnum(p_[i]) && p_[i] != U'_') unsupported("a group name that is not ASCII letters and digits", i);
      out_.push_back(p_[i]);
    }
    out_.push_back(U'>');
    at_ = end + 1;
    ++captures_;
    push_group(start);
  }

  // (?imx-imx) and (?imx-imx:...). Ruby's m is PCRE2's s (dot matches a newline).
  void options_group(size_t start) {
    const size_t where = at_;
    size_t i = at_ + 2;
    std::u32string letters;
    bool off = false;
    for (; i < p_.size() && p_[i] != U':' && p_[i] != U')'; ++i) {
      const char32_t c = p_[i];
      if (c == U'-' && !off) {
        off = true;
        letters.push_back(U'-');
      } else if (c == U'i') {
        letters.push_back(U'i');
      } else if (c == U'm') {
        letters.push_back(U's');
      } else if (c == U'x') {
        if (!off) unsupported("extended mode (?x)", where);
      } else {
        error("unknown group option", i);
      }
    }
    if (i >= p_.size()) error("a group is not closed", where);
    if (!letters.empty() && letters.back() == U'-') letters.pop_back();
    if (p_[i] == U':') {
      out_ += U"(?" + letters + U":";
      at_ = i + 1;
      push_group(start);
    } else {  // options for the rest of the enclosing group
      if (!letters.empty()) out_ += U"(?" + letters + U")";
      at_ = i + 1;
      no_atom();
    }
    const size_t minus = letters.find(U'-');
    if (letters.find(U'i') < minus) caseless_ = true;
    if (minus != std::u32string::npos && letters.find(U'i', minus) != std::u32string::npos) caseless_ = false;
  }

  void push_group(size_t start) {
    groups_.push_back(start);
    caseless_before_.push_back(caseless_);
    no_atom();
  }

  // ---- escapes outside brackets
  void escape() {
    const size_t where = at_;
    if (!has(1)) error("the pattern ends with a lone backslash", where);
    const char32_t e = peek(1);
    switch (e) {
      case U'w': case U'W': case U's': case U'S': case U'd': case U'D': case U'h': case U'H': {
        at_ += 2;
        icu::UnicodeSet set = shorthand_set(e, /*in_class=*/false);
        begin_atom();
        append_escape_class(out_, set);
        return;
      }
      case U'p':
      case U'P': {
        if (peek(2) != U'{') break;  // Oniguruma: \p without {name} is the letter
        icu::UnicodeSet set = parse_property(/*in_class=*/false);
        begin_atom();
        append_escape_class(out_, set);
        return;
      }
      case U'b':
      case U'B': {
        // Oniguruma's word boundary, on its \w.
        at_ += 2;
        std::u32string w;
        append_class(w, word(/*in_class=*/false), false);
        const std::u32string before = U"(?<=" + w + U")", after = U"(?=" + w + U")";
        const std::u32string not_before = U"(?<!" + w + U")", not_after = U"(?!" + w + U")";
        if (e == U'b')
          out_ += U"(?-i:" + before + not_after + U"|" + not_before + after + U")";
        else
          out_ += U"(?-i:" + before + after + U"|" + not_before + not_after + U")";
        no_atom();
        return;
      }
      case U'A': case U'z': case U'Z': case U'G': case U'K':
        out_ += std::u32string{U'\\', e};
        at_ += 2;
        no_atom();
        return;
      case U'X': unsupported("\\X (grapheme clusters follow each engine's own Unicode version)", where);
      case U'R': case U'N':
        begin_atom();
        out_ += std::u32string{U'\\', e};
        at_ += 2;
        return;
      case U'O':  // any character, newline included
        begin_atom();
        append_ascii(out_, "(?s:.)");
        at_ += 2;
        return;
      case U'y': case U'Y': unsupported("text segment boundaries (\\y, \\Y)", where);
      case U'k': case U'g': reference(e); return;
      default: break;
    }
    if (e >= U'1' && e <= U'9') {
      // Oniguruma: \n is a back reference when n groups have opened before it; otherwise a
      // single digit 1-7 is an error, 8 and 9 are the digit, and a longer number is octal.
      size_t end = at_ + 1;
      std::string digits;
      while (end < p_.size() && p_[end] >= U'0' && p_[end] <= U'9' && digits.size() < 6)
        digits.push_back(static_cast<char>(p_[end++]));
      const long number = std::stol(digits);
      begin_atom();
      if (number <= static_cast<long>(captures_)) {
        append_ascii(out_, "\\g{" + digits + "}");
        at_ = end;
      } else if (number <= 9 && e <= U'7') {
        error("a back reference to group " + digits + ", which does not exist before it", where);
      } else if (e >= U'8') {
        append_char(e);
        at_ += 2;
      } else {
        ++at_;  // the octal digits follow the backslash
        char32_t value = 0;
        for (int k = 0; k < 3 && has() && peek() >= U'0' && peek() <= U'7'; ++k) value = value * 8 + (p_[at_++] - U'0');
        append_char(value);
      }
      return;
    }
    const char32_t c = escaped_char(false);
    begin_atom();
    if (is_scalar_value(c))
      append_char(c);
    else
      append_ascii(out_, "(?!)");  // no text holds it (Oniguruma matches its UTF-8 bytes, which never occur)
  }

  // \k<name>, \k'name', \g<name> (a subroutine call), which PCRE2 spells alike; \k<n> by number.
  void reference(char32_t kind) {
    const size_t where = at_;
    const char32_t open = peek(2);
    const char32_t close = open == U'<' ? U'>' : open == U'\'' ? U'\'' : 0;
    if (close == 0) error(std::string("\\") + static_cast<char>(kind) + " must be followed by <name> or 'name'", where);
    size_t end = at_ + 3;
    while (end < p_.size() && p_[end] != close) ++end;
    if (end >= p_.size() || end == at_ + 3) error("a group reference is not closed", where);
    const std::u32string name = p_.substr(at_ + 3, end - at_ - 3);
    for (size_t i = 0; i < name.size(); ++i)
      if (!is_ascii_alnum(name[i]) && name[i] != U'_') unsupported("a group reference of this form", where);
    begin_atom();
    const bool numeric = std::all_of(name.begin(), name.end(), [](char32_t c) { return c >= U'0' && c <= U'9'; });
    if (kind == U'k' && numeric)
      out_ += U"\\g{" + name + U"}";
    else
      out_ += std::u32string{U'\\', kind, U'<'} + name + U">";
    at_ = end + 1;
  }

  icu::UnicodeSet shorthand_set(char32_t e, bool in_class) const {
    icu::UnicodeSet set;
    switch (e | 0x20) {
      case U'w': set = word(in_class); break;
      case U's': set = white_space(); break;
      case U'd': set = category_set(U_GC_ND_MASK); break;
      default: set = hex_digit(); break;  // \h: a hexadecimal digit in Ruby's syntax
    }
    if (e >= U'A' && e <= U'Z') set.complement();
    return set;
  }

  // \p{Name}, \p{^Name}, \P{Name}: at_ is on the backslash.
  icu::UnicodeSet parse_property(bool in_class) {
    const size_t where = at_;
    bool negated = peek(1) == U'P';
    size_t i = at_ + 3;
    if (i < p_.size() && p_[i] == U'^') {
      negated = !negated;
      ++i;
    }
    std::string name;
    for (; i < p_.size() && p_[i] != U'}'; ++i) {
      if (p_[i] >= 0x80) error("a property name must be ASCII", i);
      name.push_back(static_cast<char>(p_[i]));
    }
    if (i >= p_.size()) error("a property name is not closed with '}'", where);
    std::optional<icu::UnicodeSet> set = property_set(name, false, in_class);
    if (!set) error("unknown character property " + quote_for_message(name), where);
    at_ = i + 1;
    if (negated) set->complement();
    return *set;
  }

  // A character escape (at_ on the backslash): \t \n \r \f \v \a \e, \cX, \0oo (and \ooo inside
  // a class), \xHH (bytes of UTF-8 when above 7F), \x{H..}, \uHHHH; any other character escapes
  // itself (a letter too, as in Oniguruma). Leaves at_ past it.
  char32_t escaped_char(bool in_class) {
    const size_t where = at_;
    const char32_t e = peek(1);
    at_ += 2;
    switch (e) {
      case U't': return U'\t';
      case U'n': return U'\n';
      case U'r': return U'\r';
      case U'f': return U'\f';
      case U'v': return 0x0B;
      case U'a': return 0x07;
      case U'e': return 0x1B;
      case U'b': return 0x08;  // only inside a class (outside it is a word boundary)
      case U'c': {
        if (!has()) error("\\c must be followed by a character", where);
        const char32_t x = p_[at_++];
        return x == U'?' ? 0x7F : (x & 0x1F);
      }
      case U'C':  // \C-x, a control character like \cx
        if (peek() != U'-') return e;
        if (!has(1)) error("\\C- must be followed by a character", where);
        at_ += 2;
        return p_[at_ - 1] == U'?' ? 0x7F : (p_[at_ - 1] & 0x1F);
      case U'M':
        if (peek() == U'-') unsupported("\\M-x meta escapes", where);
        return e;
      case U'u': {
        char32_t value = 0;
        for (int k = 0; k < 4; ++k) {
          if (!has() || !is_hex(peek())) error("\\u must be followed by four hexadecimal digits", where);
          value = value * 16 + static_cast<char32_t>(hex_value(p_[at_++]));
        }
        return value;
      }
      case U'x': return hex_escape(where);
      default: break;
    }
    if (e >= U'0' && e <= U'7' && (e == U'0' || in_class)) {  // octal: \0oo, and \ooo in a class
      char32_t value = e - U'0';
      for (int k = 0; k < 2 && has() && peek() >= U'0' && peek() <= U'7'; ++k) value = value * 8 + (p_[at_++] - U'0');
      return value;
    }
    return e;
  }

  // \x{H...}, or \xHH: Oniguruma reads \xHH as a byte, and bytes above 7F as UTF-8 (\xE3\x81\x82
  // is あ), so a run of them has to form one character.
  char32_t hex_escape(size_t where) {
    if (peek() == U'{') {
      size_t i = at_ + 1;
      char32_t value = 0;
      size_t digits = 0;
      for (; i < p_.size() && is_hex(p_[i]) && digits < 8; ++i, ++digits) value = value * 16 + hex_value(p_[i]);
      if (digits == 0 || i >= p_.size() || p_[i] != U'}') error("\\x{ must hold hexadecimal digits and a '}'", where);
      at_ = i + 1;
      return value;
    }
    auto byte = [&]() -> int {
      int value = 0, digits = 0;
      while (digits < 2 && has() && is_hex(peek())) {
        value = value * 16 + hex_value(p_[at_++]);
        ++digits;
      }
      if (digits == 0) error("\\x must be followed by hexadecimal digits", where);
      return value;
    };
    const int lead = byte();
    if (lead < 0x80) return static_cast<char32_t>(lead);
    const int length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
    if (length == 0) error("\\x escapes above 7F must spell a character in UTF-8", where);
    std::string bytes(1, static_cast<char>(lead));
    for (int k = 1; k < length; ++k) {
      if (peek() != U'\\' || peek(1) != U'x') error("\\x escapes above 7F must spell a character in UTF-8", where);
      at_ += 2;
      bytes.push_back(static_cast<char>(byte()));
    }
    if (unicode::find_invalid_utf8(bytes)) error("\\x escapes above 7F must spell a character in UTF-8", where);
    return unicode::decode_utf8(bytes).front();
  }

  // ---- classes
  // Parses [...] at at_ (Oniguruma: nested classes are unions, && intersects, [:name:] is a POSIX
  // bracket, a ']' first is literal). Returns the set inside the top-level negation, which
  // `negated` reports: PCRE2 then case-folds a negated class the way Oniguruma does.
  icu::UnicodeSet parse_class(bool& negated, int depth = 0) {
    const size_t where = at_;
    if (depth > kMaxClassNesting) unsupported("classes nested more than 64 deep", where);
    ++at_;
    negated = false;
    if (peek() == U'^' && has()) {
      negated = true;
      ++at_;
    }
    icu::UnicodeSet operand;
    std::optional<icu::UnicodeSet> intersected;  // the operands left of each &&
    bool first = true;
    for (;;) {
      if (!has()) error("a class is not closed (missing ']')", where);
      const char32_t c = peek();
      if (c == U']' && !first) {
        ++at_;
        break;
      }
      first = false;
      if (c == U'&' && peek(1) == U'&') {
        if (intersected)
          intersected->retainAll(operand);
        else
          intersected = operand;
        operand.clear();
        at_ += 2;
        continue;
      }
      std::optional<icu::UnicodeSet> set;
      char32_t single = 0;
      if (c == U'[') {
        set = posix_bracket();
        if (!set) {
          bool inner_negated = false;
          set = parse_class(inner_negated, depth + 1);
          if (inner_negated) set->complement();
        }
      } else if (c == U'\\') {
        set = class_escape(single);
      } else {
        single = c;
        ++at_;
      }
      const bool range = peek() == U'-' && has(1) && peek(1) != U']';
      if (set) {
        if (range) error("a class (\\d, [..]...) cannot start a range", at_);
        operand.addAll(*set);
        continue;
      }
      if (!range) {
        if (is_scalar_value(single)) operand.add(static_cast<UChar32>(single));  // else it never occurs
        continue;
      }
      const size_t dash = at_;
      ++at_;
      char32_t last = 0;
      if (peek() == U'[') error("a range cannot end with a class", dash);
      if (peek() == U'\\') {
        if (class_escape(last)) error("a range cannot end with a class", dash);
      } else {
        last = p_[at_++];
      }
      if (last < single) error("a range goes backwards", dash);
      if (single <= kMaxCodePoint)
        operand.add(static_cast<UChar32>(single), static_cast<UChar32>(std::min(last, kMaxCodePoint)));
    }
    if (intersected) {
      intersected->retainAll(operand);
      return *intersected;
    }
    return operand;
  }

  // [:name:] or [:^name:] at at_, or nothing (at_ unchanged) when that is not what follows.
  std::optional<icu::UnicodeSet> posix_bracket() {
    if (peek(1) != U':') return std::nullopt;
    size_t i = at_ + 2;
    const bool negated = i < p_.size() && p_[i] == U'^';
    if (negated) ++i;
    std::string name;
    for (; i < p_.size() && p_[i] >= U'a' && p_[i] <= U'z' && name.size() < 8; ++i) name.push_back(static_cast<char>(p_[i]));
    if (i + 1 >= p_.size() || p_[i] != U':' || p_[i + 1] != U']') return std::nullopt;
    std::optional<icu::UnicodeSet> set = property_set(name, true, /*in_class=*/true);
    if (!set) error("unknown POSIX bracket [:" + name + ":]", at_);
    at_ = i + 2;
    if (negated) set->complement();
    return set;
  }

  // An escape inside brackets: a class (returned) or a character (in `single`).
  std::optional<icu::UnicodeSet> class_escape(char32_t& single) {
    const size_t where = at_;
    if (!has(1)) error("the pattern ends with a lone backslash", where);
    const char32_t e = peek(1);
    switch (e) {
      case U'w': case U'W': case U's': case U'S': case U'd': case U'D': case U'h': case U'H':
        at_ += 2;
        return shorthand_set(e, /*in_class=*/true);
      case U'p':
      case U'P':
        if (peek(2) != U'{') break;  // the letter
        return parse_property(/*in_class=*/true);
      case U'R': case U'X': case U'N': case U'O': case U'K': case U'A': case U'z': case U'Z': case U'G':
      case U'B': case U'y': case U'Y': case U'k': case U'g':
        unsupported(std::string("\\") + static_cast<char>(e) + " inside a class", where);
      default: break;
    }
    single = escaped_char(true);
    return std::nullopt;
  }

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

// ---- matching --------------------------------------------------------------------------------

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  const int length = pcre2_get_error_message(code, buffer, 256);
  std::u32string text;
  for (int i = 0; i < length; ++i) text.push_back(static_cast<char32_t>(buffer[i]));
  return unicode::encode_utf8(text);
}

// PCRE2's defaults for the work one match may do, and a bound on its memory: a pattern that
// backtracks catastrophically stops with an error after about ten million steps.
constexpr uint32_t kMatchLimit = 10'000'000;
constexpr uint32_t kDepthLimit = 10'000'000;
constexpr uint32_t kHeapLimitKiB = 256 * 1024;
constexpr size_t kJitStackMax = 8 << 20;

// Each thread's match context and JIT stack (neither may be shared by concurrent matches).
struct ThreadMatchState {
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  pcre2_match_data* data = nullptr;
  uint32_t data_pairs = 0;

  ThreadMatchState() {
    context = pcre2_match_context_create(nullptr);
    if (context == nullptr) throw std::bad_alloc();
    pcre2_set_match_limit(context, kMatchLimit);
    pcre2_set_depth_limit(context, kDepthLimit);
    pcre2_set_heap_limit(context, kHeapLimitKiB);
    jit_stack = pcre2_jit_stack_create(32 * 1024, kJitStackMax, nullptr);
    if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    pcre2_match_data_free(data);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;

  pcre2_match_data* match_data(uint32_t pairs) {
    if (data == nullptr || data_pairs < pairs) {
      pcre2_match_data_free(data);
      data = pcre2_match_data_create(pairs, nullptr);
      if (data == nullptr) throw std::bad_alloc();
      data_pairs = pairs;
    }
    return data;
  }
};

ThreadMatchState& thread_match_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  uint32_t pairs = 1;  // the whole match and the capture groups
  ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(const std::string& pattern, const Source& source)
    : pattern_(pattern), source_(source), compiled_(std::make_unique<Compiled>()) {
  const std::u32string translated = Translator(pattern, source).run();
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  if (context == nullptr) throw std::bad_alloc();
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);  // Oniguruma's: '.', '^' and '$' see only \n
  pcre2_set_bsr(context, PCRE2_BSR_UNICODE);     // \R: any Unicode line break
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                  PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error_code, &error_offset, context);
  pcre2_compile_context_free(context);
  if (compiled_->code == nullptr)
    fail(source, "the regular expression " + quote_for_message(pattern) +
                     " does not compile: " + pcre2_message(error_code));
  uint32_t captures = 0;
  pcre2_pattern_info(compiled_->code, PCRE2_INFO_CAPTURECOUNT, &captures);
  compiled_->pairs = captures + 1;
  // Where the platform has no JIT the interpreter runs the same pattern, only slower.
  (void)pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

Regex::~Regex() = default;

void Regex::find_all(std::u32string_view text, std::vector<Match>& matches) const {
  for (const char32_t c : text)
    if (c > kMaxCodePoint || (c >= 0xD800 && c <= 0xDFFF))
      fail(source_, "the regular expression " + quote_for_message(pattern_) +
                        " was given a text that holds no Unicode character (a surrogate or a value above U+10FFFF)");
  ThreadMatchState& state = thread_match_state();
  pcre2_match_data* data = state.match_data(compiled_->pairs);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // Oniguruma's FindMatches: search from where the last match ended; an empty match right there
  // is skipped by searching again one character further on (onig's regex.rs, FindMatches::next).
  size_t from = 0;
  std::optional<size_t> last_end;
  while (from <= text.size()) {
    const int rc =
        pcre2_match(compiled_->code, subject, text.size(), from, PCRE2_NO_UTF_CHECK, data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0) {
      const bool limit = rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
                         rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT;
      fail(source_, "the regular expression " + quote_for_message(pattern_) +
                        (limit ? " backtracks too much on a text of " + std::to_string(text.size()) +
                                     " characters (" + pcre2_message(rc) + "); a pattern with nested repeats such "
                                     "as (a+)+ can take exponential time"
                               : " failed on a text of " + std::to_string(text.size()) +
                                     " characters: " + pcre2_message(rc)));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0], end = ovector[1];
    if (begin > end || end > text.size())  // \K in a lookahead can do this; Oniguruma has no such match
      fail(source_, "the regular expression " + quote_for_message(pattern_) +
                        " gave a match that ends before it begins (\\K in a lookaround?)");
    if (begin == end && last_end == end) {
      from += 1;
      continue;
    }
    matches.emplace_back(begin, end);
    from = end;
    last_end = end;
  }
}

std::string escape_regex(std::string_view literal) {
  // Every ASCII character but letters and digits escaped: in Oniguruma's syntax (which Regex
  // reads) a backslash before any of them means the character itself, and none of them is then
  // special; letters and digits stay bare, since \d, \1... are not literals.
  std::string out;
  out.reserve(literal.size() * 2);
  for (const char c : literal) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80 && !is_ascii_alnum(byte)) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

PatternSpec read_pattern_spec(const Json& config, const char* key, const Source& source) {
  const Json& value = require_field(config, key, source);
  const Source at = source.at(key);
  if (!value.is_object() || value.size() != 1)
    fail(at, "expected an object with one key, \"String\" or \"Regex\", found " + describe_json(value) +
                 (value.is_object() ? " with " + std::to_string(value.size()) + " keys" : ""));
  PatternSpec pattern;
  if (value.contains("Regex")) {
    pattern.is_regex = true;
    pattern.text = read_string(value, "Regex", at);
  } else if (value.contains("String")) {
    pattern.text = read_string(value, "String", at);
  } else {
    fail(at, "unknown pattern kind " + quote_for_message(value.begin().key()) + " (expected \"String\" or \"Regex\")");
  }
  return pattern;
}

}  // namespace gradcache::hf::detail
