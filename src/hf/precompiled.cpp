// Precompiled: SentencePiece's normalisation rules, compiled into the "precompiled_charsmap" a
// SentencePiece model carries (XLM-RoBERTa, T5, ALBERT... put it in tokenizer.json in base64), as
// `tokenizers` runs them (normalizers/precompiled.rs over the spm_precompiled crate).
//
// The charsmap is [u32 trie size in bytes][the trie: a darts-clone double array of u32 units]
// [the replacements: UTF-8, each ending with a NUL]. The trie's keys are UTF-8 byte strings and
// a key's value is where its replacement begins. `tokenizers` walks the text grapheme cluster by
// grapheme cluster (extended clusters, as the unicode-segmentation crate cuts them): a cluster
// shorter than 6 UTF-8 bytes that begins with a key is replaced whole by that key's replacement
// (the replacement of the SHORTEST key it begins with, and whatever follows the key in the
// cluster goes with it: "ﬁ" + U+0301 becomes "fi"); any other cluster goes character by
// character, each character that begins with a key replaced the same way.
//
// It also says how many leading characters stay aligned with the original's start
// (hf/normalized_origin.h). precompiled.rs hands transform() a change per new character, built
// oddly: a replacement's characters are changes 0, the last of them carrying the difference in
// length (the last ones insertions when longer, the last one removing the extra old characters
// when shorter), and a replacement by nothing adds its difference to the change of the previous
// new character, or, when there is none yet, to nothing: a text whose first character is
// replaced by nothing keeps its start on the next one ("\x01ab" gives "ab" with "a" aligned
// with "\x01"). When nothing is replaced, nothing moves.
//
// A charsmap that lies (a trie pointing outside itself, a replacement starting outside the
// replacements or inside a character) is refused when read: every node the trie can reach is
// walked once, so no text can lead the walk anywhere unchecked. `tokenizers` loads such a
// charsmap and panics on the first text that reaches the broken part.
#include <unicode/uchar.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>

#include "hf/components.h"
#include "hf/json_fields.h"
#include "hf/normalized_origin.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {
namespace {

/// The largest charsmap read, decoded: SentencePiece's (nmt_nfkc) is 240 KB. Checking the trie
/// costs 255 probes a node, so this also bounds the time a hostile file costs.
constexpr size_t kMaxCharsmapBytes = size_t{8} << 20;

// ---- base64 ---------------------------------------------------------------------------------------
//
// The standard alphabet, as spm_precompiled's base64 reads it: the padding may be left out, or
// be part of the "=" or "==" the length calls for, but nothing follows it, and the bits of the
// last symbol that make no byte must be zero.

constexpr char kBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char symbol) {
  if (symbol >= 'A' && symbol <= 'Z') return symbol - 'A';
  if (symbol >= 'a' && symbol <= 'z') return symbol - 'a' + 26;
  if (symbol >= '0' && symbol <= '9') return symbol - '0' + 52;
  if (symbol == '+') return 62;
  if (symbol == '/') return 63;
  return -1;
}

std::string decode_base64(std::string_view text, const Source& source) {
  size_t symbols = text.size();
  while (symbols > 0 && text[symbols - 1] == '=') --symbols;
  const size_t padding = text.size() - symbols;
  for (size_t i = 0; i < symbols; ++i)
    if (base64_value(text[i]) < 0) {
      const auto byte = static_cast<unsigned char>(text[i]);
      char shown[8];
      std::snprintf(shown, sizeof shown, byte >= 0x20 && byte < 0x7F ? "'%c'" : "\\x%02X", byte);
      fail(source, std::string("is not base64: the character ") + shown + " at offset " + std::to_string(i) +
                       " is not in the standard alphabet (A-Z a-z 0-9 + /, '=' only at the end)");
    }
  const size_t tail = symbols % 4;  // symbols of the last, partial group
  if (tail == 1 || (padding > 0 && (tail == 0 || padding > 4 - tail)))
    fail(source, "is not base64: " + std::to_string(text.size()) + " characters (" + std::to_string(padding) +
                     " of them padding) do not make whole bytes; the text is cut short or padded wrongly");
  std::string bytes;
  bytes.reserve(symbols / 4 * 3 + 2);
  uint32_t bits = 0;
  int bit_count = 0;
  for (size_t i = 0; i < symbols; ++i) {
    bits = (bits << 6) | static_cast<uint32_t>(base64_value(text[i]));
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      bytes.push_back(static_cast<char>((bits >> bit_count) & 0xFF));
    }
  }
  if ((bits & ((1u << bit_count) - 1)) != 0)
    fail(source, "is not base64: its last symbol has bits set that make no byte (the text is damaged)");
  return bytes;
}

