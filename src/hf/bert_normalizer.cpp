// BertNormalizer, as `tokenizers` (normalizers/bert.rs) runs it: clean_text, then
// handle_chinese_chars, then strip_accents (NFD and remove the non-spacing marks; unset means
// "as lowercase"), then lowercase, each over the whole text.
#include <algorithm>

#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool handle_chinese_chars, std::optional<bool> strip_accents, bool lowercase)
      : clean_text_(clean_text),
        handle_chinese_chars_(handle_chinese_chars),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {}

  void normalize(std::u32string& text) const override {
    if (clean_text_ || handle_chinese_chars_) clean_and_space(text);
    if (strip_accents_.value_or(lowercase_)) {
      unicode::nfd(text);
      text.erase(std::remove_if(text.begin(), text.end(), unicode::is_nonspacing_mark), text.end());
    }
    if (lowercase_) lower(text);
  }

  OrderedJson to_json() const override {
    OrderedJson j;
    j["type"] = "BertNormalizer";
    j["clean_text"] = clean_text_;
    j["handle_chinese_chars"] = handle_chinese_chars_;
    j["strip_accents"] = strip_accents_ ? OrderedJson(*strip_accents_) : OrderedJson(nullptr);
    j["lowercase"] = lowercase_;
    return j;
  }

 private:
  // clean_text removes U+0000, U+FFFD and control characters and turns white space into ' ';
  // handle_chinese_chars puts a space on each side of a CJK ideograph. One pass does both: the
  // second only looks at characters the first kept, which it leaves alone.
  void clean_and_space(std::u32string& text) const {
    std::u32string out;
    out.reserve(text.size() + text.size() / 4);
    for (char32_t c : text) {
      if (clean_text_) {
        if (c == 0 || c == 0xFFFD || unicode::is_control(c)) continue;
        if (unicode::is_whitespace(c)) c = U' ';
      }
      if (handle_chinese_chars_ && unicode::is_chinese_char(c)) {
        out.push_back(U' ');
        out.push_back(c);
        out.push_back(U' ');
      } else {
        out.push_back(c);
      }
    }
    text.swap(out);
  }

  static void lower(std::u32string& text) {
    if (std::all_of(text.begin(), text.end(), [](char32_t c) { return c < 0x80; })) {
      for (char32_t& c : text) c = (c >= U'A' && c <= U'Z') ? c + 32 : c;
      return;
    }
    std::u32string out;
    out.reserve(text.size());
    for (const char32_t c : text) unicode::append_lowercase(out, c);
    text.swap(out);
  }

  bool clean_text_;
  bool handle_chinese_chars_;
  std::optional<bool> strip_accents_;
  bool lowercase_;
};

}  // namespace

std::unique_ptr<Normalizer> bert_normalizer_from_json(const Json& config, const Source& source) {
  // A missing field takes the value of BertNormalizer::default() in `tokenizers`.
  return std::make_unique<BertNormalizer>(
      read_bool(config, "clean_text", source, true), read_bool(config, "handle_chinese_chars", source, true),
      read_optional_bool(config, "strip_accents", source), read_bool(config, "lowercase", source, true));
}

}  // namespace gradcache::hf::detail
