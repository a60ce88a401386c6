// Where a normaliser's result still stands at the start of the original text (normalized_origin.h):
// for NFD, NFC, NFKD and NFKC, a replay of the unicode-normalization-alignments iterators
// (decompose, reorder, recompose) over the first few characters, with ICU's Unicode 9.0 data
// (hf/unicode.h), since each new character's change decides where it stands; and Lowercase.
#include "hf/normalized_origin.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

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

}  // namespace gradcache::hf::detail
