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
#include <gradcache/hf/frozen_weights.h>
#include <gradcache/hf/lora.h>

#include "hf/model_json.h"

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
// Set here rather than by the environment, which ctest could not pass (gtest_discover_tests, used before, split it) with the
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
// What a cache-step test trains: every weight; LoRA adapters on the frozen model; the same with
// the frozen matrices held in bf16 (hf/frozen_weights.h).
enum class Trained { Everything, Lora, LoraOnBf16Base };

static double cache_step_error(const std::string& dir, bool decoder, Trained trained, bool reseed_cache = false) {
  torch::manual_seed(7);
  const auto config = nlohmann::json::parse(std::ifstream(dir + "/model/config.json"));
  const int64_t pad = config.value("pad_token_id", nlohmann::json()).is_number() ? config["pad_token_id"].get<int64_t>() : 0;
  auto model = hf::load_sentence_transformer(dir + "/st");
  if (trained != Trained::Everything) {
    for (auto& p : model->parameters()) p.requires_grad_(false);
    hf::add_lora(model->transformer(), hf::LoraOptions(4).alpha(8).dropout(0.1));
    torch::NoGradGuard no_grad;
    for (auto& item : model->named_parameters())
      if (item.key().find("lora_B") != std::string::npos) item.value().normal_(0.0, 0.2);
  }
  if (trained == Trained::LoraOnBf16Base) {
    EXPECT_GT(hf::hold_frozen_weights_in(model->transformer(), at::kBFloat16), 0);
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
  const double error = cache_step_error(dir(), decoder, Trained::Everything);
  std::cout << "[" << GetParam() << "] cache step vs full batch, dropout on, 12 pairs in chunks of 4: max relative gradient error "
            << error << std::endl;
  EXPECT_LT(error, kCacheTolerance);
}

TEST_P(Architecture, LoraCacheStepEqualsFullBatchWithDropout) {
  // The adapters' gradients (the only ones: the base is frozen), LoRA dropout replayed with the
  // model's; drawn from another seed, the cache step's masks differ and so do its gradients.
  const bool decoder = expected_.metadata.at("side") == "left";
  const double error = cache_step_error(dir(), decoder, Trained::Lora);
  std::cout << "[" << GetParam() << "] LoRA cache step vs full batch, dropout on: max relative gradient error " << error
            << std::endl;
  EXPECT_LT(error, kCacheTolerance);
  EXPECT_GT(cache_step_error(dir(), decoder, Trained::Lora, /*reseed_cache=*/true), 100 * kCacheTolerance);
}

TEST_P(Architecture, LoraOnABf16BaseIsExactThroughTheCacheAndComputesWithTheRoundedWeights) {
  // --base-precision bf16: the frozen matrices held in bf16 (half their bytes) compute what an
  // fp32 model with the bf16-rounded weights computes (the products stay fp32), and the cache
  // step is as exact as with an fp32 base; another seed for the cache step is the control.
  const bool decoder = expected_.metadata.at("side") == "left";
  const double error = cache_step_error(dir(), decoder, Trained::LoraOnBf16Base);
  std::cout << "[" << GetParam() << "] LoRA on a bf16 base, cache step vs full batch: max relative gradient error "
            << error << std::endl;
  EXPECT_LT(error, kCacheTolerance);
  EXPECT_GT(cache_step_error(dir(), decoder, Trained::LoraOnBf16Base, /*reseed_cache=*/true), 100 * kCacheTolerance);

  auto held = hf::load_transformer(dir() + "/model"), rounded = hf::load_transformer(dir() + "/model");
  int64_t bytes_before = 0, bytes_after = 0, matrices = 0;
  for (const auto& p : held->parameters()) bytes_before += p.numel() * p.element_size();
  for (auto* model : {held.get(), rounded.get()}) {
    for (auto& p : model->parameters()) p.requires_grad_(false);
  }
  const int64_t converted = hf::hold_frozen_weights_in(*held, at::kBFloat16);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : rounded->parameters()) {
      if (p.dim() != 2) continue;
      p.copy_(p.to(at::kBFloat16));
      matrices += p.numel();
    }
  }
  for (const auto& p : held->parameters()) bytes_after += p.numel() * p.element_size();
  EXPECT_EQ(converted, matrices) << "every matrix (linear weights, embedding tables) and nothing else";
  EXPECT_LT(bytes_after, bytes_before * 0.6);
  const auto mask = expected("attention_mask");
  const auto reference = encode(*rounded);
  const auto [difference, size] = real_token_error(encode(*held), reference, mask);
  std::cout << "[" << GetParam() << "] bf16-held base vs fp32 with rounded weights: max difference " << difference << std::endl;
  EXPECT_LT(difference, kTolerance * std::max(1.0, size));
  auto plain = hf::load_transformer(dir() + "/model");  // control: the unrounded model differs
  EXPECT_GT(real_token_error(encode(*plain), reference, mask).first, 10 * kTolerance * std::max(1.0, size));
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