std::string encode_base64(std::string_view bytes) {
  std::string text;
  text.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k) group = (group << 8) | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) text.push_back(k <= n ? kBase64Alphabet[(group >> (18 - 6 * k)) & 63] : '=');
  }
  return text;
}

// ---- the charsmap -----------------------------------------------------------------------------

/// The double array (darts-clone's unit layout, spm_precompiled's reading of it) and the
/// replacements.
class CharsMap {
 public:
  CharsMap(std::string_view blob, const Source& source) {
    if (blob.size() < 4)
      fail(source, "the charsmap has " + std::to_string(blob.size()) +
                       " bytes, too few for its header (tokenizers: \"Cannot parse precompiled_charsmap\")");
    const uint32_t trie_bytes = read_u32(blob.data());
    if (trie_bytes > blob.size() - 4)
      fail(source, "the charsmap's header gives its trie " + std::to_string(trie_bytes) + " bytes, but only " +
                       std::to_string(blob.size() - 4) + " follow it (the charsmap is cut short or damaged)");
    if (trie_bytes % 4 != 0)
      fail(source, "the charsmap's header gives its trie " + std::to_string(trie_bytes) +
                       " bytes, not a whole number of 4-byte units (the charsmap is damaged)");
    if (trie_bytes == 0)
      fail(source, "the charsmap's trie is empty (tokenizers fails on the first text: its root is missing)");
    units_.resize(trie_bytes / 4);
    for (size_t i = 0; i < units_.size(); ++i) units_[i] = read_u32(blob.data() + 4 + 4 * i);
    normalized_ = std::string(blob.substr(4 + trie_bytes));
    if (const auto bad = unicode::find_invalid_utf8(normalized_))
      fail(source, "the charsmap's replacements are not valid UTF-8 (byte " + std::to_string(*bad) +
                       " of them); the charsmap is damaged");
    check_trie(source);
  }

  /// The replacement of the shortest key `key` begins with (a walk stops at a NUL byte), or
  /// nothing when it begins with none. spm_precompiled collects every key the text begins with
  /// and takes the first; the walk stops there, which the check when read makes the same.
  std::optional<std::string_view> transform(const char* key, size_t size) const {
    size_t node = offset(units_[0]);
    for (size_t i = 0; i < size; ++i) {
      const auto byte = static_cast<uint8_t>(key[i]);
      if (byte == 0) break;
      node ^= byte;
      const uint32_t unit = units_[node];
      if (label(unit) != byte) return std::nullopt;
      node ^= offset(unit);
      if (has_leaf(unit)) return replacement(value(units_[node]));
    }
    return std::nullopt;
  }

 private:
  static uint32_t read_u32(const char* p) {
    const auto* b = reinterpret_cast<const uint8_t*>(p);
    return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
  }
  static bool has_leaf(uint32_t unit) { return (unit >> 8) & 1; }
  static uint32_t value(uint32_t unit) { return unit & 0x7FFFFFFFu; }
  static uint32_t label(uint32_t unit) { return unit & 0x800000FFu; }
  static size_t offset(uint32_t unit) { return size_t{unit >> 10} << ((unit & (1u << 9)) >> 6); }

  /// The replacement beginning at `index`: up to the next NUL, or to the end.
  std::string_view replacement(size_t index) const {
    const size_t end = std::min(normalized_.find('\0', index), normalized_.size());
    return std::string_view(normalized_).substr(index, end - index);
  }

