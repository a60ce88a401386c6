// Training a part of the encoder (--train-params, --freeze-embeddings; issue 39): BitFit's
// bias-only rule picks exactly the parameters named "bias"; a cache step with dropout on gives the
// trained parameters the full batch's gradients and the frozen ones none; after training every
// frozen weight is bit-identical and the optimizer holds state for the trained ones only.
#include "retriever/config/train_config.h"
#include "retriever/model/batching.h"
#include "retriever/model/pretrained.h"
#include "retriever/model/trainable_parameters.h"
#include "retriever/run/build_model.h"
#include "retriever/train/training_state.h"
#include "retriever/train/training_step.h"
#include "tests/core/test_util.h"
#include "tests/retriever/pretrained_test_util.h"
#include "tests/retriever/train_test_util.h"

#include <gradcache/gradcache.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gr = gradcache::retriever;
namespace hf = gradcache::hf;

namespace {

using pretrained_test::kTinyBert;
using PretrainedFixture = pretrained_test::Fixture;


// Max relative error over the gradients both define.
double max_rel_error(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  std::vector<torch::Tensor> x, y;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].defined() && b[i].defined()) {
      x.push_back(a[i]);
      y.push_back(b[i]);
    }
  }
  return gctest::max_rel_error(x, y);
}

}  // namespace

TEST(Trainable, BiasRuleIsSgptsAndTheEmbeddingsAreFoundByNameOrModule) {
  const gr::TrainableParameters bias{"bias", false};
  EXPECT_TRUE(gr::trains(bias, "encoder.layer.0.attention.self.query.bias", false));
  EXPECT_TRUE(gr::trains(bias, "h.0.self_attention.query_key_value.bias", false));
  EXPECT_FALSE(gr::trains(bias, "encoder.layer.0.attention.self.query.weight", false));
  const gr::TrainableParameters anchored{"^layers\\.1\\.", true};
  EXPECT_TRUE(gr::trains(anchored, "layers.1.mlp.up_proj.weight", false));
  EXPECT_FALSE(gr::trains(anchored, "layers.11.mlp.up_proj.weight", false));
  EXPECT_FALSE(gr::trains(anchored, "layers.1.embed_hack.weight", true));  // --freeze-embeddings wins
  EXPECT_EQ(gr::pattern_error("bias"), "");
  EXPECT_NE(gr::pattern_error("(unclosed"), "");

  // The flag: "all" is everything, a broken pattern is refused naming the flag.
  const nlohmann::json none = nlohmann::json::object();
  EXPECT_TRUE(gr::build_train_config(none, {{"train_params", "all"}}).encoder.trainable().everything());
  auto bad = gr::build_train_config(none, {{"train_params", "(unclosed"}});
  const auto message = train_test::error_of([&] { gr::validate(bad); });
  EXPECT_NE(message.find("--train-params is not a regular expression"), std::string::npos) << message;

  // The built-in encoder's embeddings are torch::nn::Embedding modules named "tokens" and "positions".
  const gr::TrainConfig c = train_test::tiny_model_config();
  gr::BiEncoder builtin = gr::build_model(c);
  const auto counts = gr::select_trainable(builtin, {"", true});
  for (const auto& kv : builtin.builtin_encoders()[0]->named_parameters()) {
    const bool embedding = kv.key().rfind("tokens.", 0) == 0 || kv.key().rfind("positions.", 0) == 0;
    EXPECT_EQ(kv.value().requires_grad(), !embedding) << kv.key();
  }
  EXPECT_EQ(counts.frozen, (40 + std::max(c.tokenizer.query_max_len, c.tokenizer.passage_max_len)) * 16);
  // Nothing left to train is refused, naming the flag.
  const auto none_left = train_test::error_of([&] { gr::select_trainable(builtin, {"no_such_name", false}); });
  EXPECT_NE(none_left.find("--train-params no_such_name leaves no parameter of the encoder to train"),
            std::string::npos)
      << none_left;
}

