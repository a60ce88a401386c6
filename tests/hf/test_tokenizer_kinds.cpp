// Every kind of tokenizer.json against Hugging Face `tokenizers` itself: tokenizer_kinds.py makes
// one tokenizer per kind (RoBERTa, GPT-2, ModernBERT, Llama 3, Qwen 2/3, BLOOM, CLIP, Llama 2,
// Gemma, XLM-R, T5, MPNet, BERT and pipelines of the remaining components), a corpus of over
// 100,000 real and crafted lines (ill-formed UTF-8 included), and the ids `tokenizers` gives each
// line with and without the special tokens. This test encodes every line with
// gradcache::hf::Tokenizer and wants the same ids. The directory is named by
// GRADCACHE_TOKENIZER_KINDS_DIR (made by `tokenizer_kinds.py all DIR`); without it the tests skip.
//
// Torch-free: only the tokenizer library, GoogleTest and nlohmann/json.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gradcache/hf/tokenizer.h"

namespace {

namespace fs = std::filesystem;
using gradcache::hf::Tokenizer;
using Ids = std::vector<int64_t>;

// tokenizer_kinds.py's KINDS: one KIND_TEST each below (EveryKindMadeIsTested checks the lists agree).
const std::vector<std::string> kKinds = {"bert",
                                         "mpnet",
                                         "roberta",
                                         "gpt2",
                                         "modernbert",
                                         "llama3",
                                         "qwen2",
                                         "qwen3_embedding",
                                         "bloom",
                                         "clip",
                                         "llama2",
                                         "llama2_metaspace",
                                         "gemma",
                                         "xlmr",
                                         "xlmr_hub",
                                         "t5",
                                         "components_nfkc",
                                         "components_nfkd",
                                         "components_split",
                                         "components_metaspace_first",
                                         "components_metaspace_never",
                                         "components_unigram",
                                         "components_bpe_fuse_unk",
                                         "components_bpe_unk"};

// Mismatching lines shown per comparison (all are counted).
constexpr size_t kShown = 5;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The lines of a file, each without its '\n'. A last line without '\n' is an error: the corpus
// and the expected ids are written line by line, so a missing one means a file cut short.
std::vector<std::string> read_lines(const fs::path& path) {
  const std::string text = read_file(path);
  if (!text.empty() && text.back() != '\n')
    throw std::runtime_error(path.string() + ": the last line has no '\\n' (a file cut short?); make it again");
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.emplace_back(text, start, end - start);
  return lines;
}

// One line of expected.txt: a JSON array of integers, "[1,2,3]" (written by tokenizer_kinds.py).
Ids parse_ids(std::string_view line, const std::string& where) {
  Ids ids;
  auto bad = [&] { return std::runtime_error(where + ": not an array of ids: " + std::string(line.substr(0, 80))); };
  if (line.size() < 2 || line.front() != '[' || line.back() != ']') throw bad();
  size_t i = 1;
  const size_t end = line.size() - 1;
  while (i < end) {
    int64_t id = 0;
    const size_t first = i;
    for (; i < end && line[i] >= '0' && line[i] <= '9'; ++i) id = id * 10 + (line[i] - '0');
    if (i == first || i - first > 12) throw bad();
    ids.push_back(id);
    if (i < end && line[i++] != ',') throw bad();
    if (i == end && line[i - 1] == ',') throw bad();
  }
  return ids;
}

std::vector<Ids> read_expected(const fs::path& path) {
  std::vector<Ids> all;
  const std::vector<std::string> lines = read_lines(path);
  all.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i)
    all.push_back(parse_ids(lines[i], path.string() + ":" + std::to_string(i + 1)));
  return all;
}