  // Walks every node the trie reaches from its root (a node is a base position; byte c leads
  // from base s to unit s ^ c, which belongs to the node if its label is c, and the child's base
  // is that position ^ its offset) and checks what a walk can read there: each unit a byte
  // 1..255 probes is inside the array, each leaf's value unit too, and each value starts a
  // replacement (at most the end of the replacements, and not inside a character).
  void check_trie(const Source& source) const {
    const size_t n = units_.size();
    const auto broken = [&](const std::string& what) {
      fail(source, "the charsmap's trie is damaged: " + what +
                       " (tokenizers would fail on a text that reaches it); take the charsmap from the "
                       "model's SentencePiece file again");
    };
    std::vector<bool> visited(n + 256, false);
    std::vector<size_t> pending{offset(units_[0])};
    while (!pending.empty()) {
      const size_t base = pending.back();
      pending.pop_back();
      if (base >= visited.size())
        broken("a node's base is " + std::to_string(base) + ", past the " + std::to_string(n) + " units");
      if (visited[base]) continue;
      visited[base] = true;
      for (size_t byte = 1; byte < 256; ++byte) {
        const size_t position = base ^ byte;
        if (position >= n)
          broken("byte " + std::to_string(byte) + " leads to unit " + std::to_string(position) + ", past the " +
                 std::to_string(n) + " units");
        const uint32_t unit = units_[position];
        if (label(unit) != byte) continue;
        const size_t child = position ^ offset(unit);
        if (has_leaf(unit)) {
          if (child >= n)
            broken("a key's value is at unit " + std::to_string(child) + ", past the " + std::to_string(n) + " units");
          const size_t index = value(units_[child]);
          if (index > normalized_.size() ||
              (index < normalized_.size() && (static_cast<uint8_t>(normalized_[index]) & 0xC0) == 0x80))
            broken("a replacement begins at byte " + std::to_string(index) + ", " +
                   (index > normalized_.size() ? "past the " + std::to_string(normalized_.size()) + " bytes of them"
                                               : std::string("inside a character")));
        }
        pending.push_back(child);
      }
    }
  }

  std::vector<uint32_t> units_;
  std::string normalized_;  // the replacements, NUL-separated
};

// ---- extended grapheme clusters -----------------------------------------------------------------
//
// UAX #29's rules over ICU's Grapheme_Cluster_Break and Extended_Pictographic properties: the
// clusters unicode-segmentation's graphemes(true) gives (its rules are the standard's). Written
// here rather than with ICU's BreakIterator because the text is UTF-32 and normalize() runs on
// many threads (a BreakIterator is neither), and a cluster is rarely more than a character.
//
// GB9c (no break inside an Indic conjunct: consonant, virama, consonant) needs the
// Indic_Conjunct_Break property, which ICU 72 does not have: its values are below, as
// unicode-segmentation 1.13 (Unicode 17.0, what `tokenizers` 0.23 is built with: Myanmar and
// Balinese conjuncts join there) has them. It shows where a conjunct's consonant has a
// replacement and a 2-byte mark follows it (क्क़́: joined, the cluster is 9 bytes and goes
// character by character, so the accent stays). Characters newer than ICU's Unicode (15.0)
// break as "Other" where unicode-segmentation may know them.

