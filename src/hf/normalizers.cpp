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
// Each also says how many leading characters of its result `tokenizers` aligns with the start of
// the original text (hf/normalized_origin.h), following the bookkeeping of the NormalizedString
// method it calls (tokenizer/normalizer.rs): nfd/nfc..., lowercase, lrstrip, filter, replace,
// prepend.
#include <algorithm>
#include <vector>

#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/normalized_origin.h"
#include "hf/regex.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

class UnicodeNormalizer final : public Normalizer {
 public:
  enum class Form { kNfc, kNfd, kNfkc, kNfkd };
  explicit UnicodeNormalizer(Form form) : form_(form) {}

  size_t normalize(std::u32string& text, size_t at_origin) const override {
    const bool composes = form_ == Form::kNfc || form_ == Form::kNfkc;
    const bool compatibility = form_ == Form::kNfkc || form_ == Form::kNfkd;
    const size_t origin = composes ? composition_origin(text, at_origin, compatibility)
                                   : decomposition_origin(text, at_origin, compatibility);
    switch (form_) {
      case Form::kNfc: unicode::nfc(text); break;
      case Form::kNfd: unicode::nfd(text); break;
      case Form::kNfkc: unicode::nfkc(text); break;
      case Form::kNfkd: unicode::nfkd(text); break;
    }
    return origin;
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
  size_t normalize(std::u32string& text, size_t at_origin) const override {
    return lowercase_in_place(text, at_origin);
  }

  OrderedJson to_json() const override { return OrderedJson{{"type", "Lowercase"}}; }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}

  size_t normalize(std::u32string& text, size_t at_origin) const override {
    size_t end = text.size();
    if (right_)
      while (end > 0 && unicode::is_whitespace(text[end - 1])) --end;
    size_t begin = 0;
    if (left_)
      while (begin < end && unicode::is_whitespace(text[begin])) ++begin;
    if (begin == 0 && end == text.size()) return at_origin;
    text = text.substr(begin, end - begin);
    // lrstrip keeps each remaining character aligned where it was (transform with the stripped
    // ones as initial_offset): the start stays only with the characters kept from it.
    return at_origin > begin ? std::min(at_origin, end) - begin : 0;
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
  size_t normalize(std::u32string& text, size_t at_origin) const override {
    // filter keeps each remaining character aligned where it was.
    const size_t kept_at_origin = static_cast<size_t>(
        std::count_if(text.begin(), text.begin() + static_cast<ptrdiff_t>(std::min(at_origin, text.size())),
                      [](char32_t c) { return !unicode::is_combining_mark(c); }));
    text.erase(std::remove_if(text.begin(), text.end(), unicode::is_combining_mark), text.end());
    return kept_at_origin;
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

  size_t normalize(std::u32string& text, size_t at_origin) const override {
    if (text.empty()) return 0;  // find_matches matches nothing in an empty text, not even ""
    thread_local std::vector<Match> matches;
    matches.clear();
    regex_.find_all(text, matches);
    if (matches.empty()) return at_origin;
    // NormalizedString::replace keeps the characters between matches aligned where they were and
    // aligns the content of a match with the match's last character (with the character before
    // an empty match; with (0, 0), the start, for an empty match at 0): "ab" replaced at the
    // start leaves the start behind.
    size_t origin = 0;
    bool counting = true;
    const auto keep = [&](size_t from, size_t to) {  // text[from, to) copied
      if (!counting) return;
      origin += std::min(to, std::max(from, at_origin)) - from;
      if (to > at_origin) counting = false;
    };
    std::u32string out;
    out.reserve(text.size() + matches.size() * content32_.size());
    size_t previous = 0;
    for (const auto& [begin, end] : matches) {
      keep(previous, begin);
      if (counting && !content32_.empty()) {
        if (end == 0 || end - 1 < at_origin) {
          origin += content32_.size();
        } else {
          counting = false;
        }
      }
      out.append(text, previous, begin - previous);
      out += content32_;
      previous = end;
    }
    keep(previous, text.size());
    out.append(text, previous, std::u32string::npos);
    text.swap(out);
    return origin;
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

  size_t normalize(std::u32string& text, size_t at_origin) const override {
    if (text.empty()) return 0;
    text.insert(0, prepend32_);
    // NormalizedString::prepend rewrites the first character as the string and that character,
    // all aligned with it; an empty string makes the character an insertion at 0, aligned with
    // (0, 0): the start, whatever it was aligned with before.
    if (prepend32_.empty()) return std::max<size_t>(at_origin, 1);
    return at_origin > 0 ? at_origin + prepend32_.size() : 0;
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

  size_t normalize(std::u32string& text, size_t at_origin) const override {
    for (const auto& normalizer : normalizers_) at_origin = normalizer->normalize(text, at_origin);
    return at_origin;
  }

  OrderedJson to_json() const override {
    OrderedJson list = OrderedJson::array();
    for (const auto& normalizer : normalizers_) list.push_back(normalizer->to_json());
    return OrderedJson{{"type", "Sequence"}, {"normalizers", list}};
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> normalizers_;
};

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
  return std::make_unique<NormalizerSequence>(make_normalizers(config, "normalizers", source));
}

}  // namespace gradcache::hf::detail
