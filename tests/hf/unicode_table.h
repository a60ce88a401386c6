// Comparing the Unicode steps with a table of what `tokenizers` does to each code point alone
// (make_tokenizer_fixtures.py writes it: "FIRST[-LAST] FIELD;FIELD", see unicode_rows there).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "hf/unicode.h"

namespace hf_unicode_test {

inline std::string hexes(const std::u32string& text) {
  std::string out;
  for (const char32_t c : text) {
    char buffer[12];
    std::snprintf(buffer, sizeof buffer, "%s%X", out.empty() ? "" : " ", static_cast<unsigned>(c));
    out += buffer;
  }
  return out;
}

/// The fields of one code point, as the script writes them, computed with src/hf/unicode.h.
inline std::string fields_of(char32_t c) {
  namespace unicode = gradcache::hf::unicode;
  std::string fields;
  const auto add = [&](const std::string& field) { fields += (fields.empty() ? "" : ";") + field; };
  if (c == 0 || c == 0xFFFD || unicode::is_control(c)) {
    add("clean=del");
  } else if (unicode::is_whitespace(c) && c != U' ') {
    add("clean=sp");
  }
  if (unicode::is_whitespace(c)) {
    add("pre=2");
  } else if (unicode::is_punctuation(c)) {
    add("pre=3");
  }
  std::u32string stripped(1, c);
  unicode::nfd(stripped);
  stripped.erase(std::remove_if(stripped.begin(), stripped.end(), unicode::is_nonspacing_mark), stripped.end());
  if (stripped != std::u32string(1, c)) add("strip=" + hexes(stripped));
  std::u32string lowered;
  unicode::append_lowercase(lowered, c);
  if (lowered != std::u32string(1, c)) add("lower=" + hexes(lowered));
  if (unicode::is_chinese_char(c)) add("cjk");
  return fields;
}

/// The number of code points on which the table and src/hf/unicode.h disagree (the first few are
/// reported as failures).
inline size_t compare_with_table(const std::string& table, bool table_has_hangul) {
  std::map<char32_t, std::pair<char32_t, std::string>> ranges;  // first -> (last, fields)
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    const std::string span = line.substr(0, space);
    const size_t dash = span.find('-');
    const auto first = static_cast<char32_t>(std::stoul(span.substr(0, dash), nullptr, 16));
    const auto last =
        dash == std::string::npos ? first : static_cast<char32_t>(std::stoul(span.substr(dash + 1), nullptr, 16));
    ranges[first] = {last, line.substr(space + 1)};
  }
  EXPECT_GT(ranges.size(), 1000u) << "the table looks truncated";
  size_t mismatches = 0;
  for (char32_t c = 0; c < 0x110000; ++c) {
    if ((c >= 0xD800 && c <= 0xDFFF) || (!table_has_hangul && c >= 0xAC00 && c <= 0xD7A3)) continue;
    std::string expected;
    auto it = ranges.upper_bound(c);
    if (it != ranges.begin() && (--it)->second.first >= c) expected = it->second.second;
    const std::string got = fields_of(c);
    if (got != expected && ++mismatches <= 20) {
      char code[12];
      std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
      ADD_FAILURE() << code << ": tokenizers [" << expected << "], ours [" << got << "]";
    }
  }
  return mismatches;
}

}  // namespace hf_unicode_test