/// Indic_Conjunct_Break=Consonant (Unicode 17.0).
constexpr std::pair<char32_t, char32_t> kConjunctConsonants[] = {
    {0x915, 0x939},     {0x958, 0x95F},     {0x978, 0x97F},     {0x995, 0x9A8},     {0x9AA, 0x9B0},
    {0x9B2, 0x9B2},     {0x9B6, 0x9B9},     {0x9DC, 0x9DD},     {0x9DF, 0x9DF},     {0x9F0, 0x9F1},
    {0xA95, 0xAA8},     {0xAAA, 0xAB0},     {0xAB2, 0xAB3},     {0xAB5, 0xAB9},     {0xAF9, 0xAF9},
    {0xB15, 0xB28},     {0xB2A, 0xB30},     {0xB32, 0xB33},     {0xB35, 0xB39},     {0xB5C, 0xB5D},
    {0xB5F, 0xB5F},     {0xB71, 0xB71},     {0xC15, 0xC28},     {0xC2A, 0xC39},     {0xC58, 0xC5A},
    {0xD15, 0xD3A},     {0x1000, 0x102A},   {0x103F, 0x103F},   {0x1050, 0x1055},   {0x105A, 0x105D},
    {0x1061, 0x1061},   {0x1065, 0x1066},   {0x106E, 0x1070},   {0x1075, 0x1081},   {0x108E, 0x108E},
    {0x1780, 0x17B3},   {0x1A20, 0x1A54},   {0x1B0B, 0x1B0C},   {0x1B13, 0x1B33},   {0x1B45, 0x1B4C},
    {0x1B83, 0x1BA0},   {0x1BAE, 0x1BAF},   {0x1BBB, 0x1BBD},   {0xA989, 0xA98B},   {0xA98F, 0xA9B2},
    {0xA9E0, 0xA9E4},   {0xA9E7, 0xA9EF},   {0xA9FA, 0xA9FE},   {0xAA60, 0xAA6F},   {0xAA71, 0xAA73},
    {0xAA7A, 0xAA7A},   {0xAA7E, 0xAA7F},   {0xAAE0, 0xAAEA},   {0xABC0, 0xABDA},   {0x10A00, 0x10A00},
    {0x10A10, 0x10A13}, {0x10A15, 0x10A17}, {0x10A19, 0x10A35}, {0x11103, 0x11126}, {0x11144, 0x11144},
    {0x11147, 0x11147}, {0x11380, 0x11389}, {0x1138B, 0x1138B}, {0x1138E, 0x1138E}, {0x11390, 0x113B5},
    {0x11900, 0x11906}, {0x11909, 0x11909}, {0x1190C, 0x11913}, {0x11915, 0x11916}, {0x11918, 0x1192F},
    {0x11A00, 0x11A00}, {0x11A0B, 0x11A32}, {0x11A50, 0x11A50}, {0x11A5C, 0x11A83}, {0x11F04, 0x11F10},
    {0x11F12, 0x11F33}};
/// Indic_Conjunct_Break=Linker (Unicode 17.0): the viramas that join conjuncts.
constexpr char32_t kConjunctLinkers[] = {0x94D,   0x9CD,   0xACD,   0xB4D,   0xC4D,   0xD4D,  0x1039,
                                         0x17D2,  0x1A60,  0x1B44,  0x1BAB,  0xA9C0,  0xAAF6, 0x10A3F,
                                         0x11133, 0x113D0, 0x1193E, 0x11A47, 0x11A99, 0x11F42};
/// Indic_Conjunct_Break=Extend is Grapheme_Cluster_Break Extend or ZWJ, less the linkers and
/// ZWNJ, in Unicode 17.0 as in ICU's data, but for these: marks ICU 72 (Unicode 15.0) has as
/// SpacingMark that Unicode 16.0 made Extend (and U+1171E, the other way).
constexpr char32_t kConjunctExtendsSpacingIn15[] = {
    0xCC0,  0xCC7,  0xCC8,   0xCCA,   0xCCB,   0x1715,  0x1734,  0x1B3B,  0x1B3D,  0x1B43,  0x1BAA,  0x1BF2,
    0x1BF3, 0xA953, 0x111C0, 0x11235, 0x1134D, 0x116B6, 0x1193D, 0x11F41, 0x16FF0, 0x16FF1, 0x1D166, 0x1D16D};

enum class Conjunct : uint8_t { kNone, kConsonant, kLinker, kExtend };

enum class Gcb : uint8_t {
  kOther,
  kCr,
  kLf,
  kControl,
  kExtend,
  kZwj,
  kRegionalIndicator,
  kPrepend,
  kSpacingMark,
  kL,
  kV,
  kT,
  kLv,
  kLvt
};

struct BreakClass {
  Gcb gcb;
  bool pictographic;  // Extended_Pictographic
  Conjunct conjunct;  // Indic_Conjunct_Break
};

