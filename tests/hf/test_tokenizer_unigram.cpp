// Unigram (SentencePiece's Viterbi) and the Precompiled normaliser (SentencePiece's charsmap) on
// inputs small enough to work the answers out by hand (each checked against `tokenizers` 0.23):
// the best cut and how ties fall, unknown characters fused, byte fallback, scores read as
// serde_json reads them, a hand-made charsmap and its grapheme-cluster walk; then vocabularies and
// charsmaps that lie, which must be refused with a message, never crash.
#include <cstring>

#include "hf/components.h"
#include "hf/unicode.h"
#include "hf_test_util.h"

using gradcache::hf::Tokenizer;
using hf_test::contains;
using hf_test::error_of;
using Ids = std::vector<int64_t>;
using nlohmann::json;

namespace {

// A tokenizer.json with only a Unigram model (and a normaliser if given): each text is one word.
json unigram(const json& vocab, const json& unk_id = 0, bool byte_fallback = false, const json& normalizer = nullptr) {
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", json::array()},
          {"normalizer", normalizer},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          {"model", {{"type", "Unigram"}, {"unk_id", unk_id}, {"vocab", vocab}, {"byte_fallback", byte_fallback}}}};
}

Ids encode(const json& tokenizer, const std::string& text) {
  return Tokenizer::from_json(tokenizer.dump(), "test/tokenizer.json").encode(text);
}

std::string load_error(const json& tokenizer) {
  return error_of([&] { Tokenizer::from_json(tokenizer.dump(), "bad/tokenizer.json"); });
}

// models/unigram/model.rs's test_encode2 vocabulary.
const json kPieces = json::parse(R"([["<unk>", 0.0], ["ab", 0.0], ["cd", -0.1], ["abc", -0.2], ["a", -0.3],
  ["b", -0.4], ["c", -0.5], ["ABC", -0.5], ["abcdabcd", 20.0], ["q", 20.5], ["r", 20.5], ["qr", -0.5]])");

TEST(Unigram, BestCut) {
  const json t = unigram(kPieces);
  EXPECT_EQ(encode(t, "abc"), (Ids{3}));
  EXPECT_EQ(encode(t, "abcd"), (Ids{1, 2}));  // ab cd (-0.1) beats abc + unknown d
  EXPECT_EQ(encode(t, "abcc"), (Ids{3, 6}));
  EXPECT_EQ(encode(t, "ABC"), (Ids{7}));
  EXPECT_EQ(encode(t, "abABCcd"), (Ids{1, 7, 2}));
  EXPECT_EQ(encode(t, "ababcdabcdcd"), (Ids{1, 8, 2}));
  EXPECT_EQ(encode(t, "abqrcd"), (Ids{1, 9, 10, 2}));  // q r (41) beats qr (-0.5)
  // model.rs's doc example: abcd (10) a cd (1) and the unknown "xx" as one piece.
  const json doc = json::parse(R"([["<unk>", 0.0], ["a", 0.0], ["b", 0.0], ["c", 0.0], ["d", 0.0], ["cd", 1.0],
    ["ab", 2.0], ["abc", 5.0], ["abcd", 10.0]])");
  EXPECT_EQ(encode(unigram(doc), "abcdacdxx"), (Ids{8, 1, 5, 0}));
}

TEST(Unigram, UnknownCharactersAreFused) {
  const json t = unigram(kPieces);
  EXPECT_EQ(encode(t, "AB"), (Ids{0}));
  EXPECT_EQ(encode(t, "xyz東京"), (Ids{0}));
  EXPECT_EQ(encode(t, "xabcabaabcdd"), (Ids{0, 3, 1, 4, 1, 2, 0}));
  // The unknown piece's own text counts as unknown too: "x" + "<unk>" fuse into "x<unk>",
  // which is no piece, so the whole is unk_id.
  EXPECT_EQ(encode(unigram(json::parse(R"([["<unk>", 0.0], ["a", -1.0]])"), 0, true), "x<unk>a"), (Ids{0, 1}));
}

TEST(Unigram, TiesKeepTheFirstPathToReachAPosition) {
  // ab ties a+b, abc ties a+bc and ab+c. Positions are reached from the leftmost start first,
  // and a later path must score strictly more.
  const json t = unigram(json::parse(R"([["<unk>", 0.0], ["a", -1.0], ["b", -1.0], ["c", -1.0], ["ab", -2.0],
    ["bc", -2.0]])"));
  EXPECT_EQ(encode(t, "ab"), (Ids{4}));
  EXPECT_EQ(encode(t, "abc"), (Ids{1, 5}));
}

