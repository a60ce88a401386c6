// The normalisers, pre-tokenisers and regular expressions of src/hf one at a time, on decisive
// examples whose expected results were taken from Python `tokenizers` 0.23.3 (normalize_str,
// pre_tokenize_str), and their errors: a pattern that does not compile, one that backtracks
// catastrophically, unknown names. The broad comparisons (every code point, tens of thousands of
// texts) are the live tests'; these pin the semantics down without Python.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "gradcache/hf/tokenizer.h"
#include "hf/components.h"
#include "hf/regex.h"
#include "hf/unicode.h"

namespace {

using gradcache::hf::TokenizerError;
using gradcache::hf::detail::Json;
using gradcache::hf::detail::make_normalizer;
using gradcache::hf::detail::make_pre_tokenizer;
using gradcache::hf::detail::Match;
using gradcache::hf::detail::Regex;
using gradcache::hf::detail::Source;
using gradcache::hf::detail::Words;
namespace unicode = gradcache::hf::unicode;

const Source kSource{"test.json", "component"};

std::string normalize(const std::string& config, const std::string& text) {
  auto normalizer = make_normalizer(Json::parse(config), kSource);
  std::u32string chars = unicode::decode_utf8(text);
  normalizer->normalize(chars);
  return unicode::encode_utf8(chars);
}

std::vector<std::string> pre_tokenize(const std::string& config, const std::string& text, bool at_origin = true) {
  auto pre_tokenizer = make_pre_tokenizer(Json::parse(config), kSource);
  Words words;
  pre_tokenizer->split(unicode::decode_utf8(text), at_origin, words);
  std::vector<std::string> out;
  for (size_t i = 0; i < words.size(); ++i) out.push_back(unicode::encode_utf8(words[i]));
  return out;
}

std::string split_config(const std::string& pattern_kind, const std::string& pattern, const std::string& behavior,
                         bool invert = false) {
  Json config = {{"type", "Split"},
                 {"pattern", {{pattern_kind, pattern}}},
                 {"behavior", behavior},
                 {"invert", invert}};
  return config.dump();
}

std::vector<Match> find_all(const std::string& pattern, const std::string& text) {
  Regex regex(pattern, kSource);
  std::vector<Match> matches;
  regex.find_all(unicode::decode_utf8(text), matches);
  return matches;
}

// The message of the TokenizerError that `f` throws ("" when it throws none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "";
}

std::string to_json(const std::string& kind, const std::string& config) {
  if (kind == "normalizer") return make_normalizer(Json::parse(config), kSource)->to_json().dump();
  return make_pre_tokenizer(Json::parse(config), kSource)->to_json().dump();
}

const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kBloom = R"( ?[^(\s|[.,!?…。，、।۔،])]+)";

// ---- regular expressions ------------------------------------------------------------------

// Oniguruma's FindMatches: an empty match right where the last match ended is skipped by moving
// on one character ("x*" over "axb": (0,0), (1,2), then (3,3), not (2,2)): Replace gives "-a-b-".
TEST(HfRegex, EmptyMatchesFollowOniguruma) {
  EXPECT_EQ(find_all("x*", "axb"), (std::vector<Match>{{0, 0}, {1, 2}, {3, 3}}));
  EXPECT_EQ(normalize(R"({"type":"Replace","pattern":{"Regex":"x*"},"content":"-"})", "axb"), "-a-b-");
  EXPECT_EQ(normalize(R"({"type":"Replace","pattern":{"String":""},"content":"X"})", "ab"), "XaXbX");
}

TEST(HfRegex, RealTokenizerPatternsSplitAsOniguruma) {
  EXPECT_EQ(pre_tokenize(split_config("Regex", kGpt2, "Isolated"), "Hello world's  123 !!\u0085x"),
            (std::vector<std::string>{"Hello", " world", "'s", " ", " 123", " !!", "\u0085", "x"}));
  EXPECT_EQ(pre_tokenize(split_config("Regex", kLlama3, "Isolated"), "I'M here: 12345 日本語\r\n\r\n  end"),
            (std::vector<std::string>{"I", "'M", " here", ":", " ", "123", "45", " 日本語", "\r\n\r\n", " ", " end"}));
  // BLOOM's nested class: [^ ( \s | [.,!?…。，、।۔،] ) ] in Oniguruma, a compile error in PCRE2's syntax.
  EXPECT_EQ(pre_tokenize(split_config("Regex", kBloom, "Isolated"), "Hello, world. (test)|x"),
            (std::vector<std::string>{"Hello", ",", " world", ". (", "test", ")|", "x"}));
}

