// Extended grapheme clusters (grapheme_clusters.h).
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
#include "hf/grapheme_clusters.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace gradcache::hf::detail {
namespace {

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
}  // namespace

size_t grapheme_cluster_end(std::u32string_view text, size_t begin) {
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

}  // namespace gradcache::hf::detail