TEST(Unigram, ScoresAreReadAsSerdeJsonReadsThem) {
  // serde_json reads -15.774467468261719 as -15.77446746826172 (one unit in the last place
  // off), which ties "ab" with "a" + "b": tokenizers keeps "ab". Read exactly, "a" + "b" wins.
  const std::string file =
      unigram(json::parse(R"([["<unk>", 0.0], ["a", -15.774467468261719], ["b", 0.0], ["ab", -15.77446746826172]])"))
          .dump();
  EXPECT_NE(file.find("-15.774467468261719"), std::string::npos);  // the text tokenizers reads
  EXPECT_EQ(Tokenizer::from_json(file, "test/tokenizer.json").encode("ab"), (Ids{3}));
  // and written back as tokenizers writes it
  const json written = json::parse(Tokenizer::from_json(file, "test/tokenizer.json").to_json());
  EXPECT_EQ(written["model"]["vocab"][1][1].get<double>(), -15.77446746826172);
  EXPECT_EQ(written["model"]["vocab"][3][1].get<double>(), -15.77446746826172);
}

TEST(Unigram, ByteFallback) {
  // model.rs's test_unigram_bytefallback: é is <0xC3> <0xA9>; "?é" is one fused unknown string,
  // and <0x3F> is missing, so all of it is unk_id.
  const json t = unigram(json::parse(R"([["<unk>", 0.0], ["<0xC3>", -0.01], ["<0xA9>", -0.03]])"), 0, true);
  EXPECT_EQ(encode(t, "é"), (Ids{1, 2}));
  EXPECT_EQ(encode(t, "?é"), (Ids{0}));
  const json without = unigram(json::parse(R"([["<unk>", 0.0], ["<0xC3>", -0.01], ["<0xA9>", -0.03]])"), 0, false);
  EXPECT_EQ(encode(without, "é"), (Ids{0}));
  // ⅐ (E2 85 90) has no piece: its bytes' pieces; ⅛ is a piece.
  const json spm = unigram(json::parse(R"([["<unk>", 0.0], ["▁", -1.0], ["<0xE2>", -2.0], ["<0x85>", -2.0],
    ["<0x90>", -2.0], ["⅛", -1.5]])"),
                           0, true);
  EXPECT_EQ(encode(spm, "▁⅐⅛"), (Ids{1, 2, 3, 4, 5}));
}

TEST(Unigram, RepeatedPieceAnswersWithItsLastId) {
  // tokenizers' token_to_ids keeps the last id of a piece; the cut uses that id's score.
  const json t = unigram(json::parse(R"([["<unk>", 0.0], ["a", -1.0], ["a", -2.0], ["b", -1.0]])"));
  EXPECT_EQ(encode(t, "ab"), (Ids{2, 3}));
  EXPECT_EQ(Tokenizer::from_json(t.dump(), "t").token_to_id("a"), 2);
}

TEST(Unigram, NoUnkIdFailsOnlyWhereTokenizersDoes) {
  const json t = unigram(json::parse(R"([["xb", 0.0], ["x", 0.0]])"), nullptr);
  // 'b' alone is no piece, but "xb" reaches past it with a better score: no unknown needed.
  EXPECT_EQ(encode(t, "xb"), (Ids{0}));
  const std::string error = error_of([&] { encode(t, "xy"); });
  EXPECT_TRUE(contains(error, "U+0079"));
  EXPECT_TRUE(contains(error, "no unk_id"));
  EXPECT_EQ(Tokenizer::from_json(t.dump(), "t").unk_id(), -1);
}

TEST(Unigram, ToJsonReadsBack) {
  const json t = unigram(kPieces, 0, true);
  const Tokenizer a = Tokenizer::from_json(t.dump(), "t");
  const json written = json::parse(a.to_json());
  EXPECT_EQ(written["model"]["type"], "Unigram");
  EXPECT_EQ(written["model"]["unk_id"], 0);
  EXPECT_EQ(written["model"]["byte_fallback"], true);
  EXPECT_EQ(written["model"]["vocab"], kPieces);
  EXPECT_EQ(Tokenizer::from_json(a.to_json(), "t").encode("xabcabaabcdd"), (Ids{0, 3, 1, 4, 1, 2, 0}));
}

