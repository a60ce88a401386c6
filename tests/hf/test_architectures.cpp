// Every built-in architecture against transformers (tests/hf/architectures.py makes a tiny random
// model of each with transformers, and what transformers computes with it; the hf.architectures
// fixture runs it): the same last_hidden_state, the task model's checkpoint loads, what we save
// loads back into transformers with the same outputs, and a cache step equals a full-batch
// backward with dropout on.
//
// Tolerance of last_hidden_state (fp32, entries O(1)): as tests/hf/test_bert.cpp derives it, 2
// layers deep of sums over <= 37 terms, L sqrt(n) u ~ 2 x 7 x 6e-8 = 8e-7 per layer stage, a
// few stages per layer (attention, MLP, norms): kTolerance = 2e-6 relative to max(1, max |h|).
// transformers runs the same LibTorch kernels (SDPA, GEMM) in the same order where it can, so
// the observed error is far below (printed). A weight changed by 1e-3 of its size must show
// (the negative control): 1e-2 of the largest entry of one matrix, which moves the output 10 times the tolerance at least.
// Cache vs full batch: tests/hf/test_hf_grad_cache.cpp's kTolerance (1e-5), same reasoning.
#include "model_test_util.h"

#include <gradcache/gradcache.h>
#include <gradcache/hf/lora.h>

#include "hf/model_json.h"
#include "hf/models/bloom.h"
#include "hf/models/llama.h"
#include "hf/models/modernbert.h"
#include "hf/models/mpnet.h"

#include <algorithm>

namespace hf = gradcache::hf;
namespace gc = gradcache;

namespace {

constexpr double kTolerance = 2e-6;
constexpr double kCacheTolerance = 1e-5;
const std::vector<std::string> kArchitectures = {"bert",    "roberta", "xlm-roberta", "llama",
                                                 "mistral", "qwen2",   "qwen3",       "modernbert", "mpnet", "bloom"};

std::string architectures_dir() {
  const char* env = std::getenv("GRADCACHE_ARCHITECTURES_DIR");
  return env != nullptr ? env : "";
}

// One intra-op thread, as the references were made with: with two, the torch wheel's first tanh
// of a process is sometimes computed on a worker thread to ~1e-4 relative (docs/platform.md).
// Set here rather than by the environment, which gtest_discover_tests cannot pass with the
// directory (tests/hf/CMakeLists.txt).
void use_one_thread() {
  if (at::get_num_threads() != 1) at::set_num_threads(1);
}

// Why the references are not there ("" if they are).
std::string references_missing() {
  const std::string dir = architectures_dir();
  if (dir.empty()) return "GRADCACHE_ARCHITECTURES_DIR is not set (the hf.architectures fixture sets it)";
  std::ifstream unavailable(dir + "/unavailable.txt");
  if (unavailable) return std::string((std::istreambuf_iterator<char>(unavailable)), std::istreambuf_iterator<char>());
  if (!hftest::fs::exists(dir + "/bert/expected.safetensors")) return "no references in " + dir + " (run architectures.py make)";
  return "";
}

// max |ours - theirs| over real tokens only (what a padding position holds differs between
// attention kernels and is never read), and max |theirs| there.
std::pair<double, double> real_token_error(const torch::Tensor& ours, const torch::Tensor& theirs, const torch::Tensor& mask) {
  const auto real = mask.to(torch::kBool).unsqueeze(-1).expand_as(theirs);
  const auto a = ours.masked_select(real).to(torch::kDouble), b = theirs.masked_select(real).to(torch::kDouble);
  return {(a - b).abs().max().item<double>(), b.abs().max().item<double>()};
}

// Random texts of 1 to 12 ids (3 .. 95: architectures.py keeps the special ids below 3), padded
// on `side` with `pad`.
std::map<std::string, torch::Tensor> random_batch(int64_t rows, const std::string& side, int64_t pad) {
  std::vector<std::vector<int64_t>> ids;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> row(torch::randint(1, 13, {1}).item<int64_t>());
    for (auto& id : row) id = torch::randint(3, 96, {1}).item<int64_t>();
    ids.push_back(row);
  }
  return hf::pad_batch(ids, pad, side == "left");
}

