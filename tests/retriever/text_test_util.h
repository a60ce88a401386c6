// Shared by the tests of the text data readers, WordNet and the tokenizer: scratch directories,
// the check of a DataError's PATH:LINE message, and sentences to train a tokenizer on.
#pragma once

#include "retriever/data/text_data.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>
#include <unistd.h>

namespace text_test {
namespace fs = std::filesystem;
using namespace gradcache::retriever;

// A fresh directory for one test's input files, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device random;
    path_ = fs::temp_directory_path() / ("gradcache_text_data_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(counter++) + "_" + std::to_string(random()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Writes `contents` byte for byte to `name` in the directory; returns its path.
  std::string write(const std::string& name, const std::string& contents) const {
    const fs::path file = path_ / name;
    std::ofstream out(file, std::ios::binary);
    out << contents;
    EXPECT_TRUE(out.good()) << "cannot write " << file;
    return file.string();
  }
  std::string path(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& dir() const { return path_; }

 private:
  fs::path path_;
};

// Runs `fn`, which must throw a DataError about `path` at `line` whose message contains `part`.
inline void expect_data_error(const std::function<void()>& fn, const std::string& path, size_t line,
                       const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "expected a DataError at " << path << ":" << line << " mentioning '" << part << "'";
  } catch (const DataError& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.path(), path) << message;
    EXPECT_EQ(e.line(), line) << message;
    const std::string prefix = line == 0 ? path + ": " : path + ":" + std::to_string(line) + ": ";
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << "'" << message << "' should start with '" << prefix << "'";
    EXPECT_NE(message.find(part), std::string::npos) << "'" << message << "' should mention '" << part << "'";
  }
}

using Strings = std::vector<std::string>;

// `count` short sentences, the same every time: a fixed word list (for readable checks) plus a
// few hundred made-up words; a few thousand are enough material for a vocabulary of 200 pieces.
inline std::vector<std::string> sentences(size_t count) {
  const std::vector<std::string> adjectives = {"quick", "lazy", "brown", "small", "green", "happy", "old", "young"};
  const std::vector<std::string> nouns = {"fox", "dog", "cat", "bird", "horse", "farmer", "river", "garden", "house"};
  const std::vector<std::string> verbs = {"jumps over", "runs past", "watches", "follows", "sleeps near", "finds"};
  const std::vector<std::string> syllables = {"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "bri",
                                              "dor", "fen", "gal", "hup", "jin", "qua", "wex", "yst", "pl", "ch"};
  uint64_t state = 12345;
  auto next = [&state](size_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<size_t>((state >> 33) % bound);
  };
  std::vector<std::string> made_up;
  for (int i = 0; i < 400; ++i) {
    std::string word;
    for (size_t n = 2 + next(3); n > 0; --n) word += syllables[next(syllables.size())];
    made_up.push_back(word);
  }
  auto pick = [&next](const std::vector<std::string>& words) -> const std::string& {
    return words[next(words.size())];
  };
  std::vector<std::string> texts;
  for (size_t i = 0; i < count; ++i) {
    texts.push_back("The " + pick(adjectives) + " " + pick(nouns) + " " + pick(verbs) + " the " + pick(adjectives) +
                    " " + pick(nouns) + " " + pick(made_up) + " " + pick(made_up) + ".");
  }
  return texts;
}

}  // namespace text_test
