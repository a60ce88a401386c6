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
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/normalized_origin.h"
#include "hf/regex.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

// ---- where NFD, NFC, NFKD, NFKC leave the start ---------------------------------------------
//
// unicode-normalization-alignments (Decompositions, Recompositions) gives transform() one change
// per character of the result; the text itself comes from hf/unicode.h, and these follow the
// crate's iterators only as far as the characters that keep the start go, with the crate's
// Unicode 9.0: a character assigned later neither decomposes, nor composes, and has combining
// class 0.

bool assigned_by_unicode_9(char32_t c) {
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(c), age);
  return age[0] <= 9;
}

uint8_t combining_class(char32_t c) {
  if (c < 0x300 || !assigned_by_unicode_9(c)) return 0;
  return u_getCombiningClass(static_cast<UChar32>(c));
}

/// The character a + b compose into (a primary composite), if any.
std::optional<char32_t> compose_pair(char32_t a, char32_t b) {
  static const icu::Normalizer2* const nfc = [] {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* instance = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU: no NFC data: ") + u_errorName(status));
    return instance;
  }();
  if (!assigned_by_unicode_9(a) || !assigned_by_unicode_9(b)) return std::nullopt;
  const UChar32 composite = nfc->composePair(static_cast<UChar32>(a), static_cast<UChar32>(b));
  if (composite < 0 || !assigned_by_unicode_9(static_cast<char32_t>(composite))) return std::nullopt;
  return static_cast<char32_t>(composite);
}

/// A character of a form's result with the change transform() gets for it.
struct Changed {
  char32_t c;
  ptrdiff_t change;
};

/// The crate's Decompositions: each character's full decomposition, its first character a
/// change 0 and the others insertions (1), and each run of non-starters stably sorted by
/// combining class when a starter (class 0) or the end closes it.
class Decomposer {
 public:
  Decomposer(std::u32string_view text, bool compatibility) : text_(text), compatibility_(compatibility) {}

  bool next(Changed& out) {
    while (ready_ == emitted_) {
      buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(ready_));
      ready_ = emitted_ = 0;
      if (at_ == text_.size()) {
        if (buffer_.empty()) return false;
        sort_pending();
        break;
      }
      const char32_t c = text_[at_++];
      if (c < (compatibility_ ? 0xA0u : 0xC0u)) {  // below the first character a form changes
        push(c, 0);
        continue;
      }
      std::u32string decomposition(1, c);
      if (compatibility_) {
        unicode::nfkd(decomposition);
      } else {
        unicode::nfd(decomposition);
      }
      for (size_t i = 0; i < decomposition.size(); ++i) push(decomposition[i], i == 0 ? 0 : 1);
    }
    out = buffer_[emitted_++].changed;
    return true;
  }

 private:
  struct Entry {
    uint8_t combining_class;
    Changed changed;
  };

  void push(char32_t c, ptrdiff_t change) {
    const uint8_t cc = combining_class(c);
    if (cc == 0) sort_pending();
    buffer_.push_back({cc, {c, change}});
  }
  void sort_pending() {
    std::stable_sort(buffer_.begin() + static_cast<ptrdiff_t>(ready_), buffer_.end(),
                     [](const Entry& a, const Entry& b) { return a.combining_class < b.combining_class; });
    ready_ = buffer_.size();
  }

  std::u32string_view text_;
  bool compatibility_;
  size_t at_ = 0;
  std::vector<Entry> buffer_;  // [0, emitted_) out already, [emitted_, ready_) sorted, the rest pending
  size_t ready_ = 0;
  size_t emitted_ = 0;
};

/// The crate's Recompositions over the Decomposer: the starter being composed (the composee)
/// takes each character it composes with, its change becoming the sum of both changes less one;
/// the blocked non-starters wait in a buffer and follow it.
class Composer {
 public:
  Composer(std::u32string_view text, bool compatibility) : decomposer_(text, compatibility) {}