class Architecture : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    use_one_thread();
    const std::string missing = references_missing();
    if (!missing.empty()) GTEST_SKIP() << missing;
    expected_ = hf::read_safetensors(dir() + "/expected.safetensors");
  }
  std::string dir() const { return architectures_dir() + "/" + GetParam(); }
  torch::Tensor expected(const std::string& name) const { return hftest::tensor(expected_, name); }
  torch::Tensor encode(hf::TransformerBackbone& model) const {
    torch::NoGradGuard no_grad;
    return model.encode(expected("input_ids"), expected("attention_mask")).last_hidden_state;
  }

  hf::SafetensorsContents expected_;
};

}  // namespace

TEST_P(Architecture, MatchesTransformers) {
  const int64_t parses = hf::detail::parse_json_calls();
  auto model = hf::load_transformer(dir() + "/model");
  // One load, one parse of config.json (it was three: the model type, the weight count and the
  // build each parsed it), and one of the safetensors header.
  EXPECT_EQ(hf::detail::parse_json_calls() - parses, 2);
  const auto config = nlohmann::json::parse(std::ifstream(dir() + "/model/config.json"));
  EXPECT_EQ(model->model_type(), config.at("model_type").get<std::string>());
  const auto [error, size] = real_token_error(encode(*model), expected("last_hidden_state"), expected("attention_mask"));
  std::cout << "[" << GetParam() << "] max |ours - transformers| over real tokens: " << error << " (entries up to " << size
            << ")" << std::endl;
  EXPECT_LT(error, kTolerance * std::max(1.0, size));

  // Negative control: one weight of the last layer off by 1e-2 of the largest.
  for (auto& item : model->named_parameters()) {
    if (item.value().dim() != 2 || item.key().find(".1.") == std::string::npos) continue;
    torch::NoGradGuard no_grad;
    item.value().view(-1)[0] += 1e-2 * item.value().abs().max();
    break;
  }
  const double broken = real_token_error(encode(*model), expected("last_hidden_state"), expected("attention_mask")).first;
  EXPECT_GT(broken, 10 * kTolerance * std::max(1.0, size));
}

TEST_P(Architecture, LoadsTheTaskModelsCheckpoint) {
  // …ForMaskedLM / …ForCausalLM: the encoder under "bert.", "roberta." or "model.", beside an
  // LM head (tied to the embeddings or not), and no pooler for the masked-LM encoders.
  auto plain = hf::load_transformer(dir() + "/model");
  auto task = hf::load_transformer(dir() + "/head");
  EXPECT_TRUE(torch::equal(encode(*task), encode(*plain)));
}

// The largest relative gradient error of a cache step of 12 pairs in chunks of 4 against the
// full-batch backward, dropout on, of the sentence-transformers directory (its pooling, Normalize
// and Qwen3's Dense modules). With `lora`: adapters of rank 4 with dropout 0.1 on the default
// targets (B random, so that A has gradients), the base frozen, as a LoRA run trains; when
// `reseed_cache` the cache step draws other dropout masks (the negative control).
static double cache_step_error(const std::string& dir, bool decoder, bool lora, bool reseed_cache = false) {
  torch::manual_seed(7);
  const auto config = nlohmann::json::parse(std::ifstream(dir + "/model/config.json"));
  const int64_t pad = config.value("pad_token_id", nlohmann::json()).is_number() ? config["pad_token_id"].get<int64_t>() : 0;
  auto model = hf::load_sentence_transformer(dir + "/st");
  if (lora) {
    for (auto& p : model->parameters()) p.requires_grad_(false);
    hf::add_lora(model->transformer(), hf::LoraOptions(4).alpha(8).dropout(0.1));
    torch::NoGradGuard no_grad;
    for (auto& item : model->named_parameters())
      if (item.key().find("lora_B") != std::string::npos) item.value().normal_(0.0, 0.2);
  }
  model->train();
  const std::string side = decoder ? "left" : "right";
  const gc::ModelInput queries = random_batch(12, side, pad), passages = random_batch(12, side, pad);
  {  // dropout is really on: two training forwards differ
    torch::NoGradGuard no_grad;
    EXPECT_FALSE(torch::allclose(gc::Model(model)(queries).toTensor(), gc::Model(model)(queries).toTensor()));
  }
  const gc::Loss loss = gc::SimpleContrastiveLoss(gc::ContrastiveLossOptions().similarity(gc::Similarity::Cosine).temperature(0.05));
  torch::manual_seed(42);
  const auto full = hftest::full_batch_gradients(model, {queries, passages}, 4, loss);
  hftest::zero(*model);
  torch::manual_seed(reseed_cache ? 43 : 42);
  gc::GradCache({model, model}, 4, loss)({queries, passages});
  return hftest::max_rel_error(hftest::gradients(*model), full);
}

