// Unicode operations of the BERT normaliser and pre-tokeniser through ICU (see unicode.h for why
// each predicate also checks the character's age).
#include "hf/unicode.h"

#include "hf/unicode16_tables.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/uniset.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>

namespace gradcache::hf::unicode {
namespace {

enum Flag : uint8_t { kWhitespace = 1, kControl = 2, kPunctuation = 4, kNonspacingMark = 8 };

bool assigned_by(char32_t c, int major) {
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(c), age);
  return age[0] < major || (age[0] == major && age[1] == 0 && age[2] == 0);
}

bool is_ascii_alnum(char32_t c) {
  return (c >= U'0' && c <= U'9') || (c >= U'A' && c <= U'Z') || (c >= U'a' && c <= U'z');
}

bool is_ascii_punctuation(char32_t c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

// The characters of Unicode 8.0 whose general category changed since (the tests compare every
// code point with `tokenizers`): their category as Unicode 8.0 gave it.
int8_t category_in_unicode_8(UChar32 c) {
  switch (c) {
    case 0x166D: return U_OTHER_PUNCTUATION;       // CANADIAN SYLLABICS CHI SIGN: So since 12.0
    case 0x1734: return U_NON_SPACING_MARK;        // HANUNOO SIGN PAMUDPOD: Mc since 14.0
    case 0x1885:                                   // MONGOLIAN LETTER ALI GALI BALUDA
    case 0x1886: return U_OTHER_LETTER;            // ... THREE BALUDA: Mn since 9.0
    case 0xA9BD: return U_COMBINING_SPACING_MARK;  // JAVANESE CONSONANT SIGN KERET: Mn since 12.0
    case 0x111C9: return U_OTHER_PUNCTUATION;      // SHARADA SANDHI MARK: Mn since 11.0
    default: return u_charType(c);
  }
}

uint8_t compute_flags(char32_t c) {
  const auto uc = static_cast<UChar32>(c);
  uint8_t flags = 0;
  if (u_hasBinaryProperty(uc, UCHAR_WHITE_SPACE)) flags |= kWhitespace;
  const bool old = assigned_by(c, kCategoryTablesMajor);
  const int8_t category = category_in_unicode_8(uc);
  const bool other = category == U_CONTROL_CHAR || category == U_FORMAT_CHAR || category == U_PRIVATE_USE_CHAR;
  if (old && other && c != U'\t' && c != U'\n' && c != U'\r') flags |= kControl;
  const uint32_t mask = U_MASK(category);
  if (is_ascii_punctuation(c) || (old && (mask & U_GC_P_MASK) != 0)) flags |= kPunctuation;
  if (old && category == U_NON_SPACING_MARK) flags |= kNonspacingMark;
  return flags;
}

// The flags of the Basic Multilingual Plane, computed once (64 KiB); the other planes are rare
// enough in text to ask ICU each time.
const std::array<uint8_t, 0x10000>& bmp_flags() {
  static const std::array<uint8_t, 0x10000> table = [] {
    std::array<uint8_t, 0x10000> t{};
    for (char32_t c = 0; c < 0x10000; ++c) t[c] = compute_flags(c);
    return t;
  }();
  return table;
}

uint8_t flags(char32_t c) { return c < 0x10000 ? bmp_flags()[c] : compute_flags(c); }

// The normalisation forms restricted to the characters of Unicode 9.0 (FilteredNormalizer2
// treats the others as if they were unassigned: left alone, and boundaries for reordering and
// composition), as unicode-normalization-alignments' Unicode 9.0 tables do.
enum class Form { kNfd, kNfc, kNfkd, kNfkc };

struct Normalizer9 {
  UErrorCode status = U_ZERO_ERROR;
  icu::UnicodeSet filter;
  std::unique_ptr<icu::FilteredNormalizer2> normalizer;
  explicit Normalizer9(Form form) : filter(icu::UnicodeString(u"[:age=9.0:]"), status) {
    const icu::Normalizer2* base = nullptr;
    switch (form) {
      case Form::kNfd: base = icu::Normalizer2::getNFDInstance(status); break;
      case Form::kNfc: base = icu::Normalizer2::getNFCInstance(status); break;
      case Form::kNfkd: base = icu::Normalizer2::getNFKDInstance(status); break;
      case Form::kNfkc: base = icu::Normalizer2::getNFKCInstance(status); break;
    }
    if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU: no normalization data: ") + u_errorName(status));
    filter.freeze();
    normalizer = std::make_unique<icu::FilteredNormalizer2>(*base, filter);
  }
};

const icu::Normalizer2& normalizer9(Form form) {
  static const Normalizer9 nfd(Form::kNfd), nfc(Form::kNfc), nfkd(Form::kNfkd), nfkc(Form::kNfkc);
  switch (form) {
    case Form::kNfd: return *nfd.normalizer;
    case Form::kNfc: return *nfc.normalizer;
    case Form::kNfkd: return *nfkd.normalizer;
    default: return *nfkc.normalizer;
  }
}

// The Unicode 16.0 row of unicode16_tables.h that holds `c`, or nullptr.
const gradcache::hf::detail::unicode16::Row* unicode16_row(char32_t c) {
  const auto& rows = gradcache::hf::detail::unicode16::kRows;
  const auto* it = std::upper_bound(std::begin(rows), std::end(rows), c,
                                    [](char32_t x, const auto& row) { return x < row.first; });
  if (it == std::begin(rows)) return nullptr;
  --it;
  return c <= it->last ? it : nullptr;
}

// Lower-case mappings that Unicode added after 15.0 (ICU 72's version), which Rust's std (and
// so `tokenizers`) already has: used when the ICU at hand does not map the character itself.
char32_t lowercase_after_unicode_15(char32_t c) {
  if (c >= 0x10D50 && c <= 0x10D65) return c + 0x20;  // Garay capitals (16.0)
  if (c >= 0x16EA0 && c <= 0x16EB8) return c + 0x1B;  // Beria Erfe capitals (17.0)
  switch (c) {
    case 0x1C89: return 0x1C8A;  // CYRILLIC CAPITAL LETTER TJE (16.0)
    case 0xA7CB: return 0x0264;  // LATIN CAPITAL LETTER RAMS HORN (16.0)
    case 0xA7CC: return 0xA7CD;  // LATIN CAPITAL LETTER S WITH DIAGONAL STROKE (16.0)
    case 0xA7CE: return 0xA7CF;  // LATIN CAPITAL LETTER PHARYNGEAL VOICED FRICATIVE (17.0)
    case 0xA7D2: return 0xA7D3;  // LATIN CAPITAL LETTER DOUBLE THORN (17.0)
    case 0xA7D4: return 0xA7D5;  // LATIN CAPITAL LETTER DOUBLE WYNN (17.0)
    case 0xA7DA: return 0xA7DB;  // LATIN CAPITAL LETTER LAMBDA (16.0)
    case 0xA7DC: return 0x019B;  // LATIN CAPITAL LETTER LAMBDA WITH STROKE (16.0)
    default: return c;
  }
}

}  // namespace

std::u32string decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const auto length = static_cast<int64_t>(text.size());
  int64_t i = 0;
  while (i < length) {
    if (s[i] < 0x80) {
      out.push_back(s[i++]);
      continue;
    }
    UChar32 c;
    U8_NEXT_OR_FFFD(s, i, length, c);
    out.push_back(static_cast<char32_t>(c));
  }
  return out;
}

