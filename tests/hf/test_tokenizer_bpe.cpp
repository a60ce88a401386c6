// BPE, ByteLevel and the post-processors around them, on vocabularies small enough to work the
// answers out by hand (the 100,000-line comparisons with `tokenizers` are TokenizerKinds.*):
// merge order, unknown characters, byte fallback, the subword prefix and suffix, ignore_merges,
// the byte alphabet, RobertaProcessing and Sequence, truncation and padding sides, and the files
// refused.
#include <filesystem>
#include <fstream>

#include "hf_test_util.h"

using gradcache::hf::Side;
using gradcache::hf::Tokenizer;
using hf_test::contains;
using hf_test::error_of;
using Ids = std::vector<int64_t>;

namespace {

namespace fs = std::filesystem;

// A BPE tokenizer.json: the vocabulary in id order, the merges in rank order, WhitespaceSplit-free
// (BertPreTokenizer cuts at spaces and punctuation), no post-processor unless one is given.
using Merges = std::vector<std::pair<std::string, std::string>>;

nlohmann::json merges_json(const Merges& merges) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [left, right] : merges) list.push_back(nlohmann::json::array({left, right}));
  return list;
}

nlohmann::json bpe(const std::vector<std::string>& tokens, const nlohmann::json& merges,
                   const nlohmann::json& options = nlohmann::json::object()) {
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = id;
  nlohmann::json model = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                          {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                          {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
                          {"vocab", vocab}, {"merges", merges}};
  for (const auto& [key, value] : options.items()) model[key] = value;
  return {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", nlohmann::json::array()},
          {"normalizer", nullptr}, {"pre_tokenizer", {{"type", "BertPreTokenizer"}}}, {"post_processor", nullptr},
          {"decoder", nullptr}, {"model", model}};
}

Ids encode(const nlohmann::json& json, const std::string& text) {
  return Tokenizer::from_json(json.dump(), "test/tokenizer.json").encode(text);
}

std::string error_of_json(const nlohmann::json& json) {
  return error_of([&] { Tokenizer::from_json(json.dump(), "bad/tokenizer.json"); });
}

TEST(Bpe, MergesByRankThenLeftmost) {
  // "b c" outranks "a b": abcd -> a bc d, and then neither "a b" nor "c d" is there any more.
  const auto tokens = std::vector<std::string>{"a", "b", "c", "d", "bc", "ab", "cd"};
  EXPECT_EQ(encode(bpe(tokens, merges_json({{"b", "c"}, {"a", "b"}, {"c", "d"}})), "abcd"), (Ids{0, 4, 3}));
  EXPECT_EQ(encode(bpe(tokens, merges_json({{"a", "b"}, {"c", "d"}, {"b", "c"}})), "abcd"), (Ids{5, 6}));
  // Equal ranks (the same pair twice in a word): the leftmost merges first.
  EXPECT_EQ(encode(bpe({"a", "aa"}, merges_json({{"a", "a"}})), "aaa"), (Ids{1, 0}));
  // The older merges form, "left right" strings, means the same.
  EXPECT_EQ(encode(bpe(tokens, nlohmann::json::array({"b c", "a b", "c d"})), "abcd"), (Ids{0, 4, 3}));
}

TEST(Bpe, UnknownCharacters) {
  const std::vector<std::string> tokens{"<unk>", "x", "y"};
  const nlohmann::json merges = nlohmann::json::array();
  // Without an unknown token `tokenizers` drops the character.
  EXPECT_EQ(encode(bpe(tokens, merges), "xzzy"), (Ids{1, 2}));
  EXPECT_EQ(encode(bpe(tokens, merges, {{"unk_token", "<unk>"}}), "xzzy"), (Ids{1, 0, 0, 2}));
  EXPECT_EQ(encode(bpe(tokens, merges, {{"unk_token", "<unk>"}, {"fuse_unk", true}}), "xzzy"), (Ids{1, 0, 2}));
}

TEST(Bpe, ByteFallbackSpellsUnknownCharactersInBytes) {
  std::vector<std::string> tokens{"<unk>", "h"};
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    tokens.push_back(name);
  }
  const auto json = bpe(tokens, nlohmann::json::array(), {{"unk_token", "<unk>"}, {"byte_fallback", true}});
  // é is C3 A9: the tokens <0xC3> and <0xA9>, ids 2 + 0xC3 and 2 + 0xA9.
  EXPECT_EQ(encode(json, "hé"), (Ids{1, 2 + 0xC3, 2 + 0xA9}));
}

