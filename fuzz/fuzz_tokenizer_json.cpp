// libFuzzer target: a tokenizer.json (a Hugging Face model directory's tokenizer) through
// gradcache::hf::Tokenizer::from_json, then encode() of a few texts and to_json(). The contract
// checked on every input, besides no crash, hang or leak:
// - the only exception from reading is TokenizerError, with a valid UTF-8 message;
// - a tokenizer that loads encodes every text (ids in [0, vocab_size), the special tokens
//   around them, truncation to max_len honoured);
// - what to_json() writes reads back to a tokenizer that writes the same and encodes the same.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "gradcache/hf/tokenizer.h"

using gradcache::hf::Tokenizer;
using gradcache::hf::TokenizerError;

namespace {

const char* const kTexts[] = {
    "",
    "Hello, World! hello world",
    "[CLS] [MASK] a[SEP]b [unk] <ent> -> x",
    "caf\xC3\xA9 na\xC3\xAFve \xC3\x85ngstr\xC3\xB6m \xC4\xB0stanbul Stra\xC3\x9F"
    "e \xCE\xA3\xCE\xA3",
    "\xE5\x8C\x97\xE4\xBA\xAC \xF0\x9F\x98\x80 \xEF\xBC\xA1 \xEF\xAC\x81 a\xCC\x81\xCC\x96",
    "\t\n\r\x0b\x0c \xC2\xA0\xE2\x80\x8B\xE3\x80\x80 a\x00"
    "b \xEF\xBF\xBD \xFF\xC3 \xED\xA0\x80",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "!!!???... --- ### ##s (a[b]{c}) \\ / ' \"",
};

void check_encodes(const Tokenizer& tokenizer) {
  const size_t specials = tokenizer.num_special_tokens();
  fuzz::check(tokenizer.vocab_size() > 0, "vocab_size > 0");
  fuzz::check(tokenizer.unk_id() >= -1 && tokenizer.unk_id() < tokenizer.vocab_size(), "unk_id in range or -1");
  fuzz::check(tokenizer.pad_id() < tokenizer.vocab_size(), "pad_id in range");
  for (const char* text : kTexts) {
    const std::vector<int64_t> ids = tokenizer.encode(text);
    fuzz::check(ids.size() >= specials, "the special tokens are there", text);
    for (const int64_t id : ids) fuzz::check(id >= 0 && id < tokenizer.vocab_size(), "ids in [0, vocab_size)", text);
    const size_t max_len = specials + 1;
    const std::vector<int64_t> truncated = tokenizer.encode(text, max_len);
    fuzz::check(truncated.size() <= max_len, "truncated to max_len", text);
    fuzz::check(tokenizer.tokenize(text).size() + specials == ids.size(), "tokenize() gives the pieces", text);
    fuzz::check(tokenizer.encode(text, 0, false).size() + specials == ids.size(), "the special tokens are optional",
                text);
  }
}

void check_round_trip(const Tokenizer& tokenizer) {
  const std::string json = tokenizer.to_json();
  try {
    const Tokenizer again = Tokenizer::from_json(json, "to_json");
    fuzz::check(again.to_json() == json, "to_json() reads back to the same file", json);
    for (const char* text : kTexts)
      fuzz::check(again.encode(text) == tokenizer.encode(text), "same ids after to_json", text);
  } catch (const TokenizerError& error) {
    fuzz::check(false, "to_json() reads back", error.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const Tokenizer tokenizer = Tokenizer::from_json(text, "fuzz/tokenizer.json");
    check_encodes(tokenizer);
    check_round_trip(tokenizer);
  } catch (const TokenizerError& error) {
    fuzz::check_message(error.what());
  }
  return 0;
}