// Tolerance kTol32: only the order of fp32 summations differs (test_pretrained.cpp).
TEST(Trainable, BiasOnlyCacheStepEqualsFullBatchWithDropoutOn) {
  PretrainedFixture f;
  f.model.train(true);
  const auto counts = gr::select_trainable(f.model, {"bias", false});
  for (const auto& kv : f.loaded.module->named_parameters())
    EXPECT_EQ(kv.value().requires_grad(), kv.key().find("bias") != std::string::npos) << kv.key();
  EXPECT_GT(counts.frozen, 10 * counts.trained);

  const auto full = f.all_gradients(gr::StepOptions().mode(gr::TrainMode::Full));
  // One chunk per side: step 1's masks, the replay's and the full pass's are the same draws.
  const auto cache =
      f.all_gradients(gr::StepOptions().mode(gr::TrainMode::Cache).chunk_size(6).split_input_fn(gr::split_and_trim));
  // The pooler is not on the path of mean pooling: it gets no gradient, trained or not.
  const auto names = f.loaded.module->named_parameters();
  const auto used = [&](size_t i) { return names[i].key().find("pooler") == std::string::npos; };
  for (size_t i = 0; i < names.size(); ++i) {
    const bool trained = names[i].key().find("bias") != std::string::npos && used(i);
    EXPECT_EQ(cache[i].defined(), trained) << names[i].key();
    EXPECT_EQ(full[i].defined(), trained) << names[i].key();
  }
  gctest::report_error("bias-only BERT: cache vs full, dropout 0.1", max_rel_error(cache, full));
  EXPECT_LT(max_rel_error(cache, full), gctest::kTol32);
  // Negative control: another generator state for the replay gives other dropout masks.
  const auto other = f.all_gradients(gr::StepOptions().mode(gr::TrainMode::Cache).chunk_size(6), /*seed=*/12);
  EXPECT_GT(max_rel_error(other, full), 1e-3);

  // Several chunks (dropout off: chunking changes which draws a row gets) and --freeze-embeddings.
  f.model.train(false);
  gr::select_trainable(f.model, {"", true});
  const auto full_all = f.all_gradients(gr::StepOptions().mode(gr::TrainMode::Full));
  const auto chunked = f.all_gradients(gr::StepOptions().mode(gr::TrainMode::Cache).chunk_size(2).passage_chunk_size(4));
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(chunked[i].defined(), names[i].key().find("embeddings.") == std::string::npos && used(i))
        << names[i].key();
  EXPECT_LT(max_rel_error(chunked, full_all), gctest::kTol32);
}

TEST(Trainable, FrozenWeightsStayBitIdenticalAndTheOptimizerHoldsOnlyTheTrainedOnes) {
  train_test::TempDir dir;
  train_test::write_task(dir);
  auto config = train_test::tiny_config(dir);
  config.encoder.train_params = "bias";
  config.eval.enabled = false;
  const auto result = gr::train(config, train_test::quiet());
  // The initial model: what TrainingModel builds from the seed.
  torch::manual_seed(result.config.training.seed);
  const gr::BiEncoder initial = gr::build_model(result.config);
  std::map<std::string, torch::Tensor> before;
  for (const auto& [name, t] : initial.named_state()) before[name] = t;
  auto info = gr::read_checkpoint_info(result.checkpoint);
  const auto trained = gr::load_model(result.checkpoint, info);
  int changed_biases = 0;
  for (const auto& [name, t] : trained.named_state()) {
    ASSERT_TRUE(before.count(name)) << name;
    if (name.find("bias") == std::string::npos) {
      EXPECT_TRUE(torch::equal(t, before[name])) << name << " is frozen, yet changed";
    } else {
      changed_biases += !torch::equal(t, before[name]);
    }
  }
  EXPECT_GT(changed_biases, 0);

  // The optimizer's state: one entry per bias after a step, none for the frozen weights.
  gr::TrainingModel model(result.config, torch::kCPU, nullptr, 0, {});
  const auto parameters = model.model().parameters();
  for (const auto& p : parameters) p.mutable_grad() = torch::ones_like(p);
  model.prepare_step(1e-3);
  for (const auto& p : parameters) p.mutable_grad() = torch::ones_like(p);
  model.update(0);
  int64_t biases = 0;
  for (const auto& kv : model.model().builtin_encoders()[0]->named_parameters())
    biases += kv.key().find("bias") != std::string::npos;
  EXPECT_EQ(static_cast<int64_t>(parameters.size()), biases);
  EXPECT_EQ(static_cast<int64_t>(model.optimizer().state().size()), biases);
}

