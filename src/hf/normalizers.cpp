// The small normalisers of `tokenizers` (normalizers/unicode.rs, utils.rs, strip.rs, replace.rs,
// prepend.rs), each rewriting the whole text:
// - NFC, NFD, NFKC, NFKD: Unicode normalisation with unicode-normalization-alignments' Unicode 9.0
//   tables (a character assigned later is left alone: hf/unicode.h);
// - Lowercase: Rust's char::to_lowercase of each character (no context: Σ is always σ);
// - Strip: white space (char::is_whitespace) off the left and/or right end;
// - StripAccents: removes every combining mark (Mn, Mc or Me in Unicode 9.0) wherever it is, and
//   decomposes nothing: an "é" written as one character stays (normalizers run NFD first for that);
// - Replace: every match of the pattern (a literal {"String"} or an Oniguruma {"Regex"}) becomes
//   the content, empty matches included (so the pattern "" writes the content between characters);
// - Prepend: the string in front, unless the text is empty;
// - Sequence: the normalisers in order.
#include <algorithm>

#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/regex.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

class UnicodeNormalizer final : public Normalizer {
 public:
  enum class Form { kNfc, kNfd, kNfkc, kNfkd };
  explicit UnicodeNormalizer(Form form) : form_(form) {}

  void normalize(std::u32string& text) const override {
    switch (form_) {
      case Form::kNfc: unicode::nfc(text); break;
      case Form::kNfd: unicode::nfd(text); break;
      case Form::kNfkc: unicode::nfkc(text); break;
      case Form::kNfkd: unicode::nfkd(text); break;
    }
  }

  OrderedJson to_json() const override { return OrderedJson{{"type", name(form_)}}; }

  static const char* name(Form form) {
    switch (form) {
      case Form::kNfc: return "NFC";
      case Form::kNfd: return "NFD";
      case Form::kNfkc: return "NFKC";
      default: return "NFKD";
    }
  }

 private:
  Form form_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(std::u32string& text) const override {
    if (std::all_of(text.begin(), text.end(), [](char32_t c) { return c < 0x80; })) {
      for (char32_t& c : text) c = (c >= U'A' && c <= U'Z') ? c + 32 : c;
      return;
    }
    std::u32string out;
    out.reserve(text.size());
    for (const char32_t c : text) unicode::append_lowercase(out, c);
    text.swap(out);
  }

  OrderedJson to_json() const override { return OrderedJson{{"type", "Lowercase"}}; }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}

  void normalize(std::u32string& text) const override {
    size_t end = text.size();
    if (right_)
      while (end > 0 && unicode::is_whitespace(text[end - 1])) --end;
    size_t begin = 0;
    if (left_)
      while (begin < end && unicode::is_whitespace(text[begin])) ++begin;
    if (begin == 0 && end == text.size()) return;
    text = text.substr(begin, end - begin);
  }

  OrderedJson to_json() const override {
    return OrderedJson{{"type", "Strip"}, {"strip_left", left_}, {"strip_right", right_}};
  }

 private:
  bool left_;
  bool right_;
};

class StripAccents final : public Normalizer {
 public:
  void normalize(std::u32string& text) const override {
    text.erase(std::remove_if(text.begin(), text.end(), unicode::is_combining_mark), text.end());
  }

  OrderedJson to_json() const override { return OrderedJson{{"type", "StripAccents"}}; }
};

class Replace final : public Normalizer {
 public:
  Replace(PatternSpec pattern, const std::string& content, const Source& source)
      : pattern_(std::move(pattern)),
        content_(content),
        content32_(unicode::decode_utf8(content)),
        regex_(pattern_.regex(), source.at("pattern")) {}