TEST(Bpe, ContinuingPrefixAndEndOfWordSuffix) {
  // With "##", every symbol but a word's first is looked up with the prefix, and a merge of
  // "a" and "##b" is "ab".
  EXPECT_EQ(encode(bpe({"a", "##b", "ab"}, merges_json({{"a", "##b"}}), {{"continuing_subword_prefix", "##"}}), "ab ba"),
            (Ids{2}));  // "ba": b is "b" at a word's start, not in the vocabulary, and dropped; "##a" neither
  EXPECT_EQ(encode(bpe({"a", "b</w>", "ab</w>"}, merges_json({{"a", "b</w>"}}), {{"end_of_word_suffix", "</w>"}}), "ab"), (Ids{2}));
}

TEST(Bpe, IgnoreMergesTakesAWordThatIsAToken) {
  // "abc" is a token, but no merge reaches it: only ignore_merges (Llama-3's) gives it.
  const std::vector<std::string> tokens{"a", "b", "c", "ab", "abc"};
  EXPECT_EQ(encode(bpe(tokens, merges_json({{"a", "b"}})), "abc"), (Ids{3, 2}));
  EXPECT_EQ(encode(bpe(tokens, merges_json({{"a", "b"}}), {{"ignore_merges", true}}), "abc"), (Ids{4}));
}

TEST(Bpe, BadFilesAreRefused) {
  const std::vector<std::string> tokens{"a", "b", "ab"};
  EXPECT_TRUE(contains(error_of_json(bpe(tokens, merges_json({{"a", "z"}}))),
                       "bad/tokenizer.json: model.merges.0: merges the token \"z\", which is not in the vocabulary"));
  EXPECT_TRUE(contains(error_of_json(bpe({"a", "b"}, merges_json({{"a", "b"}}))),
                       "merging \"a\" and \"b\" gives \"ab\", which is not in the vocabulary"));
  EXPECT_TRUE(contains(error_of_json(bpe(tokens, nlohmann::json::array({"a b c"}))), "model.merges.0: \"a b c\" is not two tokens"));
  EXPECT_TRUE(contains(error_of_json(bpe(tokens, merges_json({{"a", "b"}}), {{"dropout", 0.1}})),
                       "model.dropout: BPE-dropout (0.1) makes the ids random"));
  EXPECT_TRUE(contains(error_of_json(bpe(tokens, merges_json({{"a", "b"}}), {{"unk_token", "<unk>"}})),
                       "model.unk_token: the unknown token \"<unk>\" is not in the vocabulary"));
  nlohmann::json gap = bpe(tokens, merges_json({{"a", "b"}}));
  gap["model"]["vocab"]["b"] = 7;
  EXPECT_TRUE(contains(error_of_json(gap), "the id of \"b\" is 7, out of range: 3 tokens need the ids 0..2"));
}

TEST(Bpe, WritesAFileThatReadsBackTheSame) {
  const auto json = bpe({"a", "b", "c", "bc"}, nlohmann::json::array({"b c"}), {{"unk_token", "a"}, {"fuse_unk", true}});
  const Tokenizer tokenizer = Tokenizer::from_json(json.dump(), "t");
  const Tokenizer again = Tokenizer::from_json(tokenizer.to_json(), "again");
  EXPECT_EQ(again.to_json(), tokenizer.to_json());
  EXPECT_EQ(again.encode("abcz"), tokenizer.encode("abcz"));
  EXPECT_NE(tokenizer.to_json().find("\"merges\": [\n      [\n        \"b\",\n        \"c\""), std::string::npos);
}