TEST(Trainable, ACheckpointLeavesTheFrozenWeightsToItsBaseAndChecksThem) {
  namespace fs = std::filesystem;
  train_test::TempDir dir;
  train_test::write_task(dir);
  const std::string base = dir / "base";
  fs::copy(kTinyBert, base, fs::copy_options::recursive);
  auto config = gr::pretrained_defaults(false);
  config.data.train_file = dir / "train.tsv";
  config.encoder.pretrained = base;
  config.encoder.train_params = "bias";
  config.batching.batch_size = 16;
  config.batching.chunk_size = 8;
  config.training.steps = 2;
  config.training.lr = 1e-2;
  config.eval.enabled = false;
  config.output.dir = dir / "run";
  const auto bias_only = gr::train(config, train_test::quiet());
  auto everything = config;
  everything.encoder.train_params = "";
  everything.output.dir = dir / "full";
  const auto full = gr::train(everything, train_test::quiet());
  // What trained and its optimizer state, not the model: several times smaller here, a few MB of
  // a 0.6B decoder's 2.4 GB.
  EXPECT_LT(2 * fs::file_size(bias_only.checkpoint), fs::file_size(full.checkpoint));

  // Read back, the frozen weights are the base's and the biases are the trained ones.
  const auto base_weights = hf::load_transformer(base)->named_parameters();
  auto info = gr::read_checkpoint_info(bias_only.checkpoint);
  const auto model = gr::load_model(bias_only.checkpoint, info);
  int moved = 0;
  for (const auto& kv : model.pretrained_encoders()[0]->transformer().named_parameters()) {
    if (kv.key().find("bias") == std::string::npos) {
      EXPECT_TRUE(torch::equal(kv.value(), base_weights[kv.key()])) << kv.key();
    } else {
      moved += !torch::equal(kv.value(), base_weights[kv.key()]);
    }
  }
  EXPECT_GT(moved, 0);

  // A base whose frozen weights changed is refused, naming it; so is a base that is gone.
  auto changed = hf::load_transformer(base);
  for (auto& kv : changed->named_parameters()) {
    if (kv.key().find("word_embeddings") == std::string::npos) continue;
    torch::NoGradGuard no_grad;
    kv.value().view(-1)[0] += 1e-3;
  }
  hf::save_transformer(*changed, base);
  auto message = train_test::error_of([&] { gr::load_model(bias_only.checkpoint, info); });
  EXPECT_NE(message.find("frozen weights in the base model " + fs::absolute(base).lexically_normal().string()),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("whose weights have changed since the run"), std::string::npos) << message;
  fs::remove_all(base);
  message = train_test::error_of([&] { gr::load_model(bias_only.checkpoint, info); });
  EXPECT_NE(message.find("which cannot be read"), std::string::npos) << message;
  // The full run's checkpoint holds everything and needs no base.
  auto full_info = gr::read_checkpoint_info(full.checkpoint);
  EXPECT_NO_THROW(gr::load_model(full.checkpoint, full_info));
}

TEST(Trainable, ARelativeModelDirIsRecordedAbsoluteSoThatAResumeFromElsewhereFindsIt) {
  namespace fs = std::filesystem;
  train_test::TempDir dir;
  train_test::write_task(dir);
  fs::copy(kTinyBert, dir / "base", fs::copy_options::recursive);
  auto config = gr::pretrained_defaults(false);
  config.data.train_file = dir / "train.tsv";
  config.encoder.pretrained = "base";  // relative to the directory the run starts in
  config.encoder.train_params = "bias";
  config.batching.batch_size = 16;
  config.batching.chunk_size = 8;
  config.training.steps = 1;
  config.eval.enabled = false;
  config.output.dir = dir / "run";
  const fs::path started_in = fs::current_path();
  fs::current_path(dir.path);
  std::string checkpoint;
  try {
    checkpoint = gr::train(config, train_test::quiet()).checkpoint;
  } catch (...) {
    fs::current_path(started_in);
    throw;
  }
  fs::current_path(started_in);  // elsewhere now: "base" names nothing here
  auto info = gr::read_checkpoint_info(checkpoint);
  ASSERT_TRUE(info.pretrained.has_value());
  EXPECT_EQ(info.pretrained->source, (dir.path / "base").lexically_normal().string());
  EXPECT_NO_THROW(gr::load_model(checkpoint, info));
}