namespace {

// Where the UTF-8 sequence at `at` ends, and whether it is well-formed (an ill-formed one is a
// maximal ill-formed subpart).
size_t next_sequence(std::string_view text, size_t at, bool& well_formed) {
  auto i = static_cast<int64_t>(at);
  UChar32 c;
  U8_NEXT(reinterpret_cast<const uint8_t*>(text.data()), i, static_cast<int64_t>(text.size()), c);
  well_formed = c >= 0;
  return static_cast<size_t>(i);
}

}  // namespace

std::optional<size_t> find_invalid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    bool well_formed;
    const size_t next = next_sequence(text, i, well_formed);
    if (!well_formed) return i;
    i = next;
  }
  return std::nullopt;
}

std::string printable_utf8(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    bool well_formed;
    const size_t next = next_sequence(text, i, well_formed);
    for (; i < next; ++i) {
      const auto byte = static_cast<uint8_t>(text[i]);
      if (well_formed) {
        out.push_back(text[i]);
      } else {
        out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
      }
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : text) append_utf8(out, c);
  return out;
}

bool is_whitespace(char32_t c) { return (flags(c) & kWhitespace) != 0; }
bool is_control(char32_t c) { return (flags(c) & kControl) != 0; }
bool is_punctuation(char32_t c) { return (flags(c) & kPunctuation) != 0; }
bool is_nonspacing_mark(char32_t c) { return (flags(c) & kNonspacingMark) != 0; }

