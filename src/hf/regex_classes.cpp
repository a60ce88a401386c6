// Oniguruma's classes as code point sets (see regex_classes.h): each builds its set from ICU's
// Unicode data, restricted to Unicode 16.0 (the version of Oniguruma 6.9.10's tables) and completed
// by unicode16_tables.h where ICU is older. regex.cpp tells the whole story.
#include "hf/regex_classes.h"

#include <unicode/uscript.h>

#include <utility>

#include "hf/unicode16_tables.h"

namespace gradcache::hf::detail::onig_classes {

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

namespace {

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

}  // namespace

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

}  // namespace gradcache::hf::detail::onig_classes