TEST_P(Architecture, CacheStepEqualsFullBatchWithDropout) {
  const bool decoder = expected_.metadata.at("side") == "left";
  const double error = cache_step_error(dir(), decoder, /*lora=*/false);
  std::cout << "[" << GetParam() << "] cache step vs full batch, dropout on, 12 pairs in chunks of 4: max relative gradient error "
            << error << std::endl;
  EXPECT_LT(error, kCacheTolerance);
}

TEST_P(Architecture, LoraCacheStepEqualsFullBatchWithDropout) {
  // The adapters' gradients (the only ones: the base is frozen), LoRA dropout replayed with the
  // model's; drawn from another seed, the cache step's masks differ and so do its gradients.
  const bool decoder = expected_.metadata.at("side") == "left";
  const double error = cache_step_error(dir(), decoder, /*lora=*/true);
  std::cout << "[" << GetParam() << "] LoRA cache step vs full batch, dropout on: max relative gradient error " << error
            << std::endl;
  EXPECT_LT(error, kCacheTolerance);
  EXPECT_GT(cache_step_error(dir(), decoder, /*lora=*/true, /*reseed_cache=*/true), 100 * kCacheTolerance);
}

TEST_P(Architecture, LoraAdapterMatchesPeft) {
  // PEFT's adapter (architectures.py: r 4, alpha 8, B random) loaded onto our model computes what
  // PeftModel computed; without it the model does not (the control); merged into the weights,
  // the plain model computes the same again.
  auto model = hf::load_transformer(dir() + "/model");
  const auto theirs = hftest::tensor(hf::read_safetensors(dir() + "/lora_expected.safetensors"), "last_hidden_state");
  const auto mask = expected("attention_mask");
  const double without = real_token_error(encode(*model), theirs, mask).first;
  const hf::LoraOptions options = hf::load_lora_adapter(*model, dir() + "/lora");
  EXPECT_EQ(options.rank(), 4);
  EXPECT_DOUBLE_EQ(options.scaling(), 2.0);
  auto sorted = [](std::vector<std::string> v) { std::sort(v.begin(), v.end()); return v; };
  EXPECT_EQ(sorted(options.targets()), sorted(hf::default_lora_targets(model->model_type())));
  const auto [error, size] = real_token_error(encode(*model), theirs, mask);
  std::cout << "[" << GetParam() << "] max |ours - PeftModel| with the adapter: " << error << " (without it: " << without << ")"
            << std::endl;
  EXPECT_LT(error, kTolerance * std::max(1.0, size));
  EXPECT_GT(without, 10 * kTolerance * std::max(1.0, size));
  hf::merge_lora(*model);
  EXPECT_FALSE(hf::has_lora(*model));
  EXPECT_LT(real_token_error(encode(*model), theirs, mask).first, kTolerance * std::max(1.0, size));
}

