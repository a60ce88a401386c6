// BertPreTokenizer, as `tokenizers` (pre_tokenizers/bert.rs) runs it: split on white space (which
// goes), then make each punctuation character a word of its own.
#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

class BertPreTokenizer final : public PreTokenizer {
 public:
  void split(std::u32string_view text, bool at_origin, Words& out) const override {
    size_t begin = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      const char32_t c = text[i];
      const bool space = unicode::is_whitespace(c);
      if (!space && !unicode::is_punctuation(c)) continue;
      out.push(text.substr(begin, i - begin), at_origin && begin == 0);
      if (!space) out.push(text.substr(i, 1), at_origin && i == 0);
      begin = i + 1;
    }
    out.push(text.substr(begin), at_origin && begin == 0);
  }

  OrderedJson to_json() const override { return OrderedJson{{"type", "BertPreTokenizer"}}; }
};

}  // namespace

std::unique_ptr<PreTokenizer> bert_pre_tokenizer_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  return std::make_unique<BertPreTokenizer>();
}

}  // namespace gradcache::hf::detail
