// Oniguruma's character classes (\w, \s, \d, \h, \p{..}, [:name:]) as code point sets, with the
// meaning Oniguruma 6.9.10 gives them over Unicode 16.0: ICU's data restricted to that version and
// completed by unicode16_tables.h. The translation of patterns (regex_translate.cpp) writes them
// out as ranges; regex.cpp tells the whole story.
#pragma once

#include <unicode/uchar.h>
#include <unicode/uniset.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gradcache::hf::detail::onig_classes {

/// The largest Unicode code point.
constexpr char32_t kMaxCodePoint = 0x10FFFF;

/// The characters this ICU assigns after Unicode 16.0: unassigned for Oniguruma.
const icu::UnicodeSet& newer_than_unicode_16();
/// The characters unicode16_tables.h describes (ICU's answer for them is replaced by the table's).
const icu::UnicodeSet& table_characters();
/// The characters of the general categories in `mask` (U_GC_..._MASK), as Unicode 16.0 has them.
icu::UnicodeSet category_set(uint32_t mask);
/// The characters with binary `property`, as Unicode 16.0 has them (`flag`: its bit in the table).
icu::UnicodeSet flag_set(UProperty property, uint8_t flag);
/// The code points first to last.
icu::UnicodeSet range_set(char32_t first, char32_t last);
/// White_Space (Oniguruma's \s and [:space:]).
icu::UnicodeSet white_space();
/// 0-9, A-F and a-f (Ruby's \h, [:xdigit:]).
icu::UnicodeSet hex_digit();
/// Oniguruma's Word (\w); `in_class`: inside brackets, where it lacks ² ³ ¹ ¼ ½ ¾.
icu::UnicodeSet word(bool in_class);
/// Graph: everything but white space, controls, unassigned and surrogates.
icu::UnicodeSet graph();
/// A property name as Oniguruma compares them: lower case, without spaces, '_' and '-'.
std::string loose_name(std::string_view name);
/// The names (loose_name) whose Oniguruma meaning is its own (the POSIX-like ones), or nothing.
std::optional<icu::UnicodeSet> onig_named_set(const std::string& name, bool posix_bracket, bool in_class);
/// The script called `name` (loose_name), as Unicode 16.0 has it, or nothing.
std::optional<icu::UnicodeSet> script_set(const std::string& name);
/// \p{name} (or [:name:] when `posix_bracket`) as Oniguruma means it, or nothing for an unknown name.
std::optional<icu::UnicodeSet> property_set(const std::string& raw_name, bool posix_bracket, bool in_class);
/// Adds to `set` the case partners (by Unicode 16.0's new case pairs) of the characters it holds.
void add_unicode16_case_partners(icu::UnicodeSet& set);

}  // namespace gradcache::hf::detail::onig_classes