TEST_P(Architecture, SentenceTransformersDirectory) {
  // sentence-transformers saved the model with its tokenizer (decoders pad on the left and end
  // a text with EOS), pooling, Normalize and prompts: the same ids, and the same embeddings as
  // SentenceTransformer.encode (which sorts texts by length, so its batches are padded otherwise:
  // only rounding may differ), plain and with the "query" prompt.
  const auto expected = hf::read_safetensors(dir() + "/st_expected.safetensors");
  auto model = hf::load_sentence_transformer(dir() + "/st");
  const auto texts = hftest::fixture_texts(expected);
  const auto batch = model->tokenize(texts);
  EXPECT_TRUE(torch::equal(batch.at("input_ids"), hftest::tensor(expected, "input_ids")));
  EXPECT_TRUE(torch::equal(batch.at("attention_mask"), hftest::tensor(expected, "attention_mask")));
  torch::NoGradGuard no_grad;
  const double plain = hftest::max_abs_diff(model->forward(batch), hftest::tensor(expected, "embeddings"));
  const double prompted =
      hftest::max_abs_diff(model->forward(model->tokenize(texts, model->prompt("query"))), hftest::tensor(expected, "query_embeddings"));
  std::cout << "[" << GetParam() << "] max |ours - SentenceTransformer.encode|: " << plain << ", with the query prompt " << prompted
            << std::endl;
  EXPECT_LT(plain, kTolerance);  // unit vectors
  EXPECT_LT(prompted, kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Builtin, Architecture, ::testing::ValuesIn(kArchitectures), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

TEST(Architectures, SavedModelsLoadInTransformersAndSentenceTransformers) {
  use_one_thread();
  const std::string missing = references_missing();
  if (!missing.empty()) GTEST_SKIP() << missing;
  const std::string dir = architectures_dir();
  std::map<std::string, torch::Tensor> ours, ours_adapted;
  for (const auto& name : kArchitectures) {
    auto model = hf::load_transformer(dir + "/" + name + "/model");
    hftest::fs::remove_all(dir + "/" + name + "/saved");
    hftest::fs::create_directories(dir + "/" + name + "/saved");
    hf::save_transformer(*model, dir + "/" + name + "/saved");
    hf::load_sentence_transformer(dir + "/" + name + "/st")->save(dir + "/" + name + "/st_saved");
    const auto expected = hf::read_safetensors(dir + "/" + name + "/expected.safetensors");
    torch::NoGradGuard no_grad;
    ours[name] = model->encode(hftest::tensor(expected, "input_ids"), hftest::tensor(expected, "attention_mask")).last_hidden_state;
    // Our adapter (rank 3, rsLoRA scaling, B random) as PEFT's directory, for PeftModel to load.
    hf::LoraOptions lora = hf::add_lora(*model, hf::LoraOptions(3).alpha(5).rslora(true));
    for (auto& item : model->named_parameters())
      if (item.key().find("lora_B") != std::string::npos) item.value().normal_(0.0, 0.2);
    hftest::fs::remove_all(dir + "/" + name + "/lora_saved");
    hftest::fs::create_directories(dir + "/" + name + "/lora_saved");
    hf::save_lora_adapter(*model, lora, dir + "/" + name + "/lora_saved", dir + "/" + name + "/model");
    ours_adapted[name] =
        model->encode(hftest::tensor(expected, "input_ids"), hftest::tensor(expected, "attention_mask")).last_hidden_state;
  }
  const std::string command = c10::str("\"", hftest::python(), "\" \"" GRADCACHE_HF_SCRIPTS "/architectures.py\" check \"", dir, "\"");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  for (const auto& name : kArchitectures) {
    const auto expected = hf::read_safetensors(dir + "/" + name + "/expected.safetensors");
    const auto reloaded = hf::read_safetensors(dir + "/" + name + "/reloaded.safetensors");
    const auto [error, size] =
        real_token_error(ours[name], hftest::tensor(reloaded, "last_hidden_state"), hftest::tensor(expected, "attention_mask"));
    EXPECT_LT(error, kTolerance * std::max(1.0, size)) << name << " reloaded by transformers as " << reloaded.metadata.at("class");
    const auto st = hf::read_safetensors(dir + "/" + name + "/st_expected.safetensors");
    const auto st_reloaded = hf::read_safetensors(dir + "/" + name + "/st_reloaded.safetensors");
    for (const char* key : {"embeddings", "query_embeddings"})
      EXPECT_LT(hftest::max_abs_diff(hftest::tensor(st_reloaded, key), hftest::tensor(st, key)), kTolerance) << name << " " << key;
    const auto lora_reloaded = hf::read_safetensors(dir + "/" + name + "/lora_reloaded.safetensors");
    const auto [lora_error, lora_size] = real_token_error(ours_adapted[name], hftest::tensor(lora_reloaded, "last_hidden_state"),
                                                          hftest::tensor(expected, "attention_mask"));
    EXPECT_LT(lora_error, kTolerance * std::max(1.0, lora_size)) << name << "'s adapter loaded by PeftModel";
    EXPECT_GT(real_token_error(ours[name], ours_adapted[name], hftest::tensor(expected, "attention_mask")).first,
              10 * kTolerance * std::max(1.0, lora_size))
        << name << ": the adapter must change the output for this to test anything";
  }
}

TEST(Architectures, RegistryListsEveryArchitecture) {
  const auto types = hf::supported_model_types();
  for (const auto& name : kArchitectures) EXPECT_NE(std::find(types.begin(), types.end(), name), types.end()) << name;
  const std::string message = hftest::model_file_error([] { hf::build_transformer("{\"model_type\":\"gpt2\"}", "c/config.json"); });
  EXPECT_NE(message.find("c/config.json: model_type \"gpt2\" is not supported (supported: bert, "), std::string::npos) << message;
  for (const auto& name : kArchitectures) EXPECT_NE(message.find(name), std::string::npos) << message;
}

namespace {

// The ModelFileError of building `config` (a config.json of any architecture) as c/config.json.
std::string config_error(const nlohmann::json& config) {
  return hftest::model_file_error([&] { hf::build_transformer(config.dump(), "c/config.json"); });
}

// Each change made to `tiny` is refused naming c/config.json and saying what `expected` says.
void expect_refusals(const nlohmann::json& tiny, const std::vector<std::pair<nlohmann::json, std::string>>& cases) {
  for (const auto& [change, expected] : cases) {
    nlohmann::json config = tiny;
    config.update(change);
    const std::string message = config_error(config);
    EXPECT_NE(message.find("c/config.json"), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << change.dump() << ": " << message;
  }
}

int64_t weights_of(hf::TransformerBackbone& model) {
  int64_t count = 0;
  for (const auto& item : model.named_parameters()) count += item.value().numel();
  return count;
}

}  // namespace

TEST(MPNetConfig, RefusesBadFieldsNamingThem) {
  const nlohmann::json tiny = {{"model_type", "mpnet"}, {"vocab_size", 50}, {"hidden_size", 8}, {"num_hidden_layers", 1},
                               {"num_attention_heads", 2}, {"intermediate_size", 10}, {"max_position_embeddings", 16}};
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"hidden_size", 10}, {"num_attention_heads", 4}}, "hidden_size 10 is not a multiple of num_attention_heads 4"},
      {{{"vocab_size", int64_t{1} << 40}}, "vocab_size"},
      {{{"num_hidden_layers", "12"}}, "num_hidden_layers"},
      {{{"layer_norm_eps", 0}}, "layer_norm_eps"},
      {{{"hidden_act", "mish"}}, "hidden_act"},
      {{{"relative_attention_num_buckets", 16}}, "relative_attention_num_buckets 16 is below the 32 buckets"},
      {{{"max_position_embeddings", 2}}, "max_position_embeddings 2 leaves no position"},
      {{{"pad_token_id", 50}}, "pad_token_id 50 is outside the vocabulary"},
  };
  expect_refusals(tiny, cases);
}

