// Texts no model should see but a program may be handed: a 10 MB line, a 1 MB word, bytes that
// are not UTF-8; and many threads encoding at once.
#include <chrono>
#include <thread>

#include "hf_test_util.h"

using gradcache::hf::Tokenizer;

namespace {

const Tokenizer& minilm() {
  static const Tokenizer tokenizer = Tokenizer::from_directory(hf_test::fixture("minilm"));
  return tokenizer;
}

std::vector<int64_t> pieces(const std::vector<int64_t>& ids) { return {ids.begin() + 1, ids.end() - 1}; }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A 10 MB line is the sentence's pieces over and over; the time is reported (a quadratic step
// would take hours, and ctest's timeout would stop it).
TEST(HfRobust, TenMegabyteLine) {
  const std::string sentence = "The café's naïve résumé (1999) — 北京 ümlaut! ";
  std::string text;
  while (text.size() < 10'000'000) text += sentence;
  const size_t repeats = text.size() / sentence.size();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int64_t> ids = minilm().encode(text);
  std::printf("10 MB line: %zu ids in %.2f s\n", ids.size(), seconds_since(start));
  const std::vector<int64_t> one = pieces(minilm().encode(sentence));
  ASSERT_EQ(ids.size(), repeats * one.size() + 2);
  for (size_t i = 0; i < repeats; i += 997)
    ASSERT_EQ(std::vector<int64_t>(ids.begin() + 1 + i * one.size(), ids.begin() + 1 + (i + 1) * one.size()), one);
  EXPECT_EQ(minilm().encode(text, 64).size(), 64u);
}

TEST(HfRobust, MegabyteWordIsUnknown) {
  const std::string word(1'000'000, 'a');
  EXPECT_EQ(minilm().encode(word), (std::vector<int64_t>{101, 100, 102}));
  EXPECT_EQ(minilm().encode("x " + word + " y"), (std::vector<int64_t>{101, 1060, 100, 1061, 102}));
}

// With no word limit, WordPiece spells a 1 MB word piece by piece: the trie keeps it linear.
TEST(HfRobust, MegabyteWordWithoutWordLimit) {
  nlohmann::json json = nlohmann::json::parse(minilm().to_json());
  json["model"]["max_input_chars_per_word"] = 4000000000u;
  const Tokenizer unlimited = Tokenizer::from_json(json.dump(), "unlimited");
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int64_t> ids = unlimited.encode(std::string(1'000'000, 'a'));
  std::printf("1 MB word without a limit: %zu ids in %.2f s\n", ids.size(), seconds_since(start));
  const std::vector<int64_t> pieces = unlimited.encode(std::string(1000, 'a'));
  ASSERT_GT(pieces.size(), 3u);
  // "aa" then "##aa" over and over: a thousand times the pieces of a thousandth of the word.
  EXPECT_EQ(ids[1], pieces[1]);
  EXPECT_EQ(ids.size() - 2, 1000 * (pieces.size() - 2));
}

// Ill-formed UTF-8 is read as U+FFFD (one per maximal ill-formed subpart), which clean_text then
// removes as it removes a U+FFFD in the text.
TEST(HfRobust, BytesThatAreNotUtf8) {
  EXPECT_EQ(minilm().encode("caf\xC3"), minilm().encode("caf\xEF\xBF\xBD"));
  EXPECT_EQ(minilm().encode("caf\xC3"), minilm().encode("caf"));
  EXPECT_EQ(minilm().encode("a\xFF\xFE"
                            "b c\x80"),
            minilm().encode("ab c"));
  EXPECT_EQ(minilm().encode(std::string("\0\0 hello \0", 10)), minilm().encode("hello"));
  std::string noise;
  for (int i = 0; i < 100000; ++i) noise.push_back(static_cast<char>((i * 7919) & 0xFF));
  const std::vector<int64_t> ids = minilm().encode(noise);
  for (const int64_t id : ids) ASSERT_TRUE(id >= 0 && id < minilm().vocab_size());
}

TEST(HfRobust, ThreadsEncodeAsOne) {
  std::vector<std::string> texts;
  for (const nlohmann::json& r : hf_test::read_jsonl(hf_test::fixture("sample.jsonl")))
    if (r.contains("text")) texts.push_back(r["text"].get<std::string>());
  std::vector<std::vector<int64_t>> serial;
  for (const std::string& text : texts) serial.push_back(minilm().encode(text));
  std::vector<std::thread> threads;
  std::vector<size_t> differences(4, 0);
  for (size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t, copy = minilm()] {
      for (size_t i = 0; i < texts.size(); ++i)
        differences[t] += copy.encode(texts[(i + t * 97) % texts.size()]) != serial[(i + t * 97) % texts.size()];
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(differences, std::vector<size_t>(4, 0));
}

}  // namespace
