// Exactness against `tokenizers` itself, on the spot: over 100,000 texts (make_tokenizer_fixtures.py
// live, which ctest runs first as hf.live_expected_ids and which names its directory in
// GRADCACHE_HF_LIVE_DIR), all-MiniLM-L6-v2's real tokenizer.json, its cased twin, its vocab.txt,
// every code point, and the tokenizer.json we write loaded back by `tokenizers`. Skipped where the
// Python packages are not installed (the script says why in unavailable.txt).
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "hf_test_util.h"
#include "unicode_table.h"

using gradcache::hf::Tokenizer;

namespace {

namespace fs = std::filesystem;

struct LiveData {
  std::string dir;
  std::vector<std::string> texts;
  std::vector<std::vector<int64_t>> uncased, cased, truncated;
  nlohmann::json summary;
};

// The live directory, or why there is none (then the tests skip).
std::string live_dir(std::string& why_not) {
  const char* dir = std::getenv("GRADCACHE_HF_LIVE_DIR");
  if (dir == nullptr || *dir == '\0') {
    why_not = "GRADCACHE_HF_LIVE_DIR is not set: run through ctest, which makes the expected ids first";
    return "";
  }
  if (fs::exists(fs::path(dir) / "unavailable.txt")) {
    why_not = "no Hugging Face tokenizers: " + hf_test::read_file((fs::path(dir) / "unavailable.txt").string());
    return "";
  }
  if (!fs::exists(fs::path(dir) / "summary.json")) {
    why_not = std::string(dir) + " holds no expected ids: ctest makes them with GRADCACHE_PYTHON (hf.live_expected_ids)";
    return "";
  }
  return dir;
}

const LiveData& live() {
  static const LiveData data = [] {
    LiveData d;
    std::string why_not;
    d.dir = live_dir(why_not);
    const fs::path dir(d.dir);
    d.summary = nlohmann::json::parse(hf_test::read_file((dir / "summary.json").string()));
    for (const nlohmann::json& text : hf_test::read_jsonl((dir / "texts.jsonl").string()))
      d.texts.push_back(text.get<std::string>());
    d.uncased = hf_test::read_id_lines((dir / "expected_uncased.txt").string());
    d.cased = hf_test::read_id_lines((dir / "expected_cased.txt").string());
    d.truncated = hf_test::read_id_lines((dir / "expected_truncated.txt").string());
    return d;
  }();
  return data;
}

#define SKIP_WITHOUT_LIVE_DATA()                            \
  do {                                                      \
    std::string why_not;                                    \
    if (live_dir(why_not).empty()) GTEST_SKIP() << why_not; \
  } while (false)

std::string live_file(const std::string& name) { return (fs::path(live().dir) / name).string(); }

// The texts the truncation check and the speed comparison use.
std::vector<std::string> every_nth_text() {
  const auto every = live().summary.at("every").get<size_t>();
  std::vector<std::string> texts;
  for (size_t i = 0; i < live().texts.size(); i += every) texts.push_back(live().texts[i]);
  return texts;
}

TEST(HfLive, RealTokenizerJsonOnAllTexts) {
  SKIP_WITHOUT_LIVE_DATA();
  ASSERT_GE(live().texts.size(), 100000u);
  const Tokenizer tokenizer = Tokenizer::from_json(hf_test::read_file(live_file("uncased_tokenizer.json")), "uncased");
  EXPECT_EQ(tokenizer.truncation_max_length(), 128u);  // all-MiniLM-L6-v2's truncation section
  EXPECT_EQ(tokenizer.pad_id(), 0);
  hf_test::expect_same_ids(
      live().texts, live().uncased, [&](const std::string& t) { return tokenizer.encode(t); },
      "all-MiniLM-L6-v2 tokenizer.json");
  // Truncated, every `every`-th text.
  const size_t truncate_to = live().summary.at("truncate_to").get<size_t>();
  hf_test::expect_same_ids(
      every_nth_text(), live().truncated, [&](const std::string& t) { return tokenizer.encode(t, truncate_to); },
      "truncated");
}

// One thread each, the same texts: this encode() and `tokenizers` (encode_batch, which the script
// timed in a process of its own with RAYON_NUM_THREADS=1).
TEST(HfLive, SpeedNextToTokenizers) {
  SKIP_WITHOUT_LIVE_DATA();
  const Tokenizer tokenizer = Tokenizer::from_json(hf_test::read_file(live_file("uncased_tokenizer.json")), "uncased");
  const std::vector<std::string> texts = every_nth_text();
  size_t tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& text : texts) tokens += tokenizer.encode(text).size();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::json& hf = live().summary.at("hf_one_thread");
  EXPECT_EQ(texts.size(), hf.at("texts").get<size_t>());
  EXPECT_EQ(tokens, hf.at("tokens").get<size_t>());
  const double hf_seconds = hf.at("seconds").get<double>();
  std::printf(
      "encode, one thread, %zu texts, %zu tokens: ours %.2f s (%.0f texts/s, %.0f tokens/s), "
      "tokenizers %.2f s (%.0f texts/s, %.0f tokens/s)\n",
      texts.size(), tokens, seconds, texts.size() / seconds, tokens / seconds, hf_seconds, texts.size() / hf_seconds,
      tokens / hf_seconds);
}