TEST(Unigram, RefusesBrokenVocabularies) {
  EXPECT_TRUE(contains(load_error(unigram(json::array())), "empty"));
  EXPECT_TRUE(contains(load_error(unigram(json::array(), nullptr)), "empty"));
  EXPECT_TRUE(contains(load_error(unigram(kPieces, 12)), "out of range"));
  EXPECT_TRUE(contains(load_error(unigram(kPieces, -1)), "non-negative"));
  EXPECT_TRUE(contains(load_error(unigram(kPieces, 0.0)), "non-negative integer"));
  EXPECT_TRUE(contains(load_error(unigram(json::object())), "array"));
  EXPECT_TRUE(contains(load_error(unigram(json::parse(R"([["a", 0.0, 1]])"))), "pair"));
  EXPECT_TRUE(contains(load_error(unigram(json::parse(R"([["a", "0.5"]])"))), "pair"));
  EXPECT_TRUE(contains(load_error(unigram(json::parse(R"([[1, 0.5]])"))), "pair"));
  EXPECT_TRUE(contains(load_error(unigram(json::parse(R"(["a"])"))), "pair"));
  EXPECT_TRUE(contains(load_error(unigram(json::parse(R"([["a", null]])"))), "pair"));
  // A score past a double (serde_json refuses it as out of range too).
  std::string huge = unigram(json::parse(R"([["<unk>", 0.0], ["a", -1.0]])")).dump();
  huge.replace(huge.find("-1.0"), 4, "-1e400");
  EXPECT_NE(error_of([&] { Tokenizer::from_json(huge, "bad"); }), "");
  json no_vocab = unigram(kPieces);
  no_vocab["model"].erase("vocab");
  EXPECT_TRUE(contains(load_error(no_vocab), "vocab"));
  json null_fallback = unigram(kPieces);
  null_fallback["model"]["byte_fallback"] = nullptr;
  EXPECT_TRUE(contains(load_error(null_fallback), "byte_fallback"));
}

// ---- Precompiled ----------------------------------------------------------------------------------

std::string base64(const std::string& bytes) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = 0;
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    for (size_t k = 0; k < 3; ++k) group = (group << 8) | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out.push_back(k <= n ? kAlphabet[(group >> (18 - 6 * k)) & 63] : '=');
  }
  return out;
}

void put_u32(std::string& out, uint32_t value) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>((value >> (8 * k)) & 0xFF));
}

// [trie size][units][replacements], with the size field given or the true one.
std::string charsmap(const std::vector<uint32_t>& units, const std::string& replacements, int64_t size = -1) {
  std::string blob;
  put_u32(blob, size >= 0 ? static_cast<uint32_t>(size) : static_cast<uint32_t>(4 * units.size()));
  for (const uint32_t unit : units) put_u32(blob, unit);
  return blob + replacements;
}

json precompiled(const std::string& base64_charsmap) {
  return {{"type", "Precompiled"}, {"precompiled_charsmap", base64_charsmap}};
}

// A darts-clone double array by hand, with one key: "a" -> "b". The root (unit 0) has offset
// 256, so its base is 256 and byte 'a' leads to unit 256 ^ 0x61 = 353, labelled 'a' with a leaf
// and offset 77: the value is unit 353 ^ 77 = 300, 0, where the replacement "b" begins.
std::vector<uint32_t> one_key_units() {
  std::vector<uint32_t> units(512, 0);
  units[0] = 256u << 10;
  units[256 ^ 0x61] = (77u << 10) | (1u << 8) | 0x61;
  units[300] = 0;
  return units;
}

// A charsmap with the given keys (UTF-8) and replacements, built the simplest darts-clone way:
// every node has a 256-unit block of its own, its base the block's start, so byte c leads to
// base + c, and a leaf's value sits at the child's base.
std::string charsmap_of(const std::vector<std::pair<std::string, std::string>>& rules) {
  std::vector<uint32_t> units(256, 0);
  std::string replacements;
  const auto new_block = [&] {
    units.resize(units.size() + 256, 0);
    return static_cast<uint32_t>(units.size() - 256);
  };
  const uint32_t root = new_block();
  units[0] = root << 10;
  for (const auto& [key, replacement] : rules) {
    uint32_t base = root;
    for (size_t i = 0; i < key.size(); ++i) {
      const auto byte = static_cast<uint8_t>(key[i]);
      const uint32_t position = base + byte;
      if ((units[position] & 0xFF) != byte) units[position] = ((position ^ new_block()) << 10) | byte;
      base = position ^ (units[position] >> 10);
      if (i + 1 == key.size()) {
        units[position] |= 1u << 8;
        units[base] = static_cast<uint32_t>(replacements.size());
      }
    }
    replacements += replacement + std::string(1, '\0');
  }
  return charsmap(units, replacements);
}

