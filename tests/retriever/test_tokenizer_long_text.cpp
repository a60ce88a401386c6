// The tokenizer with long texts, in a process that also holds LibTorch's protobuf (this binary is
// linked against LibTorch through the retriever library, so the protobuf clash described in model/tokenizer.cpp
// is present), and with sentencepiece's logging.
//
// Before the fix, training on a text longer than sentencepiece's max_sentence_length (4192
// bytes) killed the process with SIGSEGV: sentencepiece warned about the text through a
// std::cerr it had bound, under RTLD_DEEPBIND, to libstdc++'s never-initialised copy.

#include "retriever/model/tokenizer.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace gradcache::retriever {
namespace {

namespace fs = std::filesystem;

std::string repeat(const std::string& piece, size_t times) {
  std::string text;
  text.reserve(piece.size() * times);
  for (size_t i = 0; i < times; ++i) text += piece;
  return text;
}

/// Ordinary short texts over a small vocabulary, then `extra`.
std::vector<std::string> training_texts(const std::vector<std::string>& extra) {
  const std::vector<std::string> words = {"river", "stone", "bright", "market", "winter", "garden",
                                          "signal", "copper", "harbor", "violet", "engine", "forest"};
  std::vector<std::string> texts;
  for (size_t i = 0; i < 300; ++i) {
    std::string text;
    for (size_t k = 0; k < 8; ++k) text += words[(i * 7 + k * 5 + k * k) % words.size()] + " ";
    texts.push_back(text + std::to_string(i));
  }
  texts.insert(texts.end(), extra.begin(), extra.end());
  return texts;
}

class TokenizerLongText : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gradcache_tokenizer_long_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  TokenizerTrainOptions options() const {
    TokenizerTrainOptions options;
    options.vocab_size = 60;
    options.num_threads = 2;  // the default: the trainer's threads run in the shim's namespace
    return options;
  }

  fs::path dir_;
};

TEST(TokenizerProcess, HoldsLibTorchsProtobuf) {
  // Otherwise these tests would not see the clash that decides how sentencepiece is loaded.
  // Debian's LibTorch 1.13 links the system's libprotobuf; the torch wheel's LibTorch has its
  // own linked in and hidden, so with it there is no clash to see (the tokenizer's isolation
  // works either way). The 1.13 configuration (scripts/sanitize.sh) runs this check.
  Dl_info where{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&at::get_num_threads), &where), 0);
  const std::string libtorch = where.dli_fname ? where.dli_fname : "";
  if (libtorch.find("/site-packages/torch/") != std::string::npos) {
    GTEST_SKIP() << libtorch << " (the torch wheel) carries its own protobuf: no clash to check";
  }
  EXPECT_NE(dlopen("libprotobuf.so.32", RTLD_NOW | RTLD_NOLOAD), nullptr)
      << "this test binary should be linked against LibTorch (and so libprotobuf)";
}

TEST_F(TokenizerLongText, TrainsOnATextLongerThanSentencepiecesLimitAndLearnsFromIt) {
  // The CLI's report: a training positive of "w " * 2150 (4300 bytes). Here the long text is
  // a word whose letters q, z and x are found nowhere else, so they are only in the vocabulary
  // (not unknown) if the long text was used: sentencepiece skips a text longer than its
  // max_sentence_length; we cut it instead.
  const std::string long_text = repeat("qzxv ", 2150);
  ASSERT_GT(long_text.size(), 4200u);
  const Tokenizer tokenizer = Tokenizer::train(training_texts({long_text}), options(), path("long.model"));
  std::cerr << "trained " << tokenizer.vocab_size() << " pieces\n";  // this binary uses std::cerr too
  const std::vector<int64_t> ids = tokenizer.encode("qzxv");
  for (const int64_t id : ids) EXPECT_NE(id, Tokenizer::unk_id) << "the long text was not learned from";
  EXPECT_EQ(tokenizer.decode(ids), "qzxv");
  // The model on disk is the same model.
  EXPECT_EQ(Tokenizer::load(path("long.model")).serialized(), tokenizer.serialized());
}

TEST_F(TokenizerLongText, ALongMultiByteTextTrainsAndEncodes) {
  // 3-byte characters: 4192 bytes is not a whole number of them, so the cut has to back off to
  // a character boundary. (sentencepiece tolerates half a character at the end, so this does
  // not tell a byte cut from a character cut; it checks that such texts are learned from.)
  const std::string euros = repeat("\xE2\x82\xAC", 3000);
  const Tokenizer tokenizer = Tokenizer::train(training_texts({euros}), options(), path("euro.model"));
  const std::vector<int64_t> ids = tokenizer.encode("\xE2\x82\xAC");
  for (const int64_t id : ids) EXPECT_NE(id, Tokenizer::unk_id);
  EXPECT_EQ(tokenizer.decode(ids), "\xE2\x82\xAC");
}

TEST_F(TokenizerLongText, TrainingAndEncodingWriteNothingToStderr) {
  testing::internal::CaptureStderr();
  const Tokenizer tokenizer =
      Tokenizer::train(training_texts({repeat("w ", 2150), repeat("x", 20000)}), options(), path("quiet.model"));
  tokenizer.encode(repeat("w ", 50000));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST_F(TokenizerLongText, EncodesA100KBText) {
  const Tokenizer tokenizer = Tokenizer::train(training_texts({}), options(), path("plain.model"));
  const std::string words = repeat("river stone bright market ", 4000);  // 104 kB
  ASSERT_GE(words.size(), 100000u);
  const std::vector<int64_t> ids = tokenizer.encode(words);
  EXPECT_GE(ids.size(), 4000u * 4);
  EXPECT_EQ(tokenizer.decode(ids), words.substr(0, words.size() - 1));  // sentencepiece drops the last space
  EXPECT_EQ(tokenizer.encode(words, 512).size(), 512u);

  const std::string one_word = repeat("z", 100000);  // no space at all
  const std::vector<int64_t> pieces = tokenizer.encode(one_word);
  EXPECT_FALSE(pieces.empty());
  for (const int64_t id : pieces) EXPECT_LT(id, tokenizer.vocab_size());
}

}  // namespace
}  // namespace gradcache::retriever