Conjunct conjunct_class(char32_t c, Gcb gcb) {
  if (c < 0x300) return Conjunct::kNone;
  if (c >= 0x915 && c <= 0x11F42) {  // the span of the linkers and the consonants
    if (std::find(std::begin(kConjunctLinkers), std::end(kConjunctLinkers), c) != std::end(kConjunctLinkers))
      return Conjunct::kLinker;
    const auto* range =
        std::upper_bound(std::begin(kConjunctConsonants), std::end(kConjunctConsonants), c,
                         [](char32_t x, const std::pair<char32_t, char32_t>& r) { return x < r.first; });
    if (range != std::begin(kConjunctConsonants) && c <= (range - 1)->second) return Conjunct::kConsonant;
  }
  if (gcb == Gcb::kSpacingMark)
    return std::find(std::begin(kConjunctExtendsSpacingIn15), std::end(kConjunctExtendsSpacingIn15), c) !=
                   std::end(kConjunctExtendsSpacingIn15)
               ? Conjunct::kExtend
               : Conjunct::kNone;
  if ((gcb == Gcb::kExtend || gcb == Gcb::kZwj) && c != 0x200C && c != 0x1171E) return Conjunct::kExtend;
  return Conjunct::kNone;
}

BreakClass break_class(char32_t c) {
  if (c < 0x80) {
    if (c == U'\r') return {Gcb::kCr, false, Conjunct::kNone};
    if (c == U'\n') return {Gcb::kLf, false, Conjunct::kNone};
    return {(c < 0x20 || c == 0x7F) ? Gcb::kControl : Gcb::kOther, false, Conjunct::kNone};
  }
  const auto uc = static_cast<UChar32>(c);
  Gcb gcb;
  switch (u_getIntPropertyValue(uc, UCHAR_GRAPHEME_CLUSTER_BREAK)) {
    case U_GCB_CR:
      gcb = Gcb::kCr;
      break;
    case U_GCB_LF:
      gcb = Gcb::kLf;
      break;
    case U_GCB_CONTROL:
      gcb = Gcb::kControl;
      break;
    case U_GCB_EXTEND:
      gcb = Gcb::kExtend;
      break;
    case U_GCB_ZWJ:
      gcb = Gcb::kZwj;
      break;
    case U_GCB_REGIONAL_INDICATOR:
      gcb = Gcb::kRegionalIndicator;
      break;
    case U_GCB_PREPEND:
      gcb = Gcb::kPrepend;
      break;
    case U_GCB_SPACING_MARK:
      gcb = Gcb::kSpacingMark;
      break;
    case U_GCB_L:
      gcb = Gcb::kL;
      break;
    case U_GCB_V:
      gcb = Gcb::kV;
      break;
    case U_GCB_T:
      gcb = Gcb::kT;
      break;
    case U_GCB_LV:
      gcb = Gcb::kLv;
      break;
    case U_GCB_LVT:
      gcb = Gcb::kLvt;
      break;
    default:
      gcb = Gcb::kOther;
      break;
  }
  return {gcb, static_cast<bool>(u_hasBinaryProperty(uc, UCHAR_EXTENDED_PICTOGRAPHIC)), conjunct_class(c, gcb)};
}

bool is_control_break(Gcb gcb) { return gcb == Gcb::kControl || gcb == Gcb::kCr || gcb == Gcb::kLf; }

