// The Translator's reading of classes and character escapes: bracket classes ([...] with nesting,
// && and POSIX brackets), \p{..} properties, the shorthands \w \s \d \h, and escapes that stand
// for one character (\t, \cX, \xHH as UTF-8 bytes, \uHHHH, octal). Split from
// regex_translate.cpp for length; regex.cpp tells the whole story.
#include "hf/regex_translate.h"

#include <algorithm>

#include "hf/json_fields.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail::onig_translation {

using onig_classes::category_set;
using onig_classes::hex_digit;
using onig_classes::kMaxCodePoint;
using onig_classes::property_set;
using onig_classes::white_space;
using onig_classes::word;

namespace {

bool is_hex(char32_t c) { return (c >= U'0' && c <= U'9') || (c >= U'A' && c <= U'F') || (c >= U'a' && c <= U'f'); }
int hex_value(char32_t c) { return c <= U'9' ? static_cast<int>(c - U'0') : static_cast<int>((c | 0x20) - U'a' + 10); }

}  // namespace

icu::UnicodeSet Translator::shorthand_set(char32_t e, bool in_class) const {
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
icu::UnicodeSet Translator::parse_property(bool in_class) {
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
char32_t Translator::escaped_char(bool in_class) {
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
char32_t Translator::hex_escape(size_t where) {
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
icu::UnicodeSet Translator::parse_class(bool& negated, int depth) {
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
std::optional<icu::UnicodeSet> Translator::posix_bracket() {
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
std::optional<icu::UnicodeSet> Translator::class_escape(char32_t& single) {
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

}  // namespace gradcache::hf::detail::onig_translation
