// Shared by the tokenizer tests: the fixtures, reading them, and comparing many texts' ids with
// a report of the texts that differ.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gradcache/hf/tokenizer.h"

namespace hf_test {

/// tests/hf/fixtures (the committed files; make_tokenizer_fixtures.py sample makes them).
inline std::string fixture(const std::string& name) { return std::string(GRADCACHE_HF_FIXTURES) + "/" + name; }

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> records;
  std::istringstream lines(read_file(path));
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) records.push_back(nlohmann::json::parse(line));
  return records;
}

/// Lines of space-separated ids (make_tokenizer_fixtures.py live writes them).
inline std::vector<std::vector<int64_t>> read_id_lines(const std::string& path) {
  std::vector<std::vector<int64_t>> all;
  std::istringstream lines(read_file(path));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::vector<int64_t> ids;
    for (int64_t id; fields >> id;) ids.push_back(id);
    all.push_back(std::move(ids));
  }
  return all;
}

inline std::string show(const std::vector<int64_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  return out + "]";
}

/// Compares `encode(texts[i])` with `expected[i]` for every text; reports the first mismatches
/// (the text JSON-escaped, the ids expected and got) and fails if there is any.
inline size_t expect_same_ids(const std::vector<std::string>& texts, const std::vector<std::vector<int64_t>>& expected,
                              const std::function<std::vector<int64_t>(const std::string&)>& encode,
                              const std::string& what) {
  EXPECT_EQ(texts.size(), expected.size()) << what;
  size_t mismatches = 0;
  for (size_t i = 0; i < texts.size() && i < expected.size(); ++i) {
    const std::vector<int64_t> got = encode(texts[i]);
    if (got == expected[i]) continue;
    if (++mismatches <= 20)
      ADD_FAILURE() << what << ": text " << i << " " << nlohmann::json(texts[i]).dump() << "\n  expected "
                    << show(expected[i]) << "\n  got      " << show(got);
  }
  EXPECT_EQ(mismatches, 0u) << what << ": " << mismatches << " of " << texts.size() << " texts differ";
  return mismatches;
}

/// Whether `text` (an error message) contains `part`; the message is shown when it does not.
inline testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

/// What a call throws, as a TokenizerError's message ("" if it did not throw one).
template <class F>
std::string error_of(F&& call) {
  try {
    call();
  } catch (const gradcache::hf::TokenizerError& error) {
    return error.what();
  }
  return "";
}

}  // namespace hf_test
