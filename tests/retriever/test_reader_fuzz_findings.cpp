// Regression tests for what fuzzing the readers (fuzz/, scripts/fuzz.sh) found. Each test names
// the finding; the input is the reduced crash input of the fuzz target.
#include "retriever/config/train_config.h"
#include "retriever/data/text_data.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace gradcache::retriever;

namespace {

class ReaderFuzzFindings : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gradcache_reader_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string write(const std::string& name, const std::string& contents) const {
    const fs::path file = dir_ / name;
    std::ofstream out(file, std::ios::binary);
    out << contents;
    EXPECT_TRUE(out.good());
    return file.string();
  }

  fs::path dir_;
};

bool valid_utf8(const std::string& text) { return !find_invalid_utf8(text).has_value(); }

// The message of the DataError that `read` throws (empty, and a test failure, if none).
template <class Read>
std::string error_of(Read&& read) {
  try {
    read();
  } catch (const DataError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no DataError";
  return {};
}

// Finding 1 (fuzz_train_examples, fuzz_collection): a JSONL line that is valid UTF-8 but has a
// non-ASCII character after the JSON value. nlohmann's message quotes the byte it stopped at,
// "last read: '\xC3'", i.e. half of "é": the error message was not valid UTF-8.
TEST_F(ReaderFuzzFindings, MalformedJsonMessageIsValidUtf8) {
  const std::string path = write("train.jsonl", "{\"query\": \"q\", \"positives\": [\"p\"]}\xC3\xA9\n");
  const std::string message = error_of([&] { read_train_examples(path); });
  EXPECT_TRUE(valid_utf8(message)) << message;
  EXPECT_NE(message.find("train.jsonl:1: malformed JSON"), std::string::npos) << message;
  EXPECT_NE(message.find("\\xC3"), std::string::npos) << "the stray byte should be shown escaped: " << message;

  // The same through the skip policy: the skip reasons and the final error.
  const std::string corpus = write("corpus.jsonl", "{\"id\": \"d\", \"text\": \"t\"}\xE2\x82\xAC\n");
  ReadStats stats;
  const std::string skipped = error_of([&] { read_collection(corpus, OnBadLine::Skip, &stats); });
  EXPECT_TRUE(valid_utf8(skipped)) << skipped;
  ASSERT_EQ(stats.skipped_examples.size(), 1u);
  EXPECT_TRUE(valid_utf8(stats.skipped_examples[0])) << stats.skipped_examples[0];
}

// Finding 1b: the token quoted after "last read" can be a whole string of any length; the
// message stays short.
TEST_F(ReaderFuzzFindings, MalformedJsonMessageDoesNotQuoteAHugeToken) {
  const std::string path = write("train.jsonl", "{\"query\": \"" + std::string(100000, 'a') + "\n");
  const std::string message = error_of([&] { read_train_examples(path); });
  EXPECT_LT(message.size(), 400u) << message.substr(0, 400);
}

// Finding 2 (review of the same code path): values in messages are cut at 60 bytes, which could
// split a multi-byte character.
TEST_F(ReaderFuzzFindings, ShortenedValuesInMessagesAreValidUtf8) {
  const std::string id = std::string(59, 'a') + "\xC3\xA9\xC3\xA9";  // the 60-byte cut falls inside "é"
  const std::string path = write("corpus.tsv", id + "\tfirst\n" + id + "\tsecond\n");
  const std::string message = error_of([&] { read_collection(path); });
  EXPECT_TRUE(valid_utf8(message)) << message;
  EXPECT_NE(message.find("duplicate id"), std::string::npos) << message;
}

}  // namespace

namespace {

// Finding 3 (fuzz_collection, a crash): a JSON number too large for a double ("55e55555") made
// nlohmann throw out_of_range.406, not parse_error; it escaped the reader (uncaught in the fuzz
// target: std::terminate), ignoring --on-bad-line skip and the PATH:LINE of the message.
TEST_F(ReaderFuzzFindings, NumberOverflowIsABadLine) {
  const std::string train = write("train.jsonl",
                                  "{\"query\": \"q\", \"positives\": [\"p\"], \"score\": 1e99999}\n"
                                  "{\"query\": \"q2\", \"positives\": [\"p2\"]}\n");
  const std::string message = error_of([&] { read_train_examples(train); });
  EXPECT_NE(message.find("train.jsonl:1: malformed JSON"), std::string::npos) << message;
  EXPECT_NE(message.find("number overflow"), std::string::npos) << message;
  ReadStats stats;
  const auto examples = read_train_examples(train, OnBadLine::Skip, &stats);
  ASSERT_EQ(examples.size(), 1u);
  EXPECT_EQ(examples[0].query, "q2");
  EXPECT_EQ(stats.skipped, 1u);

  const std::string corpus =
      write("corpus.jsonl", "{\"id\": 55e55555, \"text\": \"t\"}\n{\"id\": \"d\", \"text\": \"t\"}\n");
  EXPECT_NE(error_of([&] { read_collection(corpus); }).find("corpus.jsonl:1: malformed JSON"), std::string::npos);
  EXPECT_EQ(read_collection(corpus, OnBadLine::Skip).size(), 1u);

  // A long number is quoted whole by nlohmann; the message stays short.
  const std::string long_number = write("long.jsonl", "{\"query\": 1" + std::string(5000, '0') + "e99999}\n");
  EXPECT_LT(error_of([&] { read_train_examples(long_number); }).size(), 500u);
}

}  // namespace

// fuzz_config: a --config file with a stray byte inside a key. nlohmann's parse error quotes
// what it last read, so the message carried the invalid byte to the terminal (and to JSON).
TEST(ConfigFuzzFindings, ParseErrorQuotingInvalidUtf8IsPrintable) {
  const std::string text = "{\"eval_quer\xB3" "e\": 1}";
  try {
    parse_settings_text(text, "config.json");
    FAIL() << "a key with invalid UTF-8 was accepted";
  } catch (const SettingsError& e) {
    const std::string message = e.what();
    EXPECT_FALSE(find_invalid_utf8(message).has_value()) << message;
    EXPECT_NE(message.find("config.json"), std::string::npos) << message;
    EXPECT_NE(message.find("\\xB3"), std::string::npos) << message;
  }
}

// fuzz_config: an integer setting given a number it cannot hold. nlohmann converted 1.1e30 to
// int64_t (undefined behaviour, UBSan's report), and 64.7 silently to 64.
TEST(ConfigFuzzFindings, AnIntegerSettingRefusesNumbersItCannotHold) {
  for (const std::string value : {"1.11111e+30", "64.7", "18446744073709551615", "-1e3"}) {
    try {
      parse_settings_text("{\"batch_size\": " + value + "}", "config.json");
      FAIL() << "batch_size " << value << " was accepted";
    } catch (const SettingsError& e) {
      EXPECT_NE(std::string(e.what()).find("\"batch_size\" expects an integer"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(parse_settings_text("{\"batch_size\": 64, \"lr\": 1, \"steps\": 9223372036854775807}", "config.json"));
}