bool is_word_char(char32_t c) {
  if (c < 0x80) return is_ascii_alnum(c) || c == U'_';
  if (const auto* row = unicode16_row(c))  // Unicode 15.1 and 16.0, which this ICU may lack
    return (row->flags & gradcache::hf::detail::unicode16::kAlphabetic) != 0 ||
           (U_MASK(row->category) & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
  if (!assigned_by(c, 16)) return false;
  const auto uc = static_cast<UChar32>(c);
  const uint32_t mask = U_MASK(u_charType(uc));
  return u_hasBinaryProperty(uc, UCHAR_ALPHABETIC) || (mask & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0 ||
         u_hasBinaryProperty(uc, UCHAR_JOIN_CONTROL);
}

bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= U'0' && c <= U'9';
  // Unicode 17.0's new numbers (Rust's std has them; ICU 72, Unicode 15.0, does not).
  if ((c >= 0x11DE0 && c <= 0x11DE9) || (c >= 0x16FF4 && c <= 0x16FF6)) return true;
  if (const auto* row = unicode16_row(c)) return (U_MASK(row->category) & U_GC_N_MASK) != 0;
  return (U_MASK(u_charType(static_cast<UChar32>(c))) & U_GC_N_MASK) != 0;
}

bool is_combining_mark(char32_t c) {
  if (c < 0x300 || !assigned_by(c, kNormalizationTablesMajor)) return false;
  // The characters whose category changed between Unicode 9.0 and ICU's version, across the
  // line between marks and the rest (the tests compare every code point with `tokenizers`).
  switch (c) {
    case 0x1CF2:                            // VEDIC SIGN ARDHAVISARGA
    case 0x1CF3: return true;               // VEDIC SIGN ROTATED ARDHAVISARGA: Mc in 9.0, Lo since 10.0
    case 0x111C9: return false;             // SHARADA SANDHI MARK: Po in 9.0, Mn since 11.0
    default: return (U_MASK(u_charType(static_cast<UChar32>(c))) & U_GC_M_MASK) != 0;
  }
}

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void append_lowercase(std::u32string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(c >= U'A' && c <= U'Z' ? c + 32 : c);
    return;
  }
  // The only unconditional full lower-case mapping longer than one character (SpecialCasing.txt);
  // everything else is the simple mapping. The tests check this against ICU's full mapping of
  // every code point.
  if (c == 0x130) {
    out.push_back(U'i');
    out.push_back(0x307);
    return;
  }
  const auto lower = static_cast<char32_t>(u_tolower(static_cast<UChar32>(c)));
  out.push_back(lower != c ? lower : lowercase_after_unicode_15(c));
}

namespace {

// The code points below which a form changes nothing and reorders nothing: U+00A0 (no-break
// space) is the first character with a compatibility decomposition, U+00C0 the first with a
// canonical one.
char32_t first_affected(Form form) { return form == Form::kNfkd || form == Form::kNfkc ? 0xA0 : 0xC0; }

void normalize_block(Form form, std::u32string_view block, std::u32string& out) {
  const char32_t first = first_affected(form);
  if (std::all_of(block.begin(), block.end(), [first](char32_t c) { return c < first; })) {
    out.append(block);
    return;
  }
  UErrorCode status = U_ZERO_ERROR;
  const icu::UnicodeString source =
      icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(block.data()), static_cast<int32_t>(block.size()));
  const icu::UnicodeString result = normalizer9(form).normalize(source, status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU normalization failed: ") + u_errorName(status));
  const size_t at = out.size();
  out.resize(at + static_cast<size_t>(result.countChar32()));
  result.toUTF32(reinterpret_cast<UChar32*>(out.data() + at), static_cast<int32_t>(out.size() - at), status);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU UTF-32 conversion failed: ") + u_errorName(status));
}

void normalize(Form form, std::u32string& text) {
  // In blocks of about a million characters (ICU strings index with int32_t, and a form can
  // expand a text many times over), cut before a character that the form never reorders or
  // merges across (hasBoundaryBefore), so the blocks normalise independently.
  constexpr size_t kBlock = size_t{1} << 20;
  std::u32string out;
  if (text.size() <= kBlock) {
    normalize_block(form, text, out);
    text.swap(out);
    return;
  }
  out.reserve(text.size());
  const icu::Normalizer2& normalizer = normalizer9(form);
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = std::min(text.size(), begin + kBlock);
    while (end < text.size() && end > begin + kBlock / 2 &&
           !normalizer.hasBoundaryBefore(static_cast<UChar32>(text[end])))
      --end;
    normalize_block(form, std::u32string_view(text).substr(begin, end - begin), out);
    begin = end;
  }
  text.swap(out);
}

}  // namespace

void nfd(std::u32string& text) { normalize(Form::kNfd, text); }
void nfc(std::u32string& text) { normalize(Form::kNfc, text); }
void nfkd(std::u32string& text) { normalize(Form::kNfkd, text); }
void nfkc(std::u32string& text) { normalize(Form::kNfkc, text); }

}  // namespace gradcache::hf::unicode
