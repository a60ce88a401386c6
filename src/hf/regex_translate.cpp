// The Translator's main loop and everything outside brackets: atoms, repeats, groups and escapes,
// from Oniguruma's Ruby syntax to PCRE2's (classes are written out as ranges from
// regex_classes.h). Bracket classes and character escapes are in regex_class_syntax.cpp;
// regex.cpp tells the whole story.
#include "hf/regex_translate.h"

#include <algorithm>
#include <cstdio>

#include "hf/json_fields.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace onig_translation {

using onig_classes::add_unicode16_case_partners;
using onig_classes::word;

namespace {

void append_ascii(std::u32string& out, std::string_view text) { out.append(text.begin(), text.end()); }

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

}  // namespace

Translator::Translator(const std::string& pattern, const Source& source)
    : original_(pattern), source_(source), p_(unicode::decode_utf8(pattern)) {}

std::u32string Translator::run() {
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

void Translator::error(const std::string& what, size_t where) const {
  fail(source_, "the regular expression " + quote_for_message(original_) + " is not valid: " + what +
                    " (at character " + std::to_string(where) + ")");
}

void Translator::unsupported(const std::string& what, size_t where) const {
  fail(source_, "the regular expression " + quote_for_message(original_) + " uses " + what +
                    " (at character " + std::to_string(where) +
                    "), which this implementation cannot run as Oniguruma does; rewrite the pattern without it");
}

void Translator::step() {
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
void Translator::append_char(char32_t c) {
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
std::optional<Translator::Interval> Translator::parse_interval(size_t from) const {
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

// Wraps the last atom (with its repeat) in a group, so that a repeat can follow a repeat.
void Translator::wrap_atom() {
  out_.insert(atom_start_, U"(?:");
  out_.push_back(U')');
}

void Translator::quantifier() {
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
void Translator::open_group() {
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

void Translator::named_group(char32_t close, size_t start) {
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
void Translator::options_group(size_t start) {
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

void Translator::push_group(size_t start) {
  groups_.push_back(start);
  caseless_before_.push_back(caseless_);
  no_atom();
}

// ---- escapes outside brackets
void Translator::escape() {
  const size_t where = at_;
  if (!has(1)) error("the pattern ends with a lone backslash", where);
  const char32_t e = peek(1);
  if (class_or_assertion_escape(e, where)) return;
  if (e >= U'1' && e <= U'9') {
    numbered_escape(e, where);
    return;
  }
  const char32_t c = escaped_char(false);
  begin_atom();
  if (is_scalar_value(c))
    append_char(c);
  else
    append_ascii(out_, "(?!)");  // no text holds it (Oniguruma matches its UTF-8 bytes, which never occur)
}

bool Translator::class_or_assertion_escape(char32_t e, size_t where) {
  switch (e) {
    case U'w': case U'W': case U's': case U'S': case U'd': case U'D': case U'h': case U'H': {
      at_ += 2;
      icu::UnicodeSet set = shorthand_set(e, /*in_class=*/false);
      begin_atom();
      append_escape_class(out_, set);
      return true;
    }
    case U'p':
    case U'P': {
      if (peek(2) != U'{') break;  // Oniguruma: \p without {name} is the letter
      icu::UnicodeSet set = parse_property(/*in_class=*/false);
      begin_atom();
      append_escape_class(out_, set);
      return true;
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
      return true;
    }
    case U'A': case U'z': case U'Z': case U'G': case U'K':
      out_ += std::u32string{U'\\', e};
      at_ += 2;
      no_atom();
      return true;
    case U'X': unsupported("\\X (grapheme clusters follow each engine's own Unicode version)", where);
    case U'R': case U'N':
      begin_atom();
      out_ += std::u32string{U'\\', e};
      at_ += 2;
      return true;
    case U'O':  // any character, newline included
      begin_atom();
      append_ascii(out_, "(?s:.)");
      at_ += 2;
      return true;
    case U'y': case U'Y': unsupported("text segment boundaries (\\y, \\Y)", where);
    case U'k': case U'g': reference(e); return true;
    default: break;
  }
  return false;
}

void Translator::numbered_escape(char32_t e, size_t where) {
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
}

// \k<name>, \k'name', \g<name> (a subroutine call), which PCRE2 spells alike; \k<n> by number.
void Translator::reference(char32_t kind) {
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

}  // namespace onig_translation

std::u32string translate_onig_pattern(const std::string& pattern, const Source& source) {
  return onig_translation::Translator(pattern, source).run();
}

}  // namespace gradcache::hf::detail
