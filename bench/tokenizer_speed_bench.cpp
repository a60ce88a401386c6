// gradcache-tokenizer-speed-bench: how fast gradcache::hf::Tokenizer encodes a file of texts on
// one thread, for bench/tokenizer_speed.py, which runs it in turn with Hugging Face `tokenizers`
// on the same texts. Only the tokenizer library: no LibTorch.
//
//   gradcache-tokenizer-speed-bench TOKENIZER_DIR TEXTS [--repeats R] [--no-special-tokens]
//
// TEXTS: one text a line ('\n' ends each; the bytes as they are, ill-formed UTF-8 included). One
// warm-up pass over all texts, then R timed passes (default 5), each encoding every text in order
// (Tokenizer::encode, special tokens added unless --no-special-tokens, no truncation). Prints one
// JSON object:
//   {"texts": N, "tokens": ids per pass, "seconds": the median pass, "passes": [each pass],
//    "checksum": a hash of every id in order (bench/tokenizer_speed.py computes the same over the
//    ids of `tokenizers`, so that equal checksums say both sides did the same work),
//    "load_seconds": reading the tokenizer, "compiler": what built this program}
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "gradcache/hf/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = all.find('\n', start)) != std::string::npos; start = end + 1)
    lines.emplace_back(all, start, end - start);
  if (start < all.size()) lines.emplace_back(all, start);
  return lines;
}

// One pass: every text encoded; returns the number of ids and folds them into `checksum`
// (h = h * 1000003 + id + 1, modulo 2^64: the same as bench/tokenizer_speed.py's).
size_t encode_all(const gradcache::hf::Tokenizer& tokenizer, const std::vector<std::string>& texts, bool special,
                  uint64_t& checksum) {
  size_t tokens = 0;
  for (const std::string& text : texts) {
    const std::vector<int64_t> ids = tokenizer.encode(text, 0, special);
    tokens += ids.size();
    for (const int64_t id : ids) checksum = checksum * 1000003u + static_cast<uint64_t>(id) + 1u;
  }
  return tokens;
}

int usage() {
  std::cerr << "usage: gradcache-tokenizer-speed-bench TOKENIZER_DIR TEXTS [--repeats R] [--no-special-tokens]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string dir = argv[1], texts_path = argv[2];
  int repeats = 5;
  bool special = true;
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeats" && i + 1 < argc) {
      repeats = std::atoi(argv[++i]);
      if (repeats < 1) return usage();
    } else if (arg == "--no-special-tokens") {
      special = false;
    } else {
      return usage();
    }
  }
  try {
    const auto load_start = Clock::now();
    const gradcache::hf::Tokenizer tokenizer = gradcache::hf::Tokenizer::from_directory(dir);
    const double load_seconds = seconds_since(load_start);
    const std::vector<std::string> texts = read_lines(texts_path);
    uint64_t checksum = 0;
    const size_t tokens = encode_all(tokenizer, texts, special, checksum);  // warm-up; its checksum is printed
    std::vector<double> passes;
    for (int r = 0; r < repeats; ++r) {
      uint64_t ignored = 0;
      const auto start = Clock::now();
      if (encode_all(tokenizer, texts, special, ignored) != tokens || ignored != checksum) {
        std::cerr << "gradcache-tokenizer-speed-bench: a pass gave other ids than the first\n";
        return 1;
      }
      passes.push_back(seconds_since(start));
    }
    std::vector<double> sorted = passes;
    std::sort(sorted.begin(), sorted.end());
    const double median =
        sorted.size() % 2 ? sorted[sorted.size() / 2] : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
    std::ostringstream out;
    out.precision(9);
    out << "{\"texts\": " << texts.size() << ", \"tokens\": " << tokens << ", \"seconds\": " << median
        << ", \"passes\": [";
    for (size_t i = 0; i < passes.size(); ++i) out << (i ? ", " : "") << passes[i];
    out << "], \"checksum\": " << checksum << ", \"load_seconds\": " << load_seconds << ", \"compiler\": \""
#if defined(__clang__)
        << "clang " << __clang_major__ << "." << __clang_minor__
#elif defined(__GNUC__)
        << "gcc " << __GNUC__ << "." << __GNUC_MINOR__ << "." << __GNUC_PATCHLEVEL__
#else
        << "unknown"
#endif
        << "\"}\n";
    std::cout << out.str();
  } catch (const std::exception& e) {
    std::cerr << "gradcache-tokenizer-speed-bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
