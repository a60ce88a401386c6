// BertNormalizer, as `tokenizers` (normalizers/bert.rs) runs it: clean_text, then
// handle_chinese_chars, then strip_accents (NFD and remove the non-spacing marks; unset means
// "as lowercase"), then lowercase, each over the whole text. Each step also moves the count of
// leading characters aligned with the original's start (hf/normalized_origin.h) as the
// NormalizedString method it calls does (tokenizer/normalizer.rs): filter and map keep each
// character aligned where it was (a dropped first character takes the start with it), the
// spaces around an ideograph are aligned with it, then nfd and lowercase.
#include <algorithm>

#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/normalized_origin.h"
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

  size_t normalize(std::u32string& text, size_t at_origin) const override {
    if (clean_text_ || handle_chinese_chars_) at_origin = clean_and_space(text, at_origin);
    if (strip_accents_.value_or(lowercase_)) {
      at_origin = decomposition_origin(text, at_origin, /*compatibility=*/false);
      unicode::nfd(text);
      at_origin = static_cast<size_t>(
          std::count_if(text.begin(), text.begin() + static_cast<ptrdiff_t>(std::min(at_origin, text.size())),
                        [](char32_t c) { return !unicode::is_nonspacing_mark(c); }));
      text.erase(std::remove_if(text.begin(), text.end(), unicode::is_nonspacing_mark), text.end());
    }
    if (lowercase_) at_origin = lowercase_in_place(text, at_origin);
    return at_origin;
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
  // second only looks at characters the first kept, which it leaves alone. Returns the new count
  // of leading characters at the start: what the kept ones among the old leading ones became.
  size_t clean_and_space(std::u32string& text, size_t at_origin) const {
    std::u32string out;
    out.reserve(text.size() + text.size() / 4);
    size_t origin = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      char32_t c = text[i];
      if (clean_text_) {
        if (c == 0 || c == 0xFFFD || unicode::is_control(c)) continue;
        if (unicode::is_whitespace(c)) c = U' ';
      }
      const size_t before = out.size();
      if (handle_chinese_chars_ && unicode::is_chinese_char(c)) {
        out.push_back(U' ');
        out.push_back(c);
        out.push_back(U' ');
      } else {
        out.push_back(c);
      }
      if (i < at_origin) origin += out.size() - before;
    }
    text.swap(out);
    return origin;
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
