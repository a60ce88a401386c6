// The Unicode 16.0 properties of the characters where ICU 72 (Unicode 15.0) differs from
// Unicode 16.0: the characters of Unicode 15.1 and 16.0, and the older ones whose general category
// or binary properties changed. `tokenizers` 0.23 runs its regular expressions with Oniguruma
// 6.9.10, whose tables are Unicode 16.0; hf/regex.cpp builds \p{..}, \w and the other classes from
// ICU, restricted to Unicode 16.0, and these rows. Generated from Oniguruma's answers (every code
// point against every general category, script and property below, through `tokenizers`) and
// ICU 72's, so that the classes agree with Oniguruma on every code point.
#pragma once

#include <unicode/uchar.h>

#include <cstdint>

namespace gradcache::hf::detail::unicode16 {

enum Flag : uint8_t { kAlphabetic = 1, kUppercase = 2, kLowercase = 4, kEmoji = 8, kIdeographic = 16 };

struct Row {
  char32_t first;
  char32_t last;
  UCharCategory category;
  const char* script;  // the Script property's long name (Unicode 16.0 names; ICU 72 lacks some)
  uint8_t flags;       // Alphabetic, Uppercase, Lowercase, Emoji, Ideographic
};

/// Sorted by code point, not overlapping.
inline constexpr Row kRows[] = {
    {0x0363, 0x036F, U_NON_SPACING_MARK, "Inherited", kAlphabetic},
    {0x0897, 0x0897, U_NON_SPACING_MARK, "Arabic", kAlphabetic},
    {0x1B4E, 0x1B4F, U_OTHER_PUNCTUATION, "Balinese", 0},
    {0x1B7F, 0x1B7F, U_OTHER_PUNCTUATION, "Balinese", 0},
    {0x1C89, 0x1C89, U_UPPERCASE_LETTER, "Cyrillic", kAlphabetic | kUppercase},
    {0x1C8A, 0x1C8A, U_LOWERCASE_LETTER, "Cyrillic", kAlphabetic | kLowercase},
    {0x1DD3, 0x1DE6, U_NON_SPACING_MARK, "Inherited", kAlphabetic},
    {0x2427, 0x2429, U_OTHER_SYMBOL, "Common", 0},
    {0x2FFC, 0x2FFF, U_OTHER_SYMBOL, "Common", 0},
    {0x31E4, 0x31E5, U_OTHER_SYMBOL, "Common", 0},
    {0x31EF, 0x31EF, U_OTHER_SYMBOL, "Common", 0},
    {0xA7CB, 0xA7CC, U_UPPERCASE_LETTER, "Latin", kAlphabetic | kUppercase},
    {0xA7CD, 0xA7CD, U_LOWERCASE_LETTER, "Latin", kAlphabetic | kLowercase},
    {0xA7DA, 0xA7DA, U_UPPERCASE_LETTER, "Latin", kAlphabetic | kUppercase},
    {0xA7DB, 0xA7DB, U_LOWERCASE_LETTER, "Latin", kAlphabetic | kLowercase},
    {0xA7DC, 0xA7DC, U_UPPERCASE_LETTER, "Latin", kAlphabetic | kUppercase},
    {0x105C0, 0x105F3, U_OTHER_LETTER, "Todhri", kAlphabetic},
    {0x10D40, 0x10D49, U_DECIMAL_DIGIT_NUMBER, "Garay", 0},
    {0x10D4A, 0x10D4D, U_OTHER_LETTER, "Garay", kAlphabetic},
    {0x10D4E, 0x10D4E, U_MODIFIER_LETTER, "Garay", kAlphabetic},
    {0x10D4F, 0x10D4F, U_OTHER_LETTER, "Garay", kAlphabetic},
    {0x10D50, 0x10D65, U_UPPERCASE_LETTER, "Garay", kAlphabetic | kUppercase},
    {0x10D69, 0x10D69, U_NON_SPACING_MARK, "Garay", kAlphabetic},
    {0x10D6A, 0x10D6D, U_NON_SPACING_MARK, "Garay", 0},
    {0x10D6E, 0x10D6E, U_DASH_PUNCTUATION, "Garay", 0},
    {0x10D6F, 0x10D6F, U_MODIFIER_LETTER, "Garay", kAlphabetic},
    {0x10D70, 0x10D85, U_LOWERCASE_LETTER, "Garay", kAlphabetic | kLowercase},
    {0x10D8E, 0x10D8F, U_MATH_SYMBOL, "Garay", 0},
    {0x10EC2, 0x10EC4, U_OTHER_LETTER, "Arabic", kAlphabetic},
    {0x10EFC, 0x10EFC, U_NON_SPACING_MARK, "Arabic", kAlphabetic},
    {0x11380, 0x11389, U_OTHER_LETTER, "Tulu_Tigalari", kAlphabetic},
    {0x1138B, 0x1138B, U_OTHER_LETTER, "Tulu_Tigalari", kAlphabetic},
    {0x1138E, 0x1138E, U_OTHER_LETTER, "Tulu_Tigalari", kAlphabetic},
    {0x11390, 0x113B5, U_OTHER_LETTER, "Tulu_Tigalari", kAlphabetic},
    {0x113B7, 0x113B7, U_OTHER_LETTER, "Tulu_Tigalari", kAlphabetic},
    {0x113B8, 0x113BA, U_COMBINING_SPACING_MARK, "Tulu_Tigalari", kAlphabetic},
    {0x113BB, 0x113C0, U_NON_SPACING_MARK, "Tulu_Tigalari", kAlphabetic},
    {0x113C2, 0x113C2, U_COMBINING_SPACING_MARK, "Tulu_Tigalari", kAlphabetic},
    {0x113C5, 0x113C5, U_COMBINING_SPACING_MARK, "Tulu_Tigalari", kAlphabetic},
    {0x113C7, 0x113CA, U_COMBINING_SPACING_MARK, "Tulu_Tigalari", kAlphabetic},
    {0x113CC, 0x113CD, U_COMBINING_SPACING_MARK, "Tulu_Tigalari", kAlphabetic},
    {0x113CE, 0x113CE, U_NON_SPACING_MARK, "Tulu_Tigalari", 0},
    {0x113CF, 0x113CF, U_COMBINING_SPACING_MARK, "Tulu_Tigalari", 0},
    {0x113D0, 0x113D0, U_NON_SPACING_MARK, "Tulu_Tigalari", 0},
    {0x113D1, 0x113D1, U_OTHER_LETTER, "Tulu_Tigalari", kAlphabetic},
    {0x113D2, 0x113D2, U_NON_SPACING_MARK, "Tulu_Tigalari", 0},
    {0x113D3, 0x113D3, U_OTHER_LETTER, "Tulu_Tigalari", kAlphabetic},
    {0x113D4, 0x113D5, U_OTHER_PUNCTUATION, "Tulu_Tigalari", 0},
    {0x113D7, 0x113D8, U_OTHER_PUNCTUATION, "Tulu_Tigalari", 0},
    {0x113E1, 0x113E2, U_NON_SPACING_MARK, "Tulu_Tigalari", 0},
    {0x116D0, 0x116E3, U_DECIMAL_DIGIT_NUMBER, "Myanmar", 0},
    {0x1171E, 0x1171E, U_COMBINING_SPACING_MARK, "Ahom", kAlphabetic},
    {0x11BC0, 0x11BE0, U_OTHER_LETTER, "Sunuwar", kAlphabetic},
    {0x11BE1, 0x11BE1, U_OTHER_PUNCTUATION, "Sunuwar", 0},
    {0x11BF0, 0x11BF9, U_DECIMAL_DIGIT_NUMBER, "Sunuwar", 0},
    {0x11F5A, 0x11F5A, U_NON_SPACING_MARK, "Kawi", 0},
    {0x13460, 0x143FA, U_OTHER_LETTER, "Egyptian_Hieroglyphs", kAlphabetic},
    {0x16100, 0x1611D, U_OTHER_LETTER, "Gurung_Khema", kAlphabetic},
    {0x1611E, 0x16129, U_NON_SPACING_MARK, "Gurung_Khema", kAlphabetic},
    {0x1612A, 0x1612C, U_COMBINING_SPACING_MARK, "Gurung_Khema", kAlphabetic},
    {0x1612D, 0x1612E, U_NON_SPACING_MARK, "Gurung_Khema", kAlphabetic},
    {0x1612F, 0x1612F, U_NON_SPACING_MARK, "Gurung_Khema", 0},
    {0x16130, 0x16139, U_DECIMAL_DIGIT_NUMBER, "Gurung_Khema", 0},
    {0x16D40, 0x16D42, U_MODIFIER_LETTER, "Kirat_Rai", kAlphabetic},
    {0x16D43, 0x16D6A, U_OTHER_LETTER, "Kirat_Rai", kAlphabetic},
    {0x16D6B, 0x16D6C, U_MODIFIER_LETTER, "Kirat_Rai", kAlphabetic},
    {0x16D6D, 0x16D6F, U_OTHER_PUNCTUATION, "Kirat_Rai", 0},
    {0x16D70, 0x16D79, U_DECIMAL_DIGIT_NUMBER, "Kirat_Rai", 0},
    {0x18CFF, 0x18CFF, U_OTHER_LETTER, "Khitan_Small_Script", kAlphabetic | kIdeographic},
    {0x1CC00, 0x1CCEF, U_OTHER_SYMBOL, "Common", 0},
    {0x1CCF0, 0x1CCF9, U_DECIMAL_DIGIT_NUMBER, "Common", 0},
    {0x1CD00, 0x1CEB3, U_OTHER_SYMBOL, "Common", 0},
    {0x1E5D0, 0x1E5ED, U_OTHER_LETTER, "Ol_Onal", kAlphabetic},
    {0x1E5EE, 0x1E5EF, U_NON_SPACING_MARK, "Ol_Onal", 0},
    {0x1E5F0, 0x1E5F0, U_OTHER_LETTER, "Ol_Onal", kAlphabetic},
    {0x1E5F1, 0x1E5FA, U_DECIMAL_DIGIT_NUMBER, "Ol_Onal", 0},
    {0x1E5FF, 0x1E5FF, U_OTHER_PUNCTUATION, "Ol_Onal", 0},
    {0x1F8B2, 0x1F8BB, U_OTHER_SYMBOL, "Common", 0},
    {0x1F8C0, 0x1F8C1, U_OTHER_SYMBOL, "Common", 0},
    {0x1FA89, 0x1FA89, U_OTHER_SYMBOL, "Common", kEmoji},
    {0x1FA8F, 0x1FA8F, U_OTHER_SYMBOL, "Common", kEmoji},
    {0x1FABE, 0x1FABE, U_OTHER_SYMBOL, "Common", kEmoji},
    {0x1FAC6, 0x1FAC6, U_OTHER_SYMBOL, "Common", kEmoji},
    {0x1FADC, 0x1FADC, U_OTHER_SYMBOL, "Common", kEmoji},
    {0x1FADF, 0x1FADF, U_OTHER_SYMBOL, "Common", kEmoji},
    {0x1FAE9, 0x1FAE9, U_OTHER_SYMBOL, "Common", kEmoji},
    {0x1FBCB, 0x1FBEF, U_OTHER_SYMBOL, "Common", 0},
    {0x2EBF0, 0x2EE5D, U_OTHER_LETTER, "Han", kAlphabetic | kIdeographic},
};

/// The short names (ISO 15924) of the scripts that Unicode 16.0 added, which ICU 72 does not know.
inline constexpr const char* kNewScriptAliases[][2] = {
    {"Garay", "Gara"},  {"Gurung_Khema", "Gukh"},  {"Kirat_Rai", "Krai"}, {"Ol_Onal", "Onao"},
    {"Sunuwar", "Sunu"}, {"Todhri", "Todr"}, {"Tulu_Tigalari", "Tutg"},
};

}  // namespace gradcache::hf::detail::unicode16
