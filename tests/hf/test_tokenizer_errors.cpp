// Bad tokenizer files: each is refused with a TokenizerError that names the file, says what is
// wrong (for an unsupported component, what is supported) and what to do.
#include <filesystem>

#include "hf_test_util.h"

using gradcache::hf::Tokenizer;
using hf_test::contains;
using hf_test::error_of;

namespace {

namespace fs = std::filesystem;

// A valid tokenizer.json of a few tokens, which the tests below break one field at a time.
nlohmann::json small_tokenizer() {
  return nlohmann::json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "[PAD]", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                   "strip_accents": null, "lowercase": true},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
      "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
      "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                         "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100,
              "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "hello": 4, "##s": 5}}})");
}

std::string error_of_json(const nlohmann::json& json) {
  return error_of([&] { Tokenizer::from_json(json.dump(), "bad/tokenizer.json"); });
}

TEST(HfErrors, TheSmallTokenizerIsValid) {
  const Tokenizer tokenizer = Tokenizer::from_json(small_tokenizer().dump(), "small");
  EXPECT_EQ(tokenizer.encode("Hellos world"), (std::vector<int64_t>{2, 4, 5, 1, 3}));
}

TEST(HfErrors, MissingFiles) {
  EXPECT_TRUE(contains(error_of([] { Tokenizer::from_directory("/no/such/dir"); }),
                       "/no/such/dir: not a directory; give the model directory"));
  const fs::path empty = fs::temp_directory_path() / ("hf_empty_" + std::to_string(::getpid()));
  fs::create_directories(empty);
  EXPECT_TRUE(contains(error_of([&] { Tokenizer::from_directory(empty.string()); }),
                       "holds neither tokenizer.json nor vocab.txt"));
  fs::remove_all(empty);
}

TEST(HfErrors, MalformedJson) {
  const std::string message = error_of([] { Tokenizer::from_json("{\"model\": [1, 2", "bad/tokenizer.json"); });
  EXPECT_TRUE(contains(message, "bad/tokenizer.json: not valid JSON ("));
  EXPECT_TRUE(contains(error_of([] { Tokenizer::from_json("[1, 2]", "bad/tokenizer.json"); }),
                       "bad/tokenizer.json: expected an object, found an array"));
  EXPECT_TRUE(contains(error_of([] { Tokenizer::from_json("{}", "bad/tokenizer.json"); }),
                       "bad/tokenizer.json: the field \"model\" is missing"));
  // Bytes that are not UTF-8, quoted by the parser, come out as \xNN.
  const std::string quoted = error_of([] { Tokenizer::from_json("{\"a\": \xFF}", "bad/tokenizer.json"); });
  EXPECT_TRUE(contains(quoted, "\\xFF"));
}

TEST(HfErrors, UnsupportedComponentsListWhatIsSupported) {
  // Components `tokenizers` has that no model this library trains uses (WordLevel, the
  // UnicodeScripts and CharDelimiterSplit pre-tokenizers, the ByteLevel normalizer), and a
  // made-up post-processor.
  nlohmann::json word_level = small_tokenizer();
  word_level["model"] = {{"type", "WordLevel"}, {"vocab", nlohmann::json::object()}, {"unk_token", "[UNK]"}};
  EXPECT_TRUE(contains(error_of_json(word_level),
                       "bad/tokenizer.json: model.type: the model \"WordLevel\" is not supported "
                       "(supported: WordPiece, BPE, Unigram)"));
  nlohmann::json scripts = small_tokenizer();
  scripts["pre_tokenizer"] = {{"type", "UnicodeScripts"}};
  EXPECT_TRUE(contains(error_of_json(scripts),
                       "pre_tokenizer.type: the pre-tokenizer \"UnicodeScripts\" is not supported (supported: "
                       "BertPreTokenizer, ByteLevel, Split, Metaspace, Whitespace, WhitespaceSplit, Punctuation, Digits, "
                       "Sequence)"));
  nlohmann::json byte_level = small_tokenizer();
  byte_level["normalizer"] = {{"type", "ByteLevel"}};
  EXPECT_TRUE(contains(error_of_json(byte_level),
                       "normalizer.type: the normalizer \"ByteLevel\" is not supported (supported: BertNormalizer, "
                       "NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace, Prepend, Precompiled, Sequence)"));
  nlohmann::json made_up = small_tokenizer();
  made_up["post_processor"] = {{"type", "T5Processing"}};
  EXPECT_TRUE(contains(error_of_json(made_up),
                       "the post-processor \"T5Processing\" is not supported (supported: TemplateProcessing, "
                       "BertProcessing, RobertaProcessing, ByteLevel, Sequence)"));
  nlohmann::json untyped = small_tokenizer();
  untyped["model"].erase("type");
  EXPECT_TRUE(contains(error_of_json(untyped), "model: the field \"type\" is missing"));
}