TEST(MPNetConfig, CountsEveryWeightAndPositionsAfterPadding) {
  const std::string text = R"({"model_type": "mpnet", "vocab_size": 50, "hidden_size": 8, "num_hidden_layers": 2,
                               "num_attention_heads": 2, "intermediate_size": 10, "max_position_embeddings": 16,
                               "relative_attention_num_buckets": 40})";
  auto model = hf::build_transformer(text, "c/config.json");
  EXPECT_EQ(weights_of(*model), hf::MPNetConfig::parse(text, "c/config.json").parameter_count(/*with_pooler=*/true));
  EXPECT_EQ(model->max_tokens(), 14);  // positions 2 .. 15
  EXPECT_EQ(model->checkpoint_prefix(), "mpnet.");
}

TEST(ModernBertConfig, RefusesBadFieldsNamingThem) {
  const nlohmann::json tiny = {{"model_type", "modernbert"}, {"vocab_size", 50}, {"hidden_size", 8},
                               {"num_hidden_layers", 2},     {"num_attention_heads", 2}, {"intermediate_size", 10},
                               {"max_position_embeddings", 16}, {"pad_token_id", 0}};
  const nlohmann::json yarn = {{"full_attention", {{"rope_type", "yarn"}, {"factor", 2.0}}}};
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"hidden_size", 10}, {"num_attention_heads", 4}}, "hidden_size 10 is not a multiple of num_attention_heads 4"},
      {{{"hidden_size", 6}}, "the head size 3 is odd"},
      {{{"vocab_size", int64_t{1} << 40}}, "vocab_size"},
      {{{"num_hidden_layers", "12"}}, "num_hidden_layers"},
      {{{"intermediate_size", 0}}, "intermediate_size"},
      {{{"local_attention", 1}}, "local_attention"},
      {{{"global_attn_every_n_layers", 0}}, "global_attn_every_n_layers"},
      {{{"layer_types", {"full_attention"}}}, "\"layer_types\" lists 1 layers, but num_hidden_layers is 2"},
      {{{"layer_types", {"full_attention", "chunked_attention"}}}, "\"chunked_attention\""},
      {{{"layer_types", "full_attention"}}, "\"layer_types\" must be a list"},
      {{{"rope_parameters", yarn}}, "rope_type \"yarn\""},
      {{{"global_rope_theta", 0}}, "global_rope_theta"},
      {{{"hidden_activation", "mish"}}, "hidden_activation"},
      {{{"norm_eps", 0}}, "norm_eps"},
      {{{"attention_dropout", 1}}, "attention_dropout"},
      {{{"norm_bias", "yes"}}, "norm_bias"},
      {{{"pad_token_id", 50}}, "pad_token_id 50 is outside the vocabulary"},
      {{{"head_dim", 8}}, "head_dim 8 differs from hidden_size / num_attention_heads (4)"},
  };
  expect_refusals(tiny, cases);
}