std::string normalized(const std::string& blob, const std::string& text) {
  const auto normalizer =
      gradcache::hf::detail::precompiled_from_json(precompiled(base64(blob)), {"test", "normalizer"});
  std::u32string chars = gradcache::hf::unicode::decode_utf8(text);
  normalizer->normalize(chars);
  return gradcache::hf::unicode::encode_utf8(chars);
}

json with_charsmap(const std::string& blob) {
  return unigram(json::parse(R"([["<unk>", 0.0], ["b", -1.0], ["x", -1.0]])"), 0, false, precompiled(base64(blob)));
}

TEST(Precompiled, ReplacesClustersWholeOrCharacterByCharacter) {
  const std::string map = charsmap(one_key_units(), std::string("b\0", 2));
  EXPECT_EQ(normalized(map, "xa"), "xb");
  // "á" decomposed is one cluster of 3 bytes, replaced whole: the accent goes with the "a".
  EXPECT_EQ(normalized(map, "xa\u0301a"), "xbb");
  // A cluster of 6 bytes or more goes character by character: the accents stay.
  EXPECT_EQ(normalized(map, "a\u0301\u0301\u0301"), "b\u0301\u0301\u0301");
  // "a" + ZWJ is a cluster (4 bytes); the emoji after it is not (no pictograph before the ZWJ).
  EXPECT_EQ(normalized(map, "a\u200d\U0001F44D"), "b\U0001F44D");
  EXPECT_EQ(normalized(map, "A\u00e1"), "A\u00e1");
  // Through a tokenizer: x b b.
  const json t = with_charsmap(map);
  EXPECT_EQ(encode(t, "xa\u0301a"), (Ids{2, 1, 1}));
  // Written back with its padding, as tokenizers writes it; the padding may be left out.
  EXPECT_EQ(json::parse(Tokenizer::from_json(t.dump(), "t").to_json())["normalizer"], t["normalizer"]);
  std::string unpadded = t["normalizer"]["precompiled_charsmap"];
  while (unpadded.back() == '=') unpadded.pop_back();
  json t2 = t;
  t2["normalizer"]["precompiled_charsmap"] = unpadded;
  EXPECT_EQ(encode(t2, "xa\u0301a"), (Ids{2, 1, 1}));
}

TEST(Precompiled, TheShortestKeyReplacesTheWholeCluster) {
  // SentencePiece's own rules would take the longest key; tokenizers takes the first it meets.
  const std::string map = charsmap_of({{"a", "X"}, {"a\u0301", "Y"}, {"b", ""}, {"\r", "C"}});
  EXPECT_EQ(normalized(map, "a\u0301"), "X");
  EXPECT_EQ(normalized(map, "ab\u0301c"), "Xc");  // "b" + accent is a cluster, replaced by ""
  EXPECT_EQ(normalized(map, "\r\n"), "C");        // CR LF is one cluster
  EXPECT_EQ(normalized(map, std::string("\0a", 2)), std::string("\0X", 2));  // a NUL ends the key: no key
}

TEST(Precompiled, IndicConjunctsAreOneCluster) {
  // GB9c (Unicode 15.1; Unicode 17.0's scripts): consonant + virama + consonant is one cluster,
  // 9 bytes or more, so it goes character by character and the accent after the last
  // consonant stays. Alone, the consonant and the accent are a 5-byte cluster replaced whole.
  const std::string map = charsmap_of({{"\u0958", "W"}, {"\u1000", "Y"}});
  EXPECT_EQ(normalized(map, "\u0958\u0301"), "W");
  EXPECT_EQ(normalized(map, "\u0915\u094d\u0958\u0301"), "\u0915\u094dW\u0301");
  EXPECT_EQ(normalized(map, "\u0915\u094d\u200d\u0958\u0301"), "\u0915\u094d\u200dW\u0301");  // ZWJ extends
  EXPECT_EQ(normalized(map, "\u0915\u094d\u200c\u0958\u0301"), "\u0915\u094d\u200cW");        // ZWNJ breaks
  EXPECT_EQ(normalized(map, "\u1000\u1039\u1000\u0301"), "Y\u1039Y\u0301");                   // Myanmar (Unicode 17.0)
}