// Oniguruma's \s is White_Space: U+0085 and U+1680 and U+3000 are, U+180E, U+200B, U+FEFF are not.
TEST(HfRegex, WhiteSpaceIsOniguruma) {
  EXPECT_EQ(pre_tokenize(split_config("Regex", R"(\s+)", "Removed"), "a\u0085b\u180e" "c\u200b" "d\ufeff" "e\u1680f\u3000g"),
            (std::vector<std::string>{"a", "b\u180e" "c\u200b" "d\ufeff" "e", "f", "g"}));
  // Ruby's \h is a hexadecimal digit (PCRE2's would be horizontal space).
  EXPECT_EQ(find_all(R"(\h+)", "x 0fA g"), (std::vector<Match>{{2, 5}}));
}

// Oniguruma's tables are Unicode 16.0: Garay (16.0) letters are \p{L}, Beria Erfe (17.0) not yet.
TEST(HfRegex, LettersAreUnicode16) {
  EXPECT_EQ(pre_tokenize(split_config("Regex", R"(\p{L}+)", "Removed", true), "a\U00010D50b \U00016EA0 c"),
            (std::vector<std::string>{"a\U00010D50b", "c"}));
}

TEST(HfRegex, RubySyntax) {
  EXPECT_EQ(find_all(R"(\u0041)", "BA"), (std::vector<Match>{{1, 2}}));
  EXPECT_EQ(find_all(R"(\xe3\x81\x82)", "あ"), (std::vector<Match>{{0, 1}}));   // UTF-8 bytes
  EXPECT_EQ(find_all("a{,2}", "aaa"), (std::vector<Match>{{0, 2}, {2, 3}}));  // {0,2}
  EXPECT_EQ(find_all("a{2}+", "aaaaa"), (std::vector<Match>{{0, 4}}));         // (?:a{2})+, not possessive
  EXPECT_EQ(find_all("(?m).", "a\nb"), (std::vector<Match>{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(find_all(R"(\v)", "\v\n"), (std::vector<Match>{{0, 1}}));
  EXPECT_EQ(find_all("[a-c&&b-d]", "abcd"), (std::vector<Match>{{1, 2}, {2, 3}}));
}

TEST(HfRegex, EscapedLiteralMatchesItself) {
  const std::string literal = "a.b*c(d)[e]{2}|\\^$ #";
  EXPECT_EQ(find_all(gradcache::hf::detail::escape_regex(literal), "xa.b*c(d)[e]{2}|\\^$ #y aXb"),
            (std::vector<Match>{{1, 21}}));
}

TEST(HfRegex, PatternThatDoesNotCompileIsNamed) {
  const std::string message = error_of([] { Regex("(a", kSource); });
  EXPECT_NE(message.find("test.json: component"), std::string::npos) << message;
  EXPECT_NE(message.find("\"(a\""), std::string::npos) << message;
  EXPECT_NE(error_of([] { Regex(R"(\p{NoSuchProperty})", kSource); }).find("NoSuchProperty"), std::string::npos);
  EXPECT_NE(error_of([] { Regex("[a", kSource); }).find("not closed"), std::string::npos);
}

// `tokenizers` panics on this (Oniguruma's retry limit); we stop with an error, quickly.
TEST(HfRegex, CatastrophicBacktrackingIsAnErrorNotAHang) {
  Regex regex("(a+)+$", kSource);
  const std::u32string text = unicode::decode_utf8(std::string(40, 'a') + "b");
  const auto start = std::chrono::steady_clock::now();
  const std::string message = error_of([&] {
    std::vector<Match> matches;
    regex.find_all(text, matches);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(message.find("backtracks too much"), std::string::npos) << message;
  EXPECT_LT(seconds, 10.0);
}

// ---- split behaviours (normalizer.rs's documentation example, and with invert) -----------------

TEST(HfSplitBehavior, EachBehaviorOnDelimiters) {
  const std::string text = "the-final--countdown";
  EXPECT_EQ(pre_tokenize(split_config("String", "-", "Removed"), text),
            (std::vector<std::string>{"the", "final", "countdown"}));
  EXPECT_EQ(pre_tokenize(split_config("String", "-", "Isolated"), text),
            (std::vector<std::string>{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(pre_tokenize(split_config("String", "-", "MergedWithPrevious"), text),
            (std::vector<std::string>{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(pre_tokenize(split_config("String", "-", "MergedWithNext"), text),
            (std::vector<std::string>{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(pre_tokenize(split_config("String", "-", "Contiguous"), text),
            (std::vector<std::string>{"the", "-", "final", "--", "countdown"}));
}

TEST(HfSplitBehavior, InvertAndEmptyMatches) {
  EXPECT_EQ(pre_tokenize(split_config("Regex", R"(\w+)", "MergedWithPrevious", true), "hi, you!"),
            (std::vector<std::string>{"hi, ", "you!"}));
  EXPECT_EQ(pre_tokenize(split_config("Regex", R"(\w+)", "MergedWithNext", true), "hi, you!"),
            (std::vector<std::string>{"hi", ", you", "!"}));
  EXPECT_EQ(pre_tokenize(split_config("Regex", "x*", "MergedWithPrevious"), "axxb"),
            (std::vector<std::string>{"axx", "b"}));
  EXPECT_EQ(pre_tokenize(split_config("Regex", "x*", "MergedWithNext"), "axxb"),
            (std::vector<std::string>{"a", "xxb"}));
}

TEST(HfSplitBehavior, UnknownNamesAreRefused) {
  // serde's names are exact: "isolated" (Python's spelling) is not one.
  const std::string message = error_of([] { pre_tokenize(split_config("String", "-", "isolated"), "a"); });
  EXPECT_NE(message.find("unknown split behavior \"isolated\""), std::string::npos) << message;
  EXPECT_NE(error_of([] { pre_tokenize(R"({"type":"Punctuation","behavior":"Merged"})", "a"); }), "");
  EXPECT_NE(error_of([] { pre_tokenize(R"({"type":"Split","pattern":{"String":"-"},"behavior":"Isolated"})", "a"); })
                .find("invert"),
            std::string::npos);
}

// ---- normalisers ------------------------------------------------------------------------------

TEST(HfNormalizers, UnicodeFormsWithUnicode9Tables) {
  // U+1E030 (Unicode 15.0) has a compatibility decomposition that Unicode 9.0's tables lack.
  EXPECT_EQ(normalize(R"({"type":"NFKC"})", "ﬁ① ｶ\uff9e \U0001E030"), "fi1 ガ \U0001E030");
  EXPECT_EQ(normalize(R"({"type":"NFD"})", "é\uAC00"), "e\u0301\u1100\u1161");
  EXPECT_EQ(normalize(R"({"type":"NFC"})", "e\u0301"), "é");
  EXPECT_EQ(normalize(R"({"type":"NFKD"})", "ﬁé"), "fie\u0301");
}

TEST(HfNormalizers, LowercaseStripPrepend) {
  EXPECT_EQ(normalize(R"({"type":"Lowercase"})", "İΣA\U00016EA0"), "i\u0307σa\U00016EBB");
  EXPECT_EQ(normalize(R"({"type":"Strip","strip_left":true,"strip_right":false})", " \u3000a \t"), "a \t");
  EXPECT_EQ(normalize(R"({"type":"Strip","strip_left":false,"strip_right":true})", " a \u0085"), " a");
  EXPECT_EQ(normalize(R"({"type":"Prepend","prepend":"▁"})", ""), "");
  EXPECT_EQ(normalize(R"({"type":"Prepend","prepend":"▁"})", "a"), "▁a");
}

// StripAccents removes combining marks (any M of Unicode 9.0) and decomposes nothing.
TEST(HfNormalizers, StripAccentsRemovesMarksOnly) {
  EXPECT_EQ(normalize(R"({"type":"StripAccents"})", "e\u0301é\u0903\u1CF2\u20DD"), "eé");
  EXPECT_EQ(normalize(R"({"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"},{"type":"Lowercase"}]})",
                      "Héllo WÖRLD"),
            "hello world");
}

TEST(HfNormalizers, ReplaceEveryMatch) {
  EXPECT_EQ(normalize(R"({"type":"Replace","pattern":{"String":" "},"content":"▁"})", "a b  c"), "a▁b▁▁c");
  EXPECT_EQ(normalize(R"({"type":"Replace","pattern":{"Regex":"\\s+"},"content":" "})", "This     is\t\n a"), "This is a");
  EXPECT_EQ(normalize(R"({"type":"Replace","pattern":{"String":"a.b"},"content":"X"})", "a.b axb"), "X axb");
}

TEST(HfNormalizers, BadFilesAreRefused) {
  EXPECT_NE(error_of([] { normalize(R"({"type":"Strip","strip_left":true})", ""); }).find("strip_right"), std::string::npos);
  EXPECT_NE(error_of([] { normalize(R"({"type":"Replace","pattern":{"String":"a","Regex":"b"},"content":""})", ""); }), "");
  EXPECT_NE(error_of([] { normalize(R"({"type":"Replace","pattern":{"Regex":"(a"},"content":""})", ""); }).find("(a"),
            std::string::npos);
  EXPECT_NE(error_of([] { normalize(R"({"type":"Sequence"})", ""); }).find("normalizers"), std::string::npos);
}

// ---- pre-tokenisers ---------------------------------------------------------------------------

TEST(HfPreTokenizers, WhitespaceAndWhitespaceSplit) {
  // The regex crate's \w: ² is not a word character, _ is.
  EXPECT_EQ(pre_tokenize(R"({"type":"Whitespace"})", "Hey friend!  How are you?!? x²_y ½"),
            (std::vector<std::string>{"Hey", "friend", "!", "How", "are", "you", "?!?", "x", "²", "_y", "½"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"WhitespaceSplit"})", "Hey\u00a0friend!\u2003 How"),
            (std::vector<std::string>{"Hey", "friend!", "How"}));
}

TEST(HfPreTokenizers, PunctuationAndDigits) {
  EXPECT_EQ(pre_tokenize(R"({"type":"Punctuation"})", "Hey, friend!? ¡Ho—la!"),
            (std::vector<std::string>{"Hey", ",", " friend", "!", "?", " ", "¡", "Ho", "—", "la", "!"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"Punctuation","behavior":"Contiguous"})", "Hey, friend!? ¡Ho—la!"),
            (std::vector<std::string>{"Hey", ",", " friend", "!?", " ", "¡", "Ho", "—", "la", "!"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"Digits","individual_digits":true})", "a123b٣٤Ⅻ½"),
            (std::vector<std::string>{"a", "1", "2", "3", "b", "٣", "٤", "Ⅻ", "½"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"Digits","individual_digits":false})", "a123b٣٤Ⅻ½"),
            (std::vector<std::string>{"a", "123", "b", "٣٤Ⅻ½"}));
}

TEST(HfPreTokenizers, Metaspace) {
  const char* always = R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true})";
  EXPECT_EQ(pre_tokenize(always, "Hey  friend"), (std::vector<std::string>{"▁Hey", "▁", "▁friend"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":true})", "Hey friend"),
            (std::vector<std::string>{"Hey", "▁friend"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":false})", "Hey friend"),
            (std::vector<std::string>{"▁Hey▁friend"}));
  // "first": only the text that begins where the original text begins.
  const char* first = R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true})";
  EXPECT_EQ(pre_tokenize(first, "Hey", /*at_origin=*/true), (std::vector<std::string>{"▁Hey"}));
  EXPECT_EQ(pre_tokenize(first, "Hey", /*at_origin=*/false), (std::vector<std::string>{"Hey"}));
  EXPECT_EQ(pre_tokenize(std::string(R"({"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},)") + first + "]}",
                         "Hey my friend"),
            (std::vector<std::string>{"▁Hey", "my", "friend"}));
}

// Files from before prepend_scheme: add_prefix_space true changes nothing; false means "never"
// and contradicts any other scheme, the default "always" included (as `tokenizers` refuses).
TEST(HfPreTokenizers, MetaspaceLegacyFields) {
  EXPECT_EQ(to_json("pre_tokenizer", R"({"type":"Metaspace","replacement":"▁","add_prefix_space":true,"str_rep":"▁"})"),
            R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true})");
  EXPECT_EQ(to_json("pre_tokenizer",
                    R"({"type":"Metaspace","replacement":"▁","add_prefix_space":false,"prepend_scheme":"never"})"),
            R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":true})");
  EXPECT_NE(error_of([] { to_json("pre_tokenizer", R"({"type":"Metaspace","replacement":"▁","add_prefix_space":false})"); })
                .find("add_prefix_space"),
            std::string::npos);
  EXPECT_NE(error_of([] { to_json("pre_tokenizer", R"({"type":"Metaspace","replacement":"▁▁"})"); }), "");
  EXPECT_NE(error_of([] { to_json("pre_tokenizer", R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"First"})"); }),
            "");
}

TEST(HfPreTokenizers, SequenceRunsEachOverTheWordsOfTheLast) {
  EXPECT_EQ(pre_tokenize(R"({"type":"Sequence","pretokenizers":[{"type":"Punctuation"},{"type":"Digits","individual_digits":true}]})",
                         "a1,b22"),
            (std::vector<std::string>{"a", "1", ",", "b", "2", "2"}));
  EXPECT_NE(error_of([] { pre_tokenize(R"({"type":"Sequence","pre_tokenizers":[]})", "a"); }).find("pretokenizers"),
            std::string::npos);
}

// ---- serialisation: the keys and their order as `tokenizers` writes them ------------------------

TEST(HfComponents, ToJsonAsTokenizersWritesIt) {
  for (const char* config : {R"({"type":"NFKC"})", R"({"type":"Lowercase"})", R"({"type":"StripAccents"})",
                             R"({"type":"Strip","strip_left":true,"strip_right":false})",
                             R"({"type":"Replace","pattern":{"Regex":"\\s+"},"content":" "})",
                             R"({"type":"Prepend","prepend":"▁"})",
                             R"({"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Lowercase"}]})"})
    EXPECT_EQ(to_json("normalizer", config), config);
  for (const char* config :
       {R"({"type":"Split","pattern":{"String":" "},"behavior":"MergedWithPrevious","invert":true})",
        R"({"type":"Whitespace"})", R"({"type":"WhitespaceSplit"})", R"({"type":"Punctuation","behavior":"Isolated"})",
        R"({"type":"Digits","individual_digits":false})",
        R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":false})",
        R"({"type":"Sequence","pretokenizers":[{"type":"Whitespace"}]})"})
    EXPECT_EQ(to_json("pre_tokenizer", config), config);
  // Written in another order, or with defaults left out, a file comes back in `tokenizers`' form.
  EXPECT_EQ(to_json("pre_tokenizer", R"({"invert":false,"behavior":"Removed","type":"Split","pattern":{"Regex":"a"}})"),
            R"({"type":"Split","pattern":{"Regex":"a"},"behavior":"Removed","invert":false})");
  EXPECT_EQ(to_json("pre_tokenizer", R"({"type":"Punctuation"})"), R"({"type":"Punctuation","behavior":"Isolated"})");
}

// ---- where the normalised text begins: Metaspace's prepend_scheme "first" -----------------------

// How many leading characters of the normalised text `tokenizers` still aligns with the start of
// the original text (its NormalizedString alignments; tokens' offsets in Python show them).
size_t normalized_at_origin(const std::string& config, const std::string& text) {
  auto normalizer = make_normalizer(Json::parse(config), kSource);
  std::u32string chars = unicode::decode_utf8(text);
  return normalizer->normalize(chars, 1);
}

TEST(HfNormalizers, SayWhichCharactersKeepTheStart) {
  const char* strip = R"({"type":"Strip","strip_left":true,"strip_right":true})";
  EXPECT_EQ(normalized_at_origin(strip, "  hi"), 0u);  // the start went with the spaces
  EXPECT_EQ(normalized_at_origin(strip, "hi "), 1u);
  // Expansions of the first character all keep it; NFD's reordering moves the mark of the
  // second character before the first's.
  EXPECT_EQ(normalized_at_origin(R"({"type":"NFKC"})", "ﬁx"), 2u);
  EXPECT_EQ(normalized_at_origin(R"({"type":"NFKC"})", "½x"), 3u);
  EXPECT_EQ(normalized_at_origin(R"({"type":"NFD"})", "éx"), 2u);
  EXPECT_EQ(normalized_at_origin(R"({"type":"NFD"})", "é\u0323x"), 1u);
  EXPECT_EQ(normalized_at_origin(R"({"type":"Lowercase"})", "İa"), 2u);
  // A replaced match is aligned with its last character; an empty match at 0 with the start.
  EXPECT_EQ(normalized_at_origin(R"({"type":"Replace","pattern":{"String":"ab"},"content":"X"})", "abc"), 0u);
  EXPECT_EQ(normalized_at_origin(R"({"type":"Replace","pattern":{"String":"ab"},"content":"X"})", "aab"), 1u);
  EXPECT_EQ(normalized_at_origin(R"({"type":"Replace","pattern":{"Regex":"x*"},"content":"-"})", "abc"), 3u);
  EXPECT_EQ(normalized_at_origin(R"({"type":"Replace","pattern":{"Regex":"x*"},"content":"-"})", "xxa"), 0u);
  // Prepend aligns the string with the first character; an empty one puts that at the start.
  const std::string strip_then = std::string(R"({"type":"Sequence","normalizers":[)") + strip + ",";
  EXPECT_EQ(normalized_at_origin(strip_then + R"({"type":"Prepend","prepend":"▁"}]})", "hi"), 2u);
  EXPECT_EQ(normalized_at_origin(strip_then + R"({"type":"Prepend","prepend":""}]})", "  hi"), 1u);
  const char* bert =
      R"({"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true})";
  EXPECT_EQ(normalized_at_origin(bert, "\001ab"), 0u);  // clean_text drops the control character
  EXPECT_EQ(normalized_at_origin(bert, "中a"), 3u);     // " 中 ": the spaces are aligned with it
}

// A text whose first characters the normaliser drops does not begin where the original does, so
// "first" prepends nothing; a piece after an added token that cuts an expansion of the first
// character does (ids from `tokenizers` 0.23.3).
TEST(HfPreTokenizers, MetaspaceFirstFollowsTheNormalizedStart) {
  const auto tokenizer = [](const std::string& normalizer, const std::string& added) {
    return gradcache::hf::Tokenizer::from_json(
        R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":[)" + added + R"(],"normalizer":)" +
            normalizer +
            R"(,"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true},)"
            R"("post_processor":null,"decoder":null,"model":{"type":"WordPiece","unk_token":"[UNK]",)"
            R"("continuing_subword_prefix":"##","max_input_chars_per_word":100,"vocab":{"[UNK]":0,"▁hi":1,"hi":2,)"
            R"("▁":3,"##i":4,"i":5,"ix":6,"▁ix":7,"x":8,"##x":9}}})",
        "test.json");
  };
  const auto strip = tokenizer(R"({"type":"Strip","strip_left":true,"strip_right":true})", "");
  EXPECT_EQ(strip.encode("hi"), (std::vector<int64_t>{1}));
  EXPECT_EQ(strip.encode("  hi"), (std::vector<int64_t>{2}));
  EXPECT_EQ(strip.encode("hi  "), (std::vector<int64_t>{1}));
  EXPECT_EQ(strip.encode("\thi hi"), (std::vector<int64_t>{2, 1}));
  const auto nfkc = tokenizer(
      R"({"type":"NFKC"})",
      R"({"id":10,"content":"f","single_word":false,"lstrip":false,"rstrip":false,"normalized":true,"special":false})");
  EXPECT_EQ(nfkc.encode("ﬁx"), (std::vector<int64_t>{10, 7}));  // "f" + "ix", "i" still aligned with "ﬁ"
  EXPECT_EQ(nfkc.encode("fix"), (std::vector<int64_t>{10, 6}));
}

}  // namespace