  void normalize(std::u32string& text) const override {
    if (text.empty()) return;  // find_matches matches nothing in an empty text, not even ""
    thread_local std::vector<Match> matches;
    matches.clear();
    regex_.find_all(text, matches);
    if (matches.empty()) return;
    std::u32string out;
    out.reserve(text.size() + matches.size() * content32_.size());
    size_t previous = 0;
    for (const auto& [begin, end] : matches) {
      out.append(text, previous, begin - previous);
      out += content32_;
      previous = end;
    }
    out.append(text, previous, std::u32string::npos);
    text.swap(out);
  }

  OrderedJson to_json() const override {
    return OrderedJson{{"type", "Replace"}, {"pattern", pattern_.to_json()}, {"content", content_}};
  }

 private:
  PatternSpec pattern_;
  std::string content_;
  std::u32string content32_;
  Regex regex_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(const std::string& prepend) : prepend_(prepend), prepend32_(unicode::decode_utf8(prepend)) {}

  void normalize(std::u32string& text) const override {
    if (!text.empty()) text.insert(0, prepend32_);
  }

  OrderedJson to_json() const override { return OrderedJson{{"type", "Prepend"}, {"prepend", prepend_}}; }

 private:
  std::string prepend_;
  std::u32string prepend32_;
};

class NormalizerSequence final : public Normalizer {
 public:
  explicit NormalizerSequence(std::vector<std::unique_ptr<Normalizer>> normalizers)
      : normalizers_(std::move(normalizers)) {}

  void normalize(std::u32string& text) const override {
    for (const auto& normalizer : normalizers_) normalizer->normalize(text);
  }

  OrderedJson to_json() const override {
    OrderedJson list = OrderedJson::array();
    for (const auto& normalizer : normalizers_) list.push_back(normalizer->to_json());
    return OrderedJson{{"type", "Sequence"}, {"normalizers", list}};
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> normalizers_;
};

// A boolean field without a default (`tokenizers` refuses the file without it).
bool read_required_bool(const Json& config, const char* key, const Source& source) {
  require_field(config, key, source);
  return read_bool(config, key, source, false);
}

}  // namespace

std::unique_ptr<Normalizer> unicode_normalizer_from_json(const Json& config, const Source& source) {
  const std::string type = read_type(config, source);
  for (const auto form : {UnicodeNormalizer::Form::kNfc, UnicodeNormalizer::Form::kNfd, UnicodeNormalizer::Form::kNfkc,
                          UnicodeNormalizer::Form::kNfkd})
    if (type == UnicodeNormalizer::name(form)) return std::make_unique<UnicodeNormalizer>(form);
  fail(source.at("type"), "expected NFC, NFD, NFKC or NFKD, found " + quote_for_message(type));
}

std::unique_ptr<Normalizer> lowercase_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  return std::make_unique<Lowercase>();
}

std::unique_ptr<Normalizer> strip_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  return std::make_unique<Strip>(read_required_bool(config, "strip_left", source),
                                 read_required_bool(config, "strip_right", source));
}

std::unique_ptr<Normalizer> strip_accents_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  return std::make_unique<StripAccents>();
}

std::unique_ptr<Normalizer> replace_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  PatternSpec pattern = read_pattern_spec(config, "pattern", source);
  const std::string content = read_string(config, "content", source);
  return std::make_unique<Replace>(std::move(pattern), content, source);
}

std::unique_ptr<Normalizer> prepend_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  return std::make_unique<Prepend>(read_string(config, "prepend", source));
}

std::unique_ptr<Normalizer> normalizer_sequence_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  const Json& list = require_field(config, "normalizers", source);
  const Source at = source.at("normalizers");
  if (!list.is_array()) fail(at, "expected an array of normalizers, found " + describe_json(list));
  std::vector<std::unique_ptr<Normalizer>> normalizers;
  for (size_t i = 0; i < list.size(); ++i) normalizers.push_back(make_normalizer(list[i], at.at(std::to_string(i))));
  return std::make_unique<NormalizerSequence>(std::move(normalizers));
}

}  // namespace gradcache::hf::detail