// GPT-2's byte-level BPE: the pre-tokeniser writes each byte as a character of its alphabet.
nlohmann::json byte_level(const nlohmann::json& post_processor) {
  // The byte alphabet: '!'..'~' as themselves, space is U+0120 "Ġ", byte 0 is U+0100 "Ā".
  const std::vector<std::string> tokens{"<s>", "</s>", "h", "i", "\xC4\xA0", "\xC4\x80", "\xC4\xA0h", "\xC4\xA0hi"};
  nlohmann::json json = bpe(tokens, merges_json({{"\xC4\xA0", "h"}, {"\xC4\xA0h", "i"}}));
  json["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  json["post_processor"] = post_processor;
  return json;
}

TEST(ByteLevel, SpellsBytesInGpt2sAlphabet) {
  const Tokenizer tokenizer = Tokenizer::from_json(byte_level(nullptr).dump(), "t");
  // add_prefix_space: "hi" is " hi", which is the token "Ġhi"; a NUL byte is "Ā".
  EXPECT_EQ(tokenizer.encode("hi"), (Ids{7}));
  EXPECT_EQ(tokenizer.encode(std::string("hi\0h", 4)), (Ids{7, 5, 2}));
  EXPECT_EQ(tokenizer.tokenize("hi"), (std::vector<std::string>{"\xC4\xA0hi"}));
  EXPECT_EQ(tokenizer.unk_id(), -1);
}

TEST(ByteLevel, RobertaAndSequencePostProcessors) {
  const nlohmann::json roberta = {{"type", "RobertaProcessing"}, {"sep", {"</s>", 1}}, {"cls", {"<s>", 0}},
                                  {"trim_offsets", true}, {"add_prefix_space", true}};
  const Tokenizer tokenizer = Tokenizer::from_json(byte_level(roberta).dump(), "t");
  EXPECT_EQ(tokenizer.encode("hi hi"), (Ids{0, 7, 7, 1}));
  EXPECT_EQ(tokenizer.encode("hi hi", 0, false), (Ids{7, 7}));
  EXPECT_EQ(tokenizer.cls_id(), 0);
  EXPECT_EQ(tokenizer.sep_id(), 1);
  // ByteLevel then a template (as Llama-3's files have it): the template's tokens only.
  const nlohmann::json sequence = {
      {"type", "Sequence"},
      {"processors",
       {{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}},
        {{"type", "TemplateProcessing"},
         {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
         {"pair", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {0}}, {"tokens", {"<s>"}}}}}}}}}};
  const Tokenizer llama = Tokenizer::from_json(byte_level(sequence).dump(), "t");
  EXPECT_EQ(llama.encode("hi hi"), (Ids{0, 7, 7}));
  EXPECT_EQ(llama.num_special_tokens(), 1u);
  EXPECT_EQ(llama.cls_id(), 0);
  EXPECT_EQ(Tokenizer::from_json(llama.to_json(), "again").to_json(), llama.to_json());
}

TEST(ByteLevel, TruncationAndPaddingSidesFromTheModelDirectory) {
  const fs::path dir = fs::temp_directory_path() / ("bpe_sides_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const nlohmann::json roberta = {{"type", "RobertaProcessing"}, {"sep", {"</s>", 1}}, {"cls", {"<s>", 0}}};
  std::ofstream(dir / "tokenizer.json") << byte_level(roberta).dump();
  const Tokenizer right = Tokenizer::from_directory(dir.string());
  EXPECT_EQ(right.padding_side(), Side::kRight);
  EXPECT_EQ(right.truncation_side(), Side::kRight);
  EXPECT_FALSE(right.model_max_length().has_value());
  EXPECT_EQ(right.encode("hi h hi", 4), (Ids{0, 7, 6, 1}));
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"padding_side": "left", "truncation_side": "left", "model_max_length": 512})";
  const Tokenizer left = Tokenizer::from_directory(dir.string());
  EXPECT_EQ(left.padding_side(), Side::kLeft);
  EXPECT_EQ(left.truncation_side(), Side::kLeft);
  EXPECT_EQ(left.model_max_length(), 512u);
  EXPECT_EQ(left.encode("hi h hi", 4), (Ids{0, 6, 7, 1}));  // the start is cut
  std::ofstream(dir / "tokenizer_config.json") << R"({"padding_side": "middle", "model_max_length": 1e30})";
  EXPECT_TRUE(contains(error_of([&] { Tokenizer::from_directory(dir.string()); }),
                       "tokenizer_config.json: padding_side: \"middle\" is not \"left\" or \"right\""));
  std::ofstream(dir / "tokenizer_config.json") << R"({"model_max_length": 1000000000000000019884624838656})";
  EXPECT_FALSE(Tokenizer::from_directory(dir.string()).model_max_length().has_value());
  fs::remove_all(dir);
}

}  // namespace