TEST(ModernBertConfig, CountsEveryWeightAndReadsBothSpellings) {
  // Every bias on, and the spelling of checkpoints made before transformers 5 (the layer kinds
  // from global_attn_every_n_layers, the rotary bases as global / local_rope_theta).
  const std::string text = R"({"model_type": "modernbert", "vocab_size": 50, "hidden_size": 8, "num_hidden_layers": 4,
                               "num_attention_heads": 2, "intermediate_size": 10, "max_position_embeddings": 16,
                               "pad_token_id": 0, "norm_bias": true, "attention_bias": true, "mlp_bias": true,
                               "global_attn_every_n_layers": 2, "global_rope_theta": 1000.0, "local_rope_theta": 30.0})";
  auto model = hf::build_transformer(text, "c/config.json");
  const auto config = hf::ModernBertConfig::parse(text, "c/config.json");
  EXPECT_EQ(weights_of(*model), config.parameter_count());
  const std::string plain = R"({"model_type": "modernbert", "vocab_size": 50, "hidden_size": 8, "num_hidden_layers": 3,
                                "num_attention_heads": 2, "intermediate_size": 10, "pad_token_id": 0})";
  EXPECT_EQ(weights_of(*hf::build_transformer(plain, "c")), hf::ModernBertConfig::parse(plain, "c").parameter_count());
  EXPECT_EQ(model->max_tokens(), 16);
  EXPECT_EQ(model->checkpoint_prefix(), "model.");
  EXPECT_EQ(config.global_rope_theta(), 1000.0);
  EXPECT_EQ(config.local_rope_theta(), 30.0);
  const auto saved = nlohmann::json::parse(model->config_json());
  EXPECT_EQ(saved.at("layer_types"),
            nlohmann::json({"full_attention", "sliding_attention", "full_attention", "sliding_attention"}));
  EXPECT_EQ(saved.at("rope_parameters").at("sliding_attention").at("rope_theta"), 30.0);
  // transformers 5's rope_parameters win over the old thetas.
  auto newer = nlohmann::json::parse(text);
  newer["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 5000.0}}}};
  EXPECT_EQ(hf::ModernBertConfig::parse(newer.dump(), "c").global_rope_theta(), 5000.0);
  EXPECT_EQ(hf::ModernBertConfig::parse(newer.dump(), "c").local_rope_theta(), 30.0);
}

