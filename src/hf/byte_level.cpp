// ByteLevel, as `tokenizers` (pre_tokenizers/byte_level.rs) runs it: GPT-2's way of making every
// text spellable with 256 symbols. As a pre-tokeniser: a space in front of each piece that does
// not start with one (add_prefix_space), the GPT-2 regular expression's words (use_regex), then
// each byte of each word's UTF-8 written as one character of the byte alphabet (printable bytes
// as themselves, the others moved to U+0100 and up), which is what the BPE vocabulary is spelt
// in. As a post-processor it only trims offsets, so the ids pass through unchanged.
#include <array>

#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/regex.h"
#include "hf/split_behavior.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

// openai/gpt-2's bytes_to_unicode(): the bytes that print as a Latin-1 character stand for
// themselves; the rest take U+0100, U+0101... in byte order.
std::array<char32_t, 256> byte_alphabet() {
  std::array<char32_t, 256> chars{};
  char32_t next = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    const bool prints = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE);
    chars[byte] = prints ? static_cast<char32_t>(byte) : next++;
  }
  return chars;
}

/// GPT-2's pattern, as `tokenizers` compiles it for ByteLevel.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct ByteLevelOptions {
  bool add_prefix_space = true;
  bool trim_offsets = true;
  bool use_regex = true;

  OrderedJson to_json() const {
    return OrderedJson{{"type", "ByteLevel"},
                       {"add_prefix_space", add_prefix_space},
                       {"trim_offsets", trim_offsets},
                       {"use_regex", use_regex}};
  }
};

ByteLevelOptions read_options(const Json& config, const Source& source) {
  expect_object(config, source);
  ByteLevelOptions options;  // `tokenizers`' defaults: all three true
  options.add_prefix_space = read_bool(config, "add_prefix_space", source, true);
  options.trim_offsets = read_bool(config, "trim_offsets", source, true);
  options.use_regex = read_bool(config, "use_regex", source, true);
  return options;
}

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(ByteLevelOptions options, const Source& source)
      : options_(options), alphabet_(byte_alphabet()) {
    if (options_.use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern, source);
  }

  void split(std::u32string_view text, bool at_origin, Words& out) const override {
    thread_local std::u32string prefixed;
    if (options_.add_prefix_space && !text.empty() && text.front() != U' ') {
      prefixed.assign(1, U' ');
      prefixed.append(text);
      text = prefixed;
    }
    if (!regex_) {
      push_bytes(text, at_origin, out);
      return;
    }
    thread_local std::vector<Match> matches;
    thread_local Words words;
    matches.clear();
    words.clear();
    regex_->find_all(text, matches);
    split_at_matches(text, matches, SplitBehavior::kIsolated, false, at_origin, words);
    for (size_t i = 0; i < words.size(); ++i) push_bytes(words[i], i == 0 && words.first_at_origin, out);
  }

  OrderedJson to_json() const override { return options_.to_json(); }

 private:
  // The word's UTF-8 bytes, each as its character of the byte alphabet.
  void push_bytes(std::u32string_view word, bool at_origin, Words& out) const {
    thread_local std::string bytes;
    thread_local std::u32string chars;
    bytes.clear();
    for (const char32_t c : word) unicode::append_utf8(bytes, c);
    chars.clear();
    for (const char byte : bytes) chars.push_back(alphabet_[static_cast<unsigned char>(byte)]);
    out.push(chars, at_origin);
  }

  ByteLevelOptions options_;
  std::array<char32_t, 256> alphabet_;
  std::unique_ptr<Regex> regex_;
};

class ByteLevelProcessing final : public PostProcessor {
 public:
  explicit ByteLevelProcessing(ByteLevelOptions options) : options_(options) {}

  std::vector<int64_t> process(const std::vector<int64_t>& ids) const override { return ids; }
  size_t added_tokens() const override { return 0; }
  int64_t before_id() const override { return -1; }
  int64_t after_id() const override { return -1; }
  int64_t max_id() const override { return -1; }
  OrderedJson to_json() const override { return options_.to_json(); }

 private:
  ByteLevelOptions options_;
};

}  // namespace

std::unique_ptr<PreTokenizer> byte_level_pre_tokenizer_from_json(const Json& config, const Source& source) {
  return std::make_unique<ByteLevelPreTokenizer>(read_options(config, source), source);
}

std::unique_ptr<PostProcessor> byte_level_processing_from_json(const Json& config, const Source& source) {
  return std::make_unique<ByteLevelProcessing>(read_options(config, source));
}

}  // namespace gradcache::hf::detail
