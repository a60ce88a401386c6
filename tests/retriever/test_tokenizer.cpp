// The sentencepiece tokenizer: long texts, and models whose normalization map sentencepiece would
// read out of bounds (fuzz_export's finding), in a process that also holds LibTorch's protobuf (this binary is
// linked against LibTorch through the retriever library, so the protobuf clash described in model/tokenizer.cpp
// is present), and with sentencepiece's logging.
//
//
// Before the fix, training on a text longer than sentencepiece's max_sentence_length (4192
// bytes) killed the process with SIGSEGV: sentencepiece warned about the text through a
// std::cerr it had bound, under RTLD_DEEPBIND, to libstdc++'s never-initialised copy.

#include "retriever/model/tokenizer.h"

#include "retriever/model/sentencepiece_model_check.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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


// ---------------------------------------------------------------------------------------------
// Normalization maps (retriever/model/sentencepiece_model_check.h). fuzz_export found a
// tokenizer.model whose precompiled map sent sentencepiece's Normalizer::NormalizePrefix outside
// the map (SEGV). The maps below are appended to a real model as a second NormalizerSpec, which
// protobuf merges into the first: the appended map is the one sentencepiece uses.

std::string varint(uint64_t value) {
  std::string bytes;
  do {
    bytes.push_back(static_cast<char>((value & 0x7F) | (value > 0x7F ? 0x80 : 0)));
    value >>= 7;
  } while (value != 0);
  return bytes;
}

std::string length_delimited(uint32_t field, const std::string& value) {
  return varint(field << 3 | 2) + varint(value.size()) + value;
}

/// A precompiled map: the trie's size, its units (darts-clone's layout) and the normalized text.
std::string charsmap(const std::vector<uint32_t>& units, const std::string& normalized) {
  const uint32_t trie_size = static_cast<uint32_t>(units.size() * 4);
  std::string blob(reinterpret_cast<const char*>(&trie_size), 4);
  blob.append(reinterpret_cast<const char*>(units.data()), trie_size);
  return blob + normalized;
}

std::string with_normalizer_map(const std::string& model, const std::string& map) {
  return model + length_delimited(3, length_delimited(2, map));  // ModelProto.normalizer_spec.precompiled_charsmap
}

std::string refusal(const std::string& bytes) {
  try {
    Tokenizer::from_serialized(bytes).encode("a");
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "(loaded)";
}

TEST_F(TokenizerLongText, ARealNormalizationMapPassesTheCheckAndABrokenOneIsRefused) {
  const std::string model = Tokenizer::train(training_texts({}), options(), path("map.model")).serialized();
  EXPECT_NO_THROW(check_sentencepiece_normalizers(model));  // nmt_nfkc's map, tens of thousands of units

  // A root whose base is 0 in a one-unit trie: the first input byte would read units 0..255.
  std::string message = refusal(with_normalizer_map(model, charsmap({0}, "x")));
  EXPECT_NE(message.find("is not a valid sentencepiece model (its normalizer's precompiled normalization map "
                         "points at unit 255 of a trie of 1)"),
            std::string::npos)
      << message;
  // 'a' has a leaf whose value (its own unit: label 97, leaf bit) points past 2 bytes of text.
  std::vector<uint32_t> units(256, 0);
  units['a'] = 'a' | 1u << 8;
  message = refusal(with_normalizer_map(model, charsmap(units, "x")));
  EXPECT_NE(message.find("maps to byte 353 of 1 bytes"), std::string::npos) << message;
  // An offset that leaves the array: 'a' moves to base 1024 of 256 units.
  units['a'] = 'a' | 1024u << 10;
  message = refusal(with_normalizer_map(model, charsmap(units, "x")));
  EXPECT_NE(message.find("points at unit"), std::string::npos) << message;
  // A trie size larger than the bytes that follow it.
  std::string lying = charsmap(units, "x");
  const uint32_t huge = 4 * 256 + 2;  // under the map's size, so sentencepiece would take it
  std::memcpy(lying.data(), &huge, 4);
  message = refusal(with_normalizer_map(model, lying));
  EXPECT_NE(message.find("declares a trie of 1026 bytes, more than the 1025"), std::string::npos) << message;

  // Sound maps load: a cycle ('a' leads back to the root's base), and the same map with a leaf
  // inside the text. Encoding through them terminates and stays in bounds.
  units['a'] = 'a' | ('a' << 10);  // base 0 ^ 'a' ^ 'a' = 0
  EXPECT_NO_THROW(Tokenizer::from_serialized(with_normalizer_map(model, charsmap(units, "x"))).encode("aaa"));
  units['a'] = 'a' | 1u << 8 | ('a' << 10);  // a leaf at base 0, whose unit's value is 0: "a" -> "xy"
  const Tokenizer mapped = Tokenizer::from_serialized(with_normalizer_map(model, charsmap(units, "xy")));
  EXPECT_EQ(mapped.encode("a"), mapped.encode("xy"));

  // Wire formats that cannot be followed are refused before sentencepiece sees them.
  EXPECT_NE(refusal(model + varint(3 << 3 | 2) + varint(1000)).find("runs past the end"), std::string::npos);
  EXPECT_NE(refusal(model + varint(7 << 3 | 3)).find("wire type 3"), std::string::npos);
}

}  // namespace
}  // namespace gradcache::retriever