TEST(BloomConfig, RefusesBadFieldsNamingThem) {
  const nlohmann::json tiny = {{"model_type", "bloom"}, {"vocab_size", 50}, {"hidden_size", 8}, {"n_layer", 1},
                               {"n_head", 2}, {"pad_token_id", 0}};
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"hidden_size", 10}, {"n_head", 4}}, "hidden_size 10 is not a multiple of n_head 4"},
      {{{"n_embed", 16}}, "\"hidden_size\" and \"n_embed\" (the same field) disagree"},
      {{{"num_attention_heads", 0}}, "num_attention_heads"},
      {{{"vocab_size", int64_t{1} << 40}}, "vocab_size"},
      {{{"n_layer", "12"}}, "n_layer"},
      {{{"layer_norm_epsilon", 0}}, "layer_norm_epsilon"},
      {{{"hidden_dropout", 1}}, "hidden_dropout"},
      {{{"pad_token_id", 50}}, "pad_token_id 50 is outside the vocabulary"},
      {{{"slow_but_exact", true}, {"pretraining_tp", 4}}, "slow_but_exact with pretraining_tp 4"},
  };
  expect_refusals(tiny, cases);
}

TEST(BloomConfig, ReadsEitherSpellingAndCountsEveryWeight) {
  // n_embed / num_hidden_layers / num_attention_heads, as BloomConfig's attribute_map accepts;
  // written back under the struct's own names only.
  const std::string text = R"({"model_type": "bloom", "vocab_size": 50, "n_embed": 8, "num_hidden_layers": 3,
                               "num_attention_heads": 2})";
  const auto config = hf::BloomConfig::parse(text, "c/config.json");
  EXPECT_EQ(config.hidden_size(), 8);
  EXPECT_EQ(config.n_layer(), 3);
  EXPECT_EQ(config.n_head(), 2);
  const auto written = nlohmann::json::parse(config.to_json());
  EXPECT_FALSE(written.contains("n_embed") || written.contains("num_hidden_layers"));
  EXPECT_EQ(written.at("hidden_size"), 8);
  auto model = hf::build_transformer(text, "c/config.json");
  EXPECT_EQ(weights_of(*model), config.parameter_count());
  EXPECT_EQ(model->checkpoint_prefix(), "transformer.");
}

