// `gradcache tokenize`: the ids a Hugging Face tokenizer gives each line of a text, one JSON array
// a line, as Python's `tokenizers` gives them (Tokenizer.encode(text).ids): what the model sees.
#include "commands.h"

#include "gradcache/hf/tokenizer.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

namespace gradcache {
namespace cli {
namespace {

struct TokenizeFlags {
  std::string tokenizer;
  std::string input = "-";
  bool add_special_tokens = true;
  size_t max_len = 0;
};

/// A line longer than this is refused rather than held: no text of a retriever is 256 MiB.
constexpr size_t kMaxLineBytes = size_t{256} << 20;
/// tokenizer.json files of real models are up to ~20 MB (Qwen's 7 MB, bge-m3's 17 MB).
constexpr std::uintmax_t kMaxTokenizerBytes = std::uintmax_t{1} << 30;

hf::Tokenizer load_tokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status))
    throw std::runtime_error(path + ": no such file or directory; give a tokenizer.json or a model directory");
  if (fs::is_directory(status)) return hf::Tokenizer::from_directory(path);
  // Not a FIFO or a device: reading one could wait forever or never end.
  if (!fs::is_regular_file(status))
    throw std::runtime_error(path + ": not a regular file; give a tokenizer.json or a model directory");
  if (fs::file_size(path) > kMaxTokenizerBytes)
    throw std::runtime_error(path + ": larger than 1 GiB; that is not a tokenizer.json");
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  if (!file) throw std::runtime_error(path + ": cannot be read");
  return hf::Tokenizer::from_json(text.str(), path);
}

// The lines of a stream (the bytes before each '\n'; a last line without one counts; NUL bytes are
// text like any other), read in blocks, refusing a line longer than kMaxLineBytes before holding it.
class LineReader {
 public:
  LineReader(std::FILE* in, std::string name) : in_(in), name_(std::move(name)) {}

  bool next(std::string& line) {
    line.clear();
    for (;;) {
      if (at_ == size_) {
        size_ = std::fread(block_, 1, sizeof block_, in_);
        at_ = 0;
        if (size_ == 0) {
          if (std::ferror(in_)) throw std::runtime_error(name_ + ": cannot be read");
          if (line.empty()) return false;
          ++number_;
          return true;
        }
      }
      const char* begin = block_ + at_;
      const void* newline = std::memchr(begin, '\n', size_ - at_);
      const size_t length = newline ? static_cast<const char*>(newline) - begin : size_ - at_;
      if (line.size() + length > kMaxLineBytes)
        throw std::runtime_error(name_ + ": line " + std::to_string(number_ + 1) +
                                 " is longer than 256 MiB; split it");
      line.append(begin, length);
      at_ += length;
      if (newline != nullptr) {
        ++at_;
        ++number_;
        return true;
      }
    }
  }

 private:
  std::FILE* in_;
  std::string name_;
  char block_[1 << 16];
  size_t at_ = 0;
  size_t size_ = 0;
  size_t number_ = 0;
};

}  // namespace

std::function<int()> add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tokenize", "Print the token ids a Hugging Face tokenizer gives each line of a text (one JSON array a line), "
                  "as Python's `tokenizers` gives them: what the model sees");
  auto flags = std::make_shared<TokenizeFlags>();
  cmd->add_option("--tokenizer", flags->tokenizer,
                  "A tokenizer.json, or a model directory (its tokenizer.json, else vocab.txt; and its "
                  "tokenizer_config.json)")
      ->required();
  cmd->add_option("--input", flags->input,
                  "The texts, one a line (the bytes between newlines; invalid UTF-8 becomes U+FFFD); - for standard "
                  "input")
      ->capture_default_str();
  cmd->add_option("--add-special-tokens", flags->add_special_tokens,
                  "Add the post-processor's special tokens ([CLS] ... [SEP], <s> ... </s>), as `tokenizers`' encode "
                  "does by default")
      ->capture_default_str();
  cmd->add_option("--max-len", flags->max_len,
                  "Truncate to this many ids, special tokens included, from the tokenizer's truncation side (0: do "
                  "not truncate)")
      ->capture_default_str();

  return [flags]() {
    const hf::Tokenizer tokenizer = load_tokenizer(flags->tokenizer);
    const bool from_stdin = flags->input == "-";
    std::FILE* in = from_stdin ? stdin : std::fopen(flags->input.c_str(), "rb");
    if (in == nullptr) throw std::runtime_error(flags->input + ": cannot be opened: " + std::strerror(errno));
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> owner(from_stdin ? nullptr : in, &std::fclose);
    LineReader lines(in, from_stdin ? "standard input" : flags->input);
    std::string line;
    std::string out;
    const auto write_out = [&out] {
      if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0)
        throw std::runtime_error("standard output cannot be written (closed, or the disk is full)");
      out.clear();
    };
    while (lines.next(line)) {
      if (stop_signal.load() != 0) throw retriever::StoppedBySignal(stop_signal.load());
      const std::vector<int64_t> ids = tokenizer.encode(line, flags->max_len, flags->add_special_tokens);
      out += '[';
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) out += ',';
        out += std::to_string(ids[i]);
      }
      out += "]\n";
      if (out.size() >= (1 << 16)) write_out();
    }
    write_out();
    return 0;
  };
}

}  // namespace cli
}  // namespace gradcache