std::string charsmap_error(const std::string& base64_charsmap) {
  return load_error(unigram(json::parse(R"([["<unk>", 0.0]])"), 0, false, precompiled(base64_charsmap)));
}

TEST(Precompiled, RefusesBadBase64) {
  EXPECT_TRUE(contains(charsmap_error(""), "too few"));  // tokenizers: "Cannot parse precompiled_charsmap"
  EXPECT_TRUE(contains(charsmap_error("AAAA@AAA"), "not base64"));
  EXPECT_TRUE(contains(charsmap_error("AAAAA"), "not base64"));      // a 6-bit remainder
  EXPECT_TRUE(contains(charsmap_error("AAAAAA==="), "not base64"));  // too much padding
  EXPECT_TRUE(contains(charsmap_error("AA=AAAAA"), "not base64"));   // padding inside
  EXPECT_TRUE(contains(charsmap_error("AAAAAR=="), "bits"));         // the last symbol's spare bits set
  json null_map = unigram(json::parse(R"([["<unk>", 0.0]])"), 0, false, precompiled(""));
  null_map["normalizer"]["precompiled_charsmap"] = nullptr;
  EXPECT_TRUE(contains(load_error(null_map), "base64 string"));
  null_map["normalizer"].erase("precompiled_charsmap");
  EXPECT_TRUE(contains(load_error(null_map), "precompiled_charsmap"));
}

TEST(Precompiled, RefusesCharsmapsThatLie) {
  const std::string good = std::string("b\0", 2);
  const auto error = [](const std::string& blob) { return charsmap_error(base64(blob)); };
  EXPECT_EQ(error(charsmap(one_key_units(), good)), "");
  EXPECT_TRUE(contains(error(std::string("\x10\x00\x00", 3)), "too few"));
  EXPECT_TRUE(contains(error(charsmap(one_key_units(), good, 4 * 512 + 8)), "only"));  // size past the data
  EXPECT_TRUE(contains(error(charsmap(one_key_units(), good, 4 * 511 + 2)), "4-byte"));
  EXPECT_TRUE(contains(error(charsmap({}, good)), "empty"));
  EXPECT_TRUE(contains(error(charsmap(one_key_units(), "\xff")), "UTF-8"));
  // Truncated: the trie is whole but a byte from the root leads past its end.
  std::vector<uint32_t> truncated = one_key_units();
  truncated.resize(300);
  EXPECT_TRUE(contains(error(charsmap(truncated, good)), "past the"));
  EXPECT_TRUE(contains(error(charsmap({0}, good)), "past the"));  // 1 unit: tokenizers panics on any text
  // The root's base far outside the array.
  std::vector<uint32_t> far = one_key_units();
  far[0] = 0x3FFFFFu << 10;
  EXPECT_TRUE(contains(error(charsmap(far, good)), "past the"));
  // The key's value unit outside the array (offset moves the child to 353 ^ 4000).
  std::vector<uint32_t> value_outside = one_key_units();
  value_outside[353] = (4000u << 10) | (1u << 8) | 0x61;
  EXPECT_TRUE(contains(error(charsmap(value_outside, good)), "past the"));
  // A replacement starting past the replacements, or inside a character.
  std::vector<uint32_t> value_past = one_key_units();
  value_past[300] = 1000;
  EXPECT_TRUE(contains(error(charsmap(value_past, good)), "past the 2 bytes"));
  std::vector<uint32_t> value_inside = one_key_units();
  value_inside[300] = 1;
  EXPECT_TRUE(contains(error(charsmap(value_inside, "\xc3\xa9")), "inside a character"));
  // A trie whose child points back at the root (a cycle) is walked once and is fine.
  std::vector<uint32_t> cycle = one_key_units();
  cycle[353] = ((353u ^ 256u) << 10) | 0x61;  // no leaf; the child's base is the root's
  EXPECT_EQ(error(charsmap(cycle, good)), "");
  EXPECT_EQ(encode(with_charsmap(charsmap(cycle, good)), "aaa"), (Ids{0}));
}

}  // namespace