std::string show(const Ids& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

// The length of the well-formed UTF-8 sequence at text[i] (Unicode Table 3-7), its code point in
// `c`; 0 if the bytes there are ill-formed.
size_t utf8_length(std::string_view text, size_t i, char32_t& c) {
  const auto b = static_cast<unsigned char>(text[i]);
  size_t continuation = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the first continuation byte
  if (b >= 0xC2 && b <= 0xDF) {
    continuation = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    continuation = 2;
    if (b == 0xE0) low = 0xA0;   // no overlong forms
    if (b == 0xED) high = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    continuation = 3;
    if (b == 0xF0) low = 0x90;   // no overlong forms
    if (b == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + continuation >= text.size()) return 0;  // cut short by the end of the text
  c = b & (0x7F >> (continuation + 1));
  for (size_t k = 1; k <= continuation; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if (next < (k == 1 ? low : 0x80) || next > (k == 1 ? high : 0xBF)) return 0;
    c = (c << 6) | (next & 0x3F);
  }
  return continuation + 1;
}

// A corpus line for a failure message: printable characters as they are; control, format and
// invisible ones as \u{XXXX}; ill-formed bytes as \xNN; cut after 160 characters.
std::string escaped(std::string_view text) {
  std::string out = "\"";
  size_t shown = 0;
  char hex[16];
  for (size_t i = 0; i < text.size(); ++shown) {
    if (shown == 160) return out + "\"... (" + std::to_string(text.size()) + " bytes)";
    const unsigned char b = static_cast<unsigned char>(text[i]);
    if (b >= 0x20 && b < 0x7F) {
      if (b == '"' || b == '\\') out += '\\';
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    char32_t c = b;
    size_t length = b < 0x80 ? 1 : utf8_length(text, i, c);
    if (length == 0) {
      std::snprintf(hex, sizeof hex, "\\x%02X", b);
      out += hex;
      ++i;
      continue;
    }
    const bool invisible = c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0xA0) || c == 0xAD ||
                           (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
                           (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF || (c >= 0xFE00 && c <= 0xFE0F) ||
                           c >= 0xE0000 || (c >= 0x300 && c <= 0x36F);
    if (invisible) {
      std::snprintf(hex, sizeof hex, "\\u{%04X}", static_cast<unsigned>(c));
      out += hex;
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out + "\"";
}

struct KindsData {
  fs::path dir;
  std::string why_not;  // set when there is nothing to test (the tests skip)
  std::string error;    // set when the directory is there but unusable (the tests fail)
  nlohmann::json summary;
  std::vector<std::string> lines;
};

KindsData load() {
  KindsData data;
  const char* dir = std::getenv("GRADCACHE_TOKENIZER_KINDS_DIR");
  if (dir == nullptr || *dir == '\0') {
    data.why_not =
        "GRADCACHE_TOKENIZER_KINDS_DIR is not set: make the directory with `python "
        "tests/hf/tokenizer_kinds.py all DIR` and name it there";
    return data;
  }
  data.dir = dir;
  if (!fs::is_directory(data.dir)) {
    data.why_not = std::string("GRADCACHE_TOKENIZER_KINDS_DIR=") + dir +
                   " is not a directory: make it with `python tests/hf/tokenizer_kinds.py all " + dir + "`";
    return data;
  }
  if (fs::exists(data.dir / "unavailable.txt")) {
    data.why_not = "no Python reference: " + read_file(data.dir / "unavailable.txt");
    return data;
  }
  if (!fs::exists(data.dir / "summary.json")) {
    data.why_not = std::string(dir) + " holds no summary.json: `tokenizer_kinds.py expected` has not run there";
    return data;
  }
  try {
    data.summary = nlohmann::json::parse(read_file(data.dir / "summary.json"));
    fs::path corpus = data.summary.at("corpus").get<std::string>();
    if (corpus.is_relative()) corpus = data.dir / corpus;
    data.lines = read_lines(corpus);
    const auto lines = data.summary.at("corpus_lines").get<size_t>();
    if (data.lines.size() != lines)
      data.error = corpus.string() + " has " + std::to_string(data.lines.size()) + " lines, summary.json says " +
                   std::to_string(lines) +
                   ": the corpus changed after the ids were made; run tokenizer_kinds.py all again";
  } catch (const std::exception& e) {
    data.error = std::string(dir) + ": " + e.what();
  }
  return data;
}

const KindsData& kinds_data() {
  static const KindsData data = load();
  return data;
}

#define SKIP_OR_FAIL_WITHOUT_DATA()                                          \
  do {                                                                       \
    if (!kinds_data().why_not.empty()) GTEST_SKIP() << kinds_data().why_not; \
    ASSERT_TRUE(kinds_data().error.empty()) << kinds_data().error;           \
  } while (false)

// Every corpus line through `encode`, against one expected file. Returns the mismatches.
size_t compare(const std::string& kind, const std::string& file, bool add_special_tokens, const Tokenizer& tokenizer) {
  const KindsData& data = kinds_data();
  const std::vector<Ids> expected = read_expected(data.dir / kind / file);
  EXPECT_EQ(expected.size(), data.lines.size()) << kind << "/" << file << ": one line of ids per corpus line";
  size_t mismatches = 0, tokens = 0;
  std::ostringstream shown;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < data.lines.size() && i < expected.size(); ++i) {
    Ids got;
    std::string error;
    try {
      got = tokenizer.encode(data.lines[i], 0, add_special_tokens);
    } catch (const std::exception& e) {
      error = e.what();
    }
    tokens += got.size();
    if (error.empty() && got == expected[i]) continue;
    if (++mismatches <= kShown) {
      shown << "\n  line " << i + 1 << " " << escaped(data.lines[i]) << "\n    expected " << show(expected[i]);
      if (error.empty())
        shown << "\n    got      " << show(got);
      else
        shown << "\n    threw    " << error;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (mismatches > 0) {
    ADD_FAILURE() << kind << " (" << file << ", add_special_tokens=" << add_special_tokens << "): " << mismatches
                  << " of " << data.lines.size() << " lines differ from Hugging Face tokenizers; the first "
                  << std::min(mismatches, kShown) << ":" << shown.str();
  } else {
    std::cout << kind << ": " << data.lines.size() << " lines, 0 mismatches (" << file << ", " << tokens << " ids, "
              << static_cast<int64_t>(tokens / (seconds > 0 ? seconds : 1e-9)) << " ids/s)\n";
  }
  return mismatches;
}

// Loads DIR/<kind> and compares every corpus line, with and without the special tokens.
void check_kind(const std::string& kind) {
  const fs::path kind_dir = kinds_data().dir / kind;
  ASSERT_TRUE(fs::exists(kind_dir / "tokenizer.json"))
      << kind_dir.string() << " has no tokenizer.json: tokenizer_kinds.py makes every kind; run it again";
  std::optional<Tokenizer> tokenizer;
  try {
    tokenizer = Tokenizer::from_directory(kind_dir.string());
  } catch (const std::exception& e) {
    FAIL() << kind << ": cannot load " << kind_dir.string() << ": " << e.what();
  }
  compare(kind, "expected.txt", true, *tokenizer);
  compare(kind, "expected_plain.txt", false, *tokenizer);
}

// One test per kind (TokenizerKinds.<kind>, the names ctest's filter and a reader look for).
#define KIND_TEST(kind)          \
  TEST(TokenizerKinds, kind) {   \
    SKIP_OR_FAIL_WITHOUT_DATA(); \
    check_kind(#kind);           \
  }

KIND_TEST(bert)
KIND_TEST(mpnet)
KIND_TEST(roberta)
KIND_TEST(gpt2)
KIND_TEST(modernbert)
KIND_TEST(llama3)
KIND_TEST(qwen2)
KIND_TEST(qwen3_embedding)
KIND_TEST(bloom)
KIND_TEST(clip)
KIND_TEST(llama2)
KIND_TEST(llama2_metaspace)
KIND_TEST(gemma)
KIND_TEST(xlmr)
KIND_TEST(xlmr_hub)
KIND_TEST(t5)
KIND_TEST(components_nfkc)
KIND_TEST(components_nfkd)
KIND_TEST(components_split)
KIND_TEST(components_metaspace_first)
KIND_TEST(components_metaspace_never)
KIND_TEST(components_unigram)
KIND_TEST(components_bpe_fuse_unk)
KIND_TEST(components_bpe_unk)

// A kind tokenizer_kinds.py makes that this file does not test would go unnoticed.
TEST(TokenizerKinds, EveryKindMadeIsTested) {
  SKIP_OR_FAIL_WITHOUT_DATA();
  std::vector<std::string> made;
  for (const auto& [kind, _] : kinds_data().summary.at("kinds").items()) made.push_back(kind);
  std::sort(made.begin(), made.end());
  std::vector<std::string> tested = kKinds;
  std::sort(tested.begin(), tested.end());
  EXPECT_EQ(made, tested) << "tokenizer_kinds.py's KINDS and the KIND_TESTs here should be the same kinds";
}

}  // namespace
