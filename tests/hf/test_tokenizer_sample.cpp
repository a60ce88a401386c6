// Exactness on the committed sample (tests/hf/fixtures/sample.jsonl: about 3,000 texts with the
// ids `tokenizers` gave, from make_tokenizer_fixtures.py sample): all-MiniLM-L6-v2's tokenizer
// read from its vocab.txt and through tokenizer.json, its cased twin, and a tiny tokenizer with
// the options BERT's own leaves unused. Needs no Python.
#include "hf_test_util.h"

using gradcache::hf::Tokenizer;

namespace {

struct Sample {
  std::vector<std::string> texts;
  std::vector<std::vector<int64_t>> uncased, cased, truncated;
  size_t truncate_to = 0;
};

const Sample& sample() {
  static const Sample loaded = [] {
    Sample s;
    const std::vector<nlohmann::json> records = hf_test::read_jsonl(hf_test::fixture("sample.jsonl"));
    s.truncate_to = records.at(0).at("truncate_to").get<size_t>();
    for (size_t i = 1; i < records.size(); ++i) {
      const nlohmann::json& r = records[i];
      s.texts.push_back(r.at("text").get<std::string>());
      s.uncased.push_back(r.at("uncased").get<std::vector<int64_t>>());
      s.cased.push_back(r.value("cased", s.uncased.back()));
      s.truncated.push_back(r.value("truncated", s.uncased.back()));
    }
    EXPECT_EQ(s.texts.size(), records.at(0).at("texts").get<size_t>());
    return s;
  }();
  return loaded;
}

Tokenizer minilm_from_vocab() { return Tokenizer::from_directory(hf_test::fixture("minilm")); }

Tokenizer minilm_cased_from_vocab() {
  return Tokenizer::from_vocab(hf_test::read_file(hf_test::fixture("minilm/vocab.txt")),
                               R"({"do_lower_case": false, "strip_accents": false})", "minilm-cased");
}

TEST(HfSample, ManyTexts) { EXPECT_GE(sample().texts.size(), 3000u); }

TEST(HfSample, UncasedFromVocabTxtMatchesTokenizers) {
  const Tokenizer tokenizer = minilm_from_vocab();
  hf_test::expect_same_ids(
      sample().texts, sample().uncased, [&](const std::string& t) { return tokenizer.encode(t); },
      "uncased, vocab.txt");
}

TEST(HfSample, TruncationMatchesTokenizers) {
  const Tokenizer tokenizer = minilm_from_vocab();
  hf_test::expect_same_ids(
      sample().texts, sample().truncated,
      [&](const std::string& t) { return tokenizer.encode(t, sample().truncate_to); }, "uncased, truncated");
}

TEST(HfSample, CasedFromVocabTxtMatchesTokenizers) {
  const Tokenizer tokenizer = minilm_cased_from_vocab();
  hf_test::expect_same_ids(
      sample().texts, sample().cased, [&](const std::string& t) { return tokenizer.encode(t); }, "cased, vocab.txt");
}

// The tokenizer.json path: what to_json() writes, read back, gives the same ids, and writes
// the same file again.
TEST(HfSample, ThroughTokenizerJsonMatchesTokenizers) {
  for (const bool cased : {false, true}) {
    const Tokenizer original = cased ? minilm_cased_from_vocab() : minilm_from_vocab();
    const std::string json = original.to_json();
    const Tokenizer reread = Tokenizer::from_json(json, "to_json");
    EXPECT_EQ(reread.to_json(), json);
    hf_test::expect_same_ids(
        sample().texts, cased ? sample().cased : sample().uncased,
        [&](const std::string& t) { return reread.encode(t); },
        cased ? "cased, tokenizer.json" : "uncased, tokenizer.json");
  }
}

TEST(HfSample, MiniLmIds) {
  const Tokenizer tokenizer = minilm_from_vocab();
  EXPECT_EQ(tokenizer.vocab_size(), 30522);
  EXPECT_EQ(tokenizer.pad_id(), 0);
  EXPECT_EQ(tokenizer.unk_id(), 100);
  EXPECT_EQ(tokenizer.cls_id(), 101);
  EXPECT_EQ(tokenizer.sep_id(), 102);
  EXPECT_EQ(tokenizer.token_to_id("[MASK]"), 103);
  EXPECT_EQ(tokenizer.token_to_id("no such token"), std::nullopt);
  EXPECT_EQ(tokenizer.num_special_tokens(), 2u);
  EXPECT_EQ(tokenizer.truncation_max_length(), std::nullopt);  // vocab.txt has none
  EXPECT_EQ(tokenizer.encode(""), (std::vector<int64_t>{101, 102}));
  EXPECT_EQ(tokenizer.tokenize("Unaffable café!"), (std::vector<std::string>{"una", "##ffa", "##ble", "cafe", "!"}));
}

// The tiny tokenizer: BertProcessing; strip_accents without lowercase; no CJK spacing; a
// 12-character word limit; added tokens with lstrip, rstrip, single_word and normalized=true.
TEST(HfSample, TinyTokenizerMatchesTokenizers) {
  const std::string json = hf_test::read_file(hf_test::fixture("tiny_tokenizer.json"));
  const Tokenizer tokenizer = Tokenizer::from_json(json, "tiny_tokenizer.json");
  std::vector<std::string> texts;
  std::vector<std::vector<int64_t>> expected;
  for (const nlohmann::json& record : hf_test::read_jsonl(hf_test::fixture("tiny_expected.jsonl"))) {
    texts.push_back(record.at("text").get<std::string>());
    expected.push_back(record.at("ids").get<std::vector<int64_t>>());
  }
  hf_test::expect_same_ids(
      texts, expected, [&](const std::string& t) { return tokenizer.encode(t); }, "tiny");
  const Tokenizer reread = Tokenizer::from_json(tokenizer.to_json(), "to_json");
  EXPECT_EQ(reread.to_json(), tokenizer.to_json());
  hf_test::expect_same_ids(
      texts, expected, [&](const std::string& t) { return reread.encode(t); }, "tiny, reread");
  EXPECT_GT(tokenizer.vocab_size(), *tokenizer.token_to_id("[MASK]"));
  EXPECT_EQ(tokenizer.pad_id(), *tokenizer.token_to_id("[PAD]"));
}

}  // namespace