TEST(HfErrors, WrongFields) {
  nlohmann::json j = small_tokenizer();
  j["normalizer"]["lowercase"] = "yes";
  EXPECT_TRUE(contains(error_of_json(j), "normalizer.lowercase: expected true or false, found a string"));
  j = small_tokenizer();
  j["model"].erase("max_input_chars_per_word");
  EXPECT_TRUE(contains(error_of_json(j), "model: the field \"max_input_chars_per_word\" is missing"));
  j = small_tokenizer();
  j["version"] = "2.0";
  EXPECT_TRUE(contains(error_of_json(j), "version: unknown tokenizer.json version"));
  j = small_tokenizer();
  j["truncation"] = {{"max_length", 8}, {"strategy", "Sideways"}, {"stride", 0}};
  EXPECT_TRUE(contains(error_of_json(j), "truncation.strategy: \"Sideways\" is not LongestFirst"));
  j = small_tokenizer();
  j["post_processor"]["single"][1]["Sequence"]["id"] = "B";
  EXPECT_TRUE(contains(error_of_json(j), "uses $B, which only a pair has"));
  j = small_tokenizer();
  j["post_processor"]["special_tokens"].erase("[SEP]");
  EXPECT_TRUE(contains(error_of_json(j), "the special token \"[SEP]\", which \"special_tokens\" does not define"));
}

TEST(HfErrors, VocabularyWithoutUnknownToken) {
  nlohmann::json j = small_tokenizer();
  j["model"]["unk_token"] = "<unk>";
  EXPECT_TRUE(contains(error_of_json(j), "model.unk_token: the unknown token \"<unk>\" is not in the vocabulary"));
}

TEST(HfErrors, IdsOutOfRange) {
  nlohmann::json j = small_tokenizer();
  j["model"]["vocab"]["hello"] = 4000000000u;
  EXPECT_TRUE(contains(error_of_json(j), "model.vocab: the id of \"hello\" is 4000000000, out of range: 6 tokens"));
  j = small_tokenizer();
  j["model"]["vocab"]["hello"] = -1;
  EXPECT_TRUE(contains(error_of_json(j), "model.vocab.hello: expected a non-negative integer"));
  j = small_tokenizer();
  j["model"]["vocab"]["hello"] = 5;  // the id of "##s" too
  EXPECT_TRUE(contains(error_of_json(j), "each id must name one token"));
  j = small_tokenizer();
  j["post_processor"]["special_tokens"]["[SEP]"]["ids"] = {99};
  EXPECT_TRUE(contains(error_of_json(j), "post_processor: adds the id 99, out of range: the vocabulary has 6 ids"));
  j = small_tokenizer();
  j["padding"] = {{"pad_id", 6}};
  EXPECT_TRUE(contains(error_of_json(j), "padding.pad_id: the id 6 is out of range"));
  j = small_tokenizer();
  j["added_tokens"][0]["id"] = 7;
  EXPECT_TRUE(contains(error_of_json(j), "the token \"[PAD]\" has the id 7, but `tokenizers` gives it 0"));
}

TEST(HfErrors, VocabTxt) {
  const auto vocab_error = [](const std::string& vocab, const std::string& config = "") {
    return error_of([&] { Tokenizer::from_vocab(vocab, config, "bad/vocab.txt"); });
  };
  EXPECT_TRUE(contains(vocab_error("[UNK]\n[CLS]\nhello\n"), "bad/vocab.txt: has no line \"[SEP]\" (the separator"));
  EXPECT_TRUE(contains(vocab_error("[CLS]\n[SEP]\n"), "has no line \"[UNK]\" (the unknown token)"));
  EXPECT_TRUE(contains(vocab_error("[UNK]\n[CLS]\n[SEP]\nhello\nworld\nhello \n"),
                       "bad/vocab.txt: line 6: repeats the token \"hello\" of line 4"));
  EXPECT_TRUE(contains(vocab_error("[UNK]\n[CLS]\n[SEP]\nh\xE9llo\n"), "line 4: byte 2 is not UTF-8"));
  EXPECT_TRUE(contains(vocab_error(""), "bad/vocab.txt: is empty"));
  EXPECT_TRUE(contains(vocab_error(std::string(4200000, '\n')), "4200000 lines, more than the 4194304 tokens"));
  const std::string ok = "[UNK]\n[CLS]\n[SEP]\n";
  EXPECT_TRUE(contains(vocab_error(ok, "{nope"), "bad/vocab.txt (tokenizer_config.json): not valid JSON"));
  EXPECT_TRUE(contains(vocab_error(ok, R"({"tokenizer_class": "XLMRobertaTokenizer"})"),
                       "tokenizer_class: \"XLMRobertaTokenizer\" cannot be read from vocab.txt here (supported: "
                       "BertTokenizer"));
  EXPECT_TRUE(contains(vocab_error(ok, R"({"strip_accents": 1})"),
                       "strip_accents: expected true, false or null, found an integer"));
  EXPECT_TRUE(contains(vocab_error(ok, R"({"unk_token": {"content": "<unk>"}})"), "has no line \"<unk>\""));
  // A pad token missing from vocab.txt gets the next id, as transformers gives it.
  const Tokenizer no_pad = Tokenizer::from_vocab(ok, "", "no-pad");
  EXPECT_EQ(no_pad.pad_id(), 3);
  EXPECT_EQ(no_pad.vocab_size(), 5);  // [PAD] and [MASK] after the three lines
}

TEST(HfErrors, MaxLenBelowTheSpecialTokens) {
  const Tokenizer tokenizer = Tokenizer::from_json(small_tokenizer().dump(), "small");
  EXPECT_THROW(tokenizer.encode("hello", 1), std::invalid_argument);
  EXPECT_EQ(tokenizer.encode("hello hello", 2), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(tokenizer.encode("hello hello", 3), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(tokenizer.encode("hello hello", 9), (std::vector<int64_t>{2, 4, 4, 3}));
}

}  // namespace