  bool next(Changed& out) {
    for (;;) {
      if (purging_ || finished_) {
        if (purged_ < buffer_.size()) {
          out = buffer_[purged_++];
          return true;
        }
        buffer_.clear();
        purged_ = 0;
        if (finished_) {
          if (!composee_) return false;
          out = *composee_;
          composee_.reset();
          return true;
        }
        purging_ = false;
      }
      Changed d;
      if (!decomposer_.next(d)) {
        finished_ = true;
        if (composee_) {
          out = *composee_;
          composee_.reset();
          return true;
        }
        continue;
      }
      const uint8_t cc = combining_class(d.c);
      if (!composee_) {
        if (cc != 0) {
          out = d;
          return true;
        }
        composee_ = d;
        continue;
      }
      const Changed k = *composee_;
      if (!last_class_) {
        if (const auto composite = compose_pair(k.c, d.c)) {
          composee_ = Changed{*composite, k.change + d.change - 1};
          continue;
        }
        if (cc == 0) {
          composee_ = d;
          out = k;
          return true;
        }
        buffer_.push_back(d);
        last_class_ = cc;
        continue;
      }
      if (*last_class_ >= cc) {  // d is blocked from the composee
        if (cc == 0) {
          composee_ = d;
          last_class_.reset();
          purging_ = true;
          out = k;
          return true;
        }
        buffer_.push_back(d);
        last_class_ = cc;
        continue;
      }
      if (const auto composite = compose_pair(k.c, d.c)) {
        composee_ = Changed{*composite, k.change + d.change - 1};
        continue;
      }
      buffer_.push_back(d);
      last_class_ = cc;
    }
  }

 private:
  Decomposer decomposer_;
  std::optional<Changed> composee_;
  std::optional<uint8_t> last_class_;
  std::vector<Changed> buffer_;
  size_t purged_ = 0;
  bool purging_ = false;
  bool finished_ = false;
};

const icu::Normalizer2& icu_form(bool composes, bool compatibility) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* instance =
      composes ? (compatibility ? icu::Normalizer2::getNFKCInstance(status) : icu::Normalizer2::getNFCInstance(status))
               : (compatibility ? icu::Normalizer2::getNFKDInstance(status) : icu::Normalizer2::getNFDInstance(status));
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU: no normalization data: ") + u_errorName(status));
  return *instance;
}

// The common case without a walk: when the leading characters and the one after them are each
// below the first character the form changes (U+00A0 for compatibility, U+00C0) or inert (no
// decomposition, class 0, composing with nothing: ICU says so for its newer Unicode, which
// implies it for 9.0's), each stays itself with a change 0, none composes with the one before
// it (a character that does is neither), and the count does not move.
template <typename Form>
size_t form_origin(std::u32string_view text, size_t at_origin, bool composes, bool compatibility) {
  const char32_t unchanged_below = compatibility ? 0xA0 : 0xC0;
  const icu::Normalizer2& form = icu_form(composes, compatibility);
  const size_t checked = std::min(at_origin + 1, text.size());
  if (std::all_of(text.begin(), text.begin() + static_cast<ptrdiff_t>(checked),
                  [&](char32_t c) { return c < unchanged_below || form.isInert(static_cast<UChar32>(c)); }))
    return std::min(at_origin, text.size());
  Form changes(text, compatibility);
  OriginTracker tracker(at_origin);
  Changed changed;
  while (!tracker.done() && changes.next(changed)) tracker.add(changed.change);
  return tracker.at_origin();
}

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

size_t decomposition_origin(std::u32string_view text, size_t at_origin, bool compatibility) {
  return form_origin<Decomposer>(text, at_origin, /*composes=*/false, compatibility);
}

size_t composition_origin(std::u32string_view text, size_t at_origin, bool compatibility) {
  return form_origin<Composer>(text, at_origin, /*composes=*/true, compatibility);
}

size_t lowercase_in_place(std::u32string& text, size_t at_origin) {
  if (std::all_of(text.begin(), text.end(), [](char32_t c) { return c < 0x80; })) {
    for (char32_t& c : text) c = (c >= U'A' && c <= U'Z') ? c + 32 : c;
    return at_origin;  // one character for one
  }
  const size_t origin = lowercase_origin(text, at_origin);
  std::u32string out;
  out.reserve(text.size());
  for (const char32_t c : text) unicode::append_lowercase(out, c);
  text.swap(out);
  return origin;
}

size_t lowercase_origin(std::u32string_view text, size_t at_origin) {
  size_t origin = 0;
  std::u32string lower;
  for (size_t i = 0; i < std::min(at_origin, text.size()); ++i) {
    lower.clear();
    unicode::append_lowercase(lower, text[i]);
    origin += lower.size();
  }
  return origin;
}

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