TEST(HfLive, CasedTokenizerJsonOnAllTexts) {
  SKIP_WITHOUT_LIVE_DATA();
  const Tokenizer tokenizer = Tokenizer::from_json(hf_test::read_file(live_file("cased_tokenizer.json")), "cased");
  hf_test::expect_same_ids(
      live().texts, live().cased, [&](const std::string& t) { return tokenizer.encode(t); }, "cased tokenizer.json");
}

// The directory holds vocab.txt and tokenizer_config.json but no tokenizer.json.
TEST(HfLive, VocabTxtOnAllTexts) {
  SKIP_WITHOUT_LIVE_DATA();
  ASSERT_FALSE(fs::exists(live_file("tokenizer.json")));
  const Tokenizer tokenizer = Tokenizer::from_directory(live().dir);
  hf_test::expect_same_ids(
      live().texts, live().uncased, [&](const std::string& t) { return tokenizer.encode(t); }, "vocab.txt");
  // The script checked that transformers' own vocab.txt path agrees with tokenizer.json.
  EXPECT_EQ(live().summary.at("vocab_path_mismatches").get<int>(), 0);
}

// What to_json() writes, `tokenizers` loads with the same truncation and padding and encodes to
// the same ids (every `every`-th text: a Python process per file), and we read back to the same
// file.
TEST(HfLive, ToJsonLoadsInTokenizers) {
  SKIP_WITHOUT_LIVE_DATA();
  for (const std::string name : {"uncased", "cased"}) {
    const std::string reference = live_file(name + "_tokenizer.json");
    const Tokenizer tokenizer = Tokenizer::from_json(hf_test::read_file(reference), name);
    const std::string json = tokenizer.to_json();
    EXPECT_EQ(Tokenizer::from_json(json, "to_json").to_json(), json);
    const std::string written = live_file("written_" + name + ".json");
    std::ofstream(written) << json;
    const std::string ids = live_file("written_" + name + "_ids.txt");
    const std::string log = live_file("written_" + name + ".log");
    const std::string command = std::string("'") + GRADCACHE_HF_PYTHON + "' '" + GRADCACHE_HF_SCRIPT + "' encode '" +
                                written + "' '" + live_file("texts.jsonl") + "' '" + ids + "' '" + reference + "' > '" +
                                log + "' 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << command << "\n" << hf_test::read_file(log);
    const std::vector<std::vector<int64_t>> theirs = hf_test::read_id_lines(ids);
    hf_test::expect_same_ids(
        every_nth_text(), theirs, [&](const std::string& t) { return tokenizer.encode(t); },
        "tokenizers with our " + name + " tokenizer.json");
  }
}

TEST(HfLive, EveryCodePointAsTokenizersTreatsIt) {
  SKIP_WITHOUT_LIVE_DATA();
  EXPECT_EQ(hf_unicode_test::compare_with_table(hf_test::read_file(live_file("unicode_table.txt")),
                                                /*table_has_hangul=*/true),
            0u);
}

}  // namespace
