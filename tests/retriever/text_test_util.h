// Shared by the tests of the text data readers and WordNet: scratch directories and the
// check of a DataError's PATH:LINE message.
#pragma once

#include "retriever/data/text_data.h"

#include <gtest/gtest.h>

#include <atomic>
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

}  // namespace text_test