TEST(LlamaConfig, RefusesBadFieldsNamingThem) {
  const nlohmann::json tiny = {{"model_type", "llama"},      {"vocab_size", 50},        {"hidden_size", 8},
                               {"num_hidden_layers", 1},     {"num_attention_heads", 2}, {"intermediate_size", 10},
                               {"max_position_embeddings", 16}};
  const nlohmann::json llama3 = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                 {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8}};
  auto with = [&](const char* key, const nlohmann::json& value) {
    nlohmann::json rope = llama3;
    if (value.is_null()) rope.erase(key); else rope[key] = value;
    return nlohmann::json{{"rope_parameters", rope}};
  };
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"hidden_size", 10}, {"num_attention_heads", 4}}, "hidden_size 10 is not a multiple of num_attention_heads 4"},
      {{{"num_key_value_heads", 3}}, "num_attention_heads 2 is not a multiple of num_key_value_heads 3"},
      {{{"head_dim", 3}}, "head size 3 is odd"},
      {{{"vocab_size", int64_t{1} << 40}}, "vocab_size"},
      {{{"pad_token_id", 50}}, "pad_token_id 50 is outside the vocabulary"},
      {{{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}}, "rope_type \"yarn\", which is not supported yet"},
      {{{"rope_parameters", {{"rope_type", "dynamic"}, {"factor", 2.0}}}}, "rope_type \"dynamic\""},
      {{{"rope_parameters", "llama3"}}, "\"rope_parameters\" must be an object"},
      {{{"rope_scaling", {{"type", "linear"}}}}, "rope_scaling of rope_type \"linear\" needs \"factor\""},
      {with("factor", 0.0), "factor"},
      {with("original_max_position_embeddings", nullptr), "needs \"original_max_position_embeddings\""},
      {with("high_freq_factor", 1.0), "high_freq_factor must be larger than low_freq_factor"},
      {{{"use_sliding_window", true}, {"model_type", "qwen2"}}, "sliding-window layers are not supported"},
  };
  expect_refusals(tiny, cases);
}

TEST(LlamaConfig, RopeScalingIsReadAndWrittenAndScalesTheFrequencies) {
  // Llama 3.1's rope_scaling (earlier files) and rope_parameters (transformers 5) read alike;
  // written as rope_parameters with every field. Linear scaling by 2 is the default rotation
  // at half the positions: position 2p of the scaled model turns as far as p of the plain one.
  const nlohmann::json tiny = {{"model_type", "llama"}, {"vocab_size", 50}, {"hidden_size", 8}, {"num_hidden_layers", 1},
                               {"num_attention_heads", 2}, {"intermediate_size", 10}, {"max_position_embeddings", 16}};
  const nlohmann::json llama3 = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                 {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8}};
  nlohmann::json old_spelling = tiny, new_spelling = tiny;
  old_spelling["rope_scaling"] = llama3;
  new_spelling["rope_parameters"] = llama3;
  new_spelling["rope_parameters"]["rope_theta"] = 500000.0;
  const auto a = hf::LlamaConfig::parse(old_spelling.dump(), "c"), b = hf::LlamaConfig::parse(new_spelling.dump(), "c");
  EXPECT_EQ(a.rope_scaling().kind, hf::detail::RopeScaling::Kind::Llama3);
  EXPECT_EQ(b.rope_scaling().original_max_position_embeddings, 8);
  EXPECT_EQ(b.rope_theta(), 500000.0);
  const auto written = nlohmann::json::parse(b.to_json()).at("rope_parameters");
  EXPECT_EQ(written.at("rope_type"), "llama3");
  EXPECT_EQ(written.at("high_freq_factor"), 4.0);
  EXPECT_EQ(hf::LlamaConfig::parse(b.to_json(), "c").rope_scaling().low_freq_factor, 1.0);

  const hf::detail::RotaryEmbedding plain(8, 10000.0);
  hf::detail::RopeScaling linear;
  linear.kind = hf::detail::RopeScaling::Kind::Linear;
  linear.factor = 2.0;
  const hf::detail::RotaryEmbedding scaled(8, 10000.0, linear);
  const auto like = torch::zeros({1});
  const auto [plain_cos, plain_sin] = plain.cos_sin(8, like);
  const auto [scaled_cos, scaled_sin] = scaled.cos_sin(16, like);
  EXPECT_TRUE(torch::allclose(scaled_cos.index({torch::indexing::Slice(0, 16, 2)}), plain_cos, 1e-6, 1e-6));
  EXPECT_FALSE(torch::allclose(scaled_cos.narrow(0, 0, 8), plain_cos, 1e-3, 1e-3));
}