namespace {

// A LoRA run of `steps` steps on tiny BERT (rank 4, LoRA dropout 0.1) over the task written in `dir`.
gr::TrainConfig lora_config(const train_test::TempDir& dir, int64_t steps) {
  train_test::write_task(dir);
  auto config = gr::pretrained_defaults(false);
  config.data.train_file = dir / "train.tsv";
  config.encoder.pretrained = kTinyBert;
  config.encoder.lora.rank = 4;
  config.encoder.lora.dropout = 0.1;
  config.batching.batch_size = 16;
  config.batching.chunk_size = 8;
  config.training.steps = steps;
  config.training.lr = 1e-2;
  config.eval.enabled = false;
  return config;
}

}  // namespace

TEST(Trainable, LoraTrainsTheAdaptersAloneAndACheckpointHoldsThemWithItsBasesDigest) {
  // --lora-rank 4 --lora-dropout 0.1 on tiny BERT: the model's own weights stay the base's bit for
  // bit, the adapters' B moves from zero, the optimizer holds state for the adapters only, and
  // the checkpoint holds the adapters (the base read again, checked by its digest).
  namespace fs = std::filesystem;
  train_test::TempDir dir;
  auto config = lora_config(dir, 2);
  config.encoder.lora.alpha = 8;
  config.output.dir = dir / "run";
  const auto result = gr::train(config, train_test::quiet());
  auto info = gr::read_checkpoint_info(result.checkpoint);
  ASSERT_TRUE(info.pretrained && info.pretrained->lora);
  EXPECT_EQ(info.pretrained->lora->rank(), 4);
  EXPECT_EQ(info.pretrained->lora->targets(), hf::default_lora_targets("bert"));
  const auto base = hf::load_transformer(kTinyBert)->named_parameters();
  const auto model = gr::load_model(result.checkpoint, info);
  int adapters = 0;
  for (const auto& kv : model.pretrained_encoders()[0]->transformer().named_parameters()) {
    if (kv.key().find(".lora_") == std::string::npos) {
      ASSERT_NE(base.find(kv.key()), nullptr) << kv.key();
      EXPECT_TRUE(torch::equal(kv.value(), base[kv.key()])) << kv.key() << " is frozen, yet changed";
      continue;
    }
    ++adapters;
    if (kv.key().find(".lora_B.") == std::string::npos) continue;
    // Every B moves from zero but the pooler's (PEFT's "dense" matches it; mean pooling leaves it unused).
    const bool moved = kv.value().abs().max().item<double>() > 0;
    EXPECT_EQ(moved, kv.key().rfind("pooler.", 0) != 0) << kv.key();
  }
  EXPECT_GT(adapters, 0);
  // The checkpoint holds the adapters and their optimizer state, not the base: without the base
  // directory it cannot be read.
  const std::string moved_base = dir / "moved_base";
  config.encoder.pretrained = moved_base;
  fs::copy(kTinyBert, moved_base, fs::copy_options::recursive);
  config.output.dir = dir / "run_moved";
  const auto moved_run = gr::train(config, train_test::quiet());
  fs::remove_all(moved_base);
  const auto gone = train_test::error_of([&] { gr::load_model(moved_run.checkpoint, gr::read_checkpoint_info(moved_run.checkpoint)); });
  EXPECT_NE(gone.find("which cannot be read"), std::string::npos) << gone;

  // The optimizer: state for each adapter tensor after a step, none for the model's own.
  auto loaded = gr::load_pretrained(kTinyBert);
  torch::manual_seed(1);
  gr::add_adapters(loaded, result.config.encoder.lora);
  gr::TrainingModel training(result.config, torch::kCPU, nullptr, 0, {}, &loaded);
  const auto parameters = training.model().parameters();
  EXPECT_EQ(static_cast<int>(parameters.size()), adapters);
  for (const auto& p : parameters) p.mutable_grad() = torch::ones_like(p);
  training.prepare_step(1e-3);
  for (const auto& p : parameters) p.mutable_grad() = torch::ones_like(p);
  training.update(0);
  EXPECT_EQ(static_cast<int>(training.optimizer().state().size()), adapters);

  // LoRA with --train-params is refused, naming both.
  auto both = config;
  both.encoder.train_params = "bias";
  const auto message = train_test::error_of([&] { gr::validate(both); });
  EXPECT_NE(message.find("with LoRA only the adapters train"), std::string::npos) << message;
}