/// Where the cluster beginning at `begin` ends.
size_t cluster_end(std::u32string_view text, size_t begin) {
  BreakClass before = break_class(text[begin]);
  bool pictographic_run = before.pictographic;  // the text so far ends with ExtPict Extend*
  bool zwj_after_pictographic = false;          // ... ends with ExtPict Extend* ZWJ
  size_t regional_run = before.gcb == Gcb::kRegionalIndicator ? 1 : 0;
  // GB9c: 0 nothing, 1 a consonant (then extends), 2 a consonant, then linkers and extends with
  // at least one linker: a consonant next joins.
  int conjunct = before.conjunct == Conjunct::kConsonant ? 1 : 0;
  for (size_t i = begin + 1; i < text.size(); ++i) {
    const BreakClass next = break_class(text[i]);
    const Gcb a = before.gcb;
    const Gcb b = next.gcb;
    bool join;
    if (a == Gcb::kCr && b == Gcb::kLf) {
      join = true;  // GB3
    } else if (is_control_break(a) || is_control_break(b)) {
      join = false;  // GB4, GB5
    } else if (a == Gcb::kL && (b == Gcb::kL || b == Gcb::kV || b == Gcb::kLv || b == Gcb::kLvt)) {
      join = true;  // GB6
    } else if ((a == Gcb::kLv || a == Gcb::kV) && (b == Gcb::kV || b == Gcb::kT)) {
      join = true;  // GB7
    } else if ((a == Gcb::kLvt || a == Gcb::kT) && b == Gcb::kT) {
      join = true;  // GB8
    } else if (b == Gcb::kExtend || b == Gcb::kZwj || b == Gcb::kSpacingMark || a == Gcb::kPrepend) {
      join = true;  // GB9, GB9a, GB9b
    } else if (next.conjunct == Conjunct::kConsonant && conjunct == 2) {
      join = true;  // GB9c
    } else if (a == Gcb::kZwj && next.pictographic && zwj_after_pictographic) {
      join = true;  // GB11
    } else if (a == Gcb::kRegionalIndicator && b == Gcb::kRegionalIndicator) {
      join = regional_run % 2 == 1;  // GB12, GB13: flags pair up
    } else {
      join = false;  // GB999
    }
    if (!join) return i;
    zwj_after_pictographic = b == Gcb::kZwj && pictographic_run;
    pictographic_run = next.pictographic || (pictographic_run && b == Gcb::kExtend);
    regional_run = b == Gcb::kRegionalIndicator ? regional_run + 1 : 0;
    switch (next.conjunct) {
      case Conjunct::kConsonant:
        conjunct = 1;
        break;
      case Conjunct::kLinker:
        conjunct = conjunct >= 1 ? 2 : 0;
        break;
      case Conjunct::kExtend:
        break;
      case Conjunct::kNone:
        conjunct = 0;
        break;
    }
    before = next;
  }
  return text.size();
}

// ---- the normaliser -----------------------------------------------------------------------------