TEST(Trainable, ABaseInBf16HoldsTheFrozenMatricesNarrowAndResumesBitIdentically) {
  // --base-precision bf16 with LoRA: the frozen weight matrices (linear layers, embedding tables)
  // held in bf16, the adapters and their optimizer state fp32; the checkpoint's digest is taken at
  // bf16, so the base read again as fp32 passes it; a run stopped after 2 of 3 steps and resumed
  // ends bit for bit where the uninterrupted one does.
  train_test::TempDir dir;
  auto config = lora_config(dir, 3);
  config.encoder.base_precision = gradcache::Precision::bf16;
  config.output.dir = dir / "straight";
  const auto straight = gr::train(config, train_test::quiet());
  config.output.dir = dir / "resumed";
  auto options = train_test::quiet();
  options.stop_after_steps = 2;
  EXPECT_TRUE(gr::train(config, options).interrupted);
  options.stop_after_steps = 0;
  options.resume = true;
  const auto resumed = gr::train(config, options);
  const auto a = gr::load_model(straight.checkpoint, gr::read_checkpoint_info(straight.checkpoint));
  const auto b = gr::load_model(resumed.checkpoint, gr::read_checkpoint_info(resumed.checkpoint));
  const auto sa = a.named_state(), state_b = b.named_state();
  const std::map<std::string, torch::Tensor> sb(state_b.begin(), state_b.end());
  ASSERT_EQ(sa.size(), sb.size());
  int adapters = 0;
  for (const auto& [name, t] : sa) {
    ASSERT_EQ(sb.count(name), 1u) << name;
    EXPECT_TRUE(torch::equal(t, sb.at(name))) << name << " differs after the resume";
    adapters += name.find(".lora_") != std::string::npos;
  }
  EXPECT_GT(adapters, 0);

  // The training model: matrices bf16, adapters and biases fp32, optimizer state fp32, adapters only.
  auto loaded = gr::load_pretrained(kTinyBert);
  torch::manual_seed(1);
  gr::add_adapters(loaded, straight.config.encoder.lora);
  gr::TrainingModel training(straight.config, torch::kCPU, nullptr, 0, {}, &loaded);
  EXPECT_GT(training.trainable().held_narrow, training.trainable().frozen / 2);
  EXPECT_NE(gr::describe(training.trainable(), straight.config.encoder.trainable()).find("held in bf16"), std::string::npos);
  int64_t narrow = 0;
  for (const auto& kv : training.model().pretrained_encoders()[0]->transformer().named_parameters()) {
    const bool adapter = kv.key().find(".lora_") != std::string::npos;
    const bool matrix = kv.value().dim() == 2 && !adapter;
    EXPECT_EQ(kv.value().scalar_type(), matrix ? torch::kBFloat16 : torch::kFloat) << kv.key();
    if (matrix) narrow += kv.value().numel();
  }
  EXPECT_EQ(narrow, training.trainable().held_narrow);
  const auto parameters = training.model().parameters();
  for (const auto& p : parameters) p.mutable_grad() = torch::ones_like(p);
  training.prepare_step(1e-3);
  for (const auto& p : parameters) p.mutable_grad() = torch::ones_like(p);
  training.update(0);
  EXPECT_EQ(static_cast<int>(training.optimizer().state().size()), adapters);
  for (const auto& p : parameters) EXPECT_EQ(p.scalar_type(), torch::kFloat);

  // Every weight training leaves nothing frozen to hold: refused.
  auto everything = config;
  everything.encoder.lora = {};
  const auto message = train_test::error_of([&] { gr::validate(everything); });
  EXPECT_NE(message.find("--base-precision bf16 holds the frozen weights in bf16"), std::string::npos) << message;
}