size_t utf8_length(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

/// Writes the UTF-8 of `c` (a code point, not a surrogate: the text was decoded) at `out`.
size_t put_utf8(char32_t c, char* out) {
  const size_t length = utf8_length(c);
  if (length == 1) {
    out[0] = static_cast<char>(c);
    return 1;
  }
  static constexpr uint8_t kLead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (size_t k = length - 1; k > 0; --k, c >>= 6) out[k] = static_cast<char>(0x80 | (c & 0x3F));
  out[0] = static_cast<char>(kLead[length] | c);
  return length;
}

/// Appends valid UTF-8 (the replacements are checked when read) as code points.
void append_decoded(std::u32string& out, std::string_view utf8) {
  for (size_t i = 0; i < utf8.size();) {
    const auto lead = static_cast<uint8_t>(utf8[i]);
    const size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    char32_t c = length == 1 ? lead : length == 2 ? lead & 0x1F : length == 3 ? lead & 0x0F : lead & 0x07;
    for (size_t k = 1; k < length; ++k) c = (c << 6) | (static_cast<uint8_t>(utf8[i + k]) & 0x3F);
    out.push_back(c);
    i += length;
  }
}

class Precompiled final : public Normalizer {
 public:
  Precompiled(std::string charsmap, const Source& source) : blob_(std::move(charsmap)), map_(blob_, source) {
    for (size_t c = 0; c < ascii_.size(); ++c) {
      const char byte = static_cast<char>(c);
      if (const auto replacement = map_.transform(&byte, 1)) append_decoded(ascii_[c].emplace(), *replacement);
    }
  }

  size_t normalize(std::u32string& text, size_t at_origin) const override {
    thread_local std::u32string out;
    out.clear();
    out.reserve(text.size());
    Changes changes(at_origin);
    const std::u32string_view chars(text);
    for (size_t begin = 0; begin < chars.size();) {
      // An ASCII character before another is a cluster of its own (only CR LF joins in ASCII).
      const char32_t c = chars[begin];
      if (c < 0x80 &&
          (begin + 1 == chars.size() || (chars[begin + 1] < 0x80 && !(c == U'\r' && chars[begin + 1] == U'\n')))) {
        const auto& replacement = ascii_[c];
        if (replacement) {
          out += *replacement;
          changes.replaced(1, replacement->size());
        } else {
          out.push_back(c);
          changes.kept();
        }
        ++begin;
        continue;
      }
      const size_t end = cluster_end(chars, begin);
      append_cluster(chars.substr(begin, end - begin), out, changes);
      begin = end;
    }
    text.swap(out);
    return changes.at_origin();
  }

  OrderedJson to_json() const override {
    OrderedJson j;
    j["type"] = "Precompiled";
    j["precompiled_charsmap"] = encode_base64(blob_);
    return j;
  }

 private:
  /// The changes precompiled.rs gives transform() (see the top of the file), followed only as far
  /// as the start goes. The last change stays open: a replacement by nothing may still change it.
  class Changes {
   public:
    explicit Changes(size_t at_origin) : before_(at_origin), tracker_(at_origin) {}
    void kept() { add(0); }
    void replaced(size_t old_count, size_t new_count) {
      modified_ = true;
      if (tracker_.done()) return;
      const auto diff = static_cast<ptrdiff_t>(new_count) - static_cast<ptrdiff_t>(old_count);
      if (new_count == 0) {
        if (has_open_) open_ += diff;
        return;
      }
      for (size_t i = 0; i < new_count; ++i) {
        // The last `diff` characters are insertions when longer; the last one takes the
        // difference when shorter.
        ptrdiff_t change = 0;
        if (diff > 0 && i >= new_count - static_cast<size_t>(diff)) change = 1;
        if (diff < 0 && i + 1 == new_count) change = diff;
        add(change);
      }
    }
    size_t at_origin() {
      if (!modified_) return before_;  // precompiled.rs transforms nothing then
      if (has_open_) tracker_.add(open_);
      has_open_ = false;
      return tracker_.at_origin();
    }

   private:
    void add(ptrdiff_t change) {
      if (tracker_.done()) return;
      if (has_open_) tracker_.add(open_);
      open_ = change;
      has_open_ = true;
    }

    size_t before_;
    OriginTracker tracker_;
    bool has_open_ = false;
    ptrdiff_t open_ = 0;
    bool modified_ = false;
  };

  // precompiled.rs: a cluster under 6 bytes is looked up whole, else (or when that finds
  // nothing) each character is.
  void append_cluster(std::u32string_view cluster, std::u32string& out, Changes& changes) const {
    char bytes[8];
    size_t size = 0;
    for (const char32_t c : cluster) {
      if (size + utf8_length(c) >= 6) {
        size = 6;
        break;
      }
      size += put_utf8(c, bytes + size);
    }
    if (size < 6) {
      if (const auto replacement = map_.transform(bytes, size)) {
        const size_t before = out.size();
        append_decoded(out, *replacement);
        changes.replaced(cluster.size(), out.size() - before);
        return;
      }
      if (cluster.size() == 1) {  // the character's own lookup is the one just made
        out.push_back(cluster[0]);
        changes.kept();
        return;
      }
    }
    for (const char32_t c : cluster) {
      const size_t length = put_utf8(c, bytes);
      if (const auto replacement = map_.transform(bytes, length)) {
        const size_t before = out.size();
        append_decoded(out, *replacement);
        changes.replaced(1, out.size() - before);
      } else {
        out.push_back(c);
        changes.kept();
      }
    }
  }

  std::string blob_;  // the charsmap as read, for to_json
  CharsMap map_;
  std::array<std::optional<std::u32string>, 128> ascii_;  // each ASCII character's replacement
};

}  // namespace

std::unique_ptr<Normalizer> precompiled_from_json(const Json& config, const Source& source) {
  const Source at = source.at("precompiled_charsmap");
  const Json& charsmap = require_field(config, "precompiled_charsmap", source);
  if (!charsmap.is_string()) fail(at, "expected a base64 string, found " + describe_json(charsmap));
  const auto& text = charsmap.get_ref<const std::string&>();
  if (text.size() / 4 * 3 > kMaxCharsmapBytes)
    fail(at, "is " + std::to_string(text.size()) + " characters of base64, more than the " +
                 std::to_string(kMaxCharsmapBytes) + "-byte charsmap this reader accepts");
  return std::make_unique<Precompiled>(decode_base64(text, at), at);
}

}  // namespace gradcache::hf::detail
