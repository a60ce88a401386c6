// The retriever's encoder, batching, checkpoints and training runs (small, seconds each).
#include "retriever/batching.h"
#include "retriever/checkpoint.h"
#include "retriever/encoder.h"
#include "retriever/files.h"
#include "retriever/trainer.h"

#include <gradcache/gradcache.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
namespace gr = gradcache::retriever;

namespace {

// A scratch directory removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("gradcache_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A tiny retrieval task: each query names an animal and a colour; its passage says the same
// in other words. Written as TSV training pairs and an evaluation set.
void write_task(const TempDir& dir, int pairs = 96) {
  const char* animals[] = {"cat", "dog", "fox", "owl", "eel", "bee", "elk", "yak", "ram", "hen", "cod", "ant"};
  const char* colours[] = {"red", "blue", "green", "black", "white", "pink", "grey", "gold"};
  std::ostringstream train, corpus, queries, qrels;
  for (int i = 0; i < pairs; ++i) {
    const std::string a = animals[i % 12], c = colours[(i / 12) % 8];
    const std::string q = "which " + a + " is " + c + " number " + std::to_string(i % 5);
    const std::string p = "the " + c + " " + a + " lives here " + std::to_string(i % 5);
    train << q << "\t" << p << "\n";
    corpus << "d" << i << "\t" << p << "\n";
    queries << "q" << i << "\t" << q << "\n";
    qrels << "q" << i << " 0 d" << i << " 1\n";
  }
  write(dir / "train.tsv", train.str());
  write(dir / "corpus.tsv", corpus.str());
  write(dir / "queries.tsv", queries.str());
  write(dir / "qrels.txt", qrels.str());
}

gr::TrainConfig tiny_config(const TempDir& dir) {
  gr::TrainConfig c;
  c.train_file = dir / "train.tsv";
  c.eval_corpus = dir / "corpus.tsv";
  c.eval_queries = dir / "queries.tsv";
  c.eval_qrels = dir / "qrels.txt";
  c.vocab_size = 40;
  c.dim = 16;
  c.heads = 2;
  c.layers = 1;
  c.ffn_dim = 32;
  c.batch_size = 32;
  c.chunk_size = 8;
  c.max_steps = 6;
  c.lr = 5e-3;
  c.log_every = 2;
  c.output = dir / "run";
  return c;
}

gr::TrainOptions quiet() {
  static std::ostringstream sink;
  gr::TrainOptions o;
  o.log = &sink;
  return o;
}

std::vector<torch::Tensor> weights(const std::string& checkpoint) {
  auto info = gr::read_checkpoint_info(checkpoint);
  auto model = gr::load_model(checkpoint, info);
  std::vector<torch::Tensor> out;
  for (auto& [name, t] : model.named_state()) out.push_back(t.clone());
  return out;
}

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Encoder, PaddingDoesNotChangeTheRepresentation) {
  torch::manual_seed(0);
  gr::TransformerEncoder enc(gr::EncoderOptions(50).dim(16).heads(4).layers(2).ffn_dim(32).max_len(12));
  enc->eval();
  std::vector<std::vector<int64_t>> tokens{{5, 6, 7}, {8, 9}, {10, 11, 12, 13, 14}};
  auto padded = gr::pad_batch(tokens, {0, 1});  // padded to 3
  auto wider = gr::pad_batch(tokens, {0, 1, 2});  // padded to 5
  torch::NoGradGuard no_grad;
  auto a = enc(padded);
  auto b = enc(wider).slice(0, 0, 2);
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{2, 16}));
  EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(a.norm(2, 1), torch::ones({2}), 1e-5, 1e-6));  // L2-normalised
}

TEST(Batching, ChunksArePaddedToTheirOwnLongestSequence) {
  std::vector<std::vector<int64_t>> tokens{{1, 2}, {3}, {4, 5, 6, 7, 8, 9}, {10, 11, 12}};
  auto batch = gr::pad_batch(tokens, {0, 1, 2, 3});
  EXPECT_EQ(batch.at("input_ids").size(1), 6);
  auto chunks = gr::split_and_trim(gradcache::ModelInput(batch), 2);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].kwarg("input_ids").size(1), 2);  // {1,2},{3}: longest 2, not 6
  EXPECT_EQ(chunks[1].kwarg("input_ids").size(1), 6);
  EXPECT_TRUE(torch::equal(chunks[0].kwarg("input_ids"), torch::tensor({1, 2, 3, 0}, torch::kLong).view({2, 2})));
}

TEST(Batching, GradCacheWithTrimmedChunksGivesFullBatchGradients) {
  // The CLI's cache step: a shared Transformer encoder, dropout on, chunks trimmed of padding.
  torch::manual_seed(1);
  gr::TransformerEncoder enc(gr::EncoderOptions(40).dim(16).heads(2).layers(1).ffn_dim(32).max_len(10).dropout(0.1));
  std::vector<std::vector<int64_t>> tokens;
  for (int i = 0; i < 12; ++i) {
    std::vector<int64_t> seq;
    for (int j = 0; j < 1 + (i * 7) % 9; ++j) seq.push_back(1 + (i * 3 + j) % 39);
    tokens.push_back(seq);
  }
  auto q = gr::pad_batch(tokens, {0, 1, 2, 3, 4, 5}), p = gr::pad_batch(tokens, {6, 7, 8, 9, 10, 11});
  gradcache::SimpleContrastiveLoss loss(gradcache::ContrastiveLossOptions().temperature(0.1));
  // Reference: the same trimmed chunks with grad, in order, one backward over the whole batch.
  torch::manual_seed(5);
  std::vector<torch::Tensor> qs, ps;
  auto as_batch = [](const gradcache::ModelInput& c) {
    return gr::TokenBatch{{"input_ids", c.kwarg("input_ids")}, {"attention_mask", c.kwarg("attention_mask")}};
  };
  for (auto& c : gr::split_and_trim(q, 4)) qs.push_back(enc(as_batch(c)));
  for (auto& c : gr::split_and_trim(p, 4)) ps.push_back(enc(as_batch(c)));
  loss(torch::cat(qs), torch::cat(ps)).backward();
  std::vector<torch::Tensor> full;
  for (auto& t : enc->parameters()) {
    full.push_back(t.grad().clone());
    t.mutable_grad() = torch::Tensor();
  }
  torch::manual_seed(5);
  gradcache::GradCache cache({enc, enc}, 4, loss, gradcache::GradCacheOptions().split_input_fn(gr::split_and_trim));
  cache({q, p});
  double diff = 0, scale = 0;
  auto params = enc->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    diff = std::max(diff, (params[i].grad() - full[i]).abs().max().item<double>());
    scale = std::max(scale, full[i].abs().max().item<double>());
  }
  EXPECT_LT(diff / scale, 1e-5);  // float32 summation order, as in test_grad_cache.cpp
}

TEST(Trainer, WritesEverythingUnderOutputAndLearns) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.max_steps = 30;
  auto result = gr::train(config, quiet());
  for (const char* f : {"config.json", "tokenizer.model", "checkpoint.pt", "metrics.jsonl", "summary.json"}) {
    EXPECT_TRUE(fs::exists(dir / ("run/" + std::string(f)))) << f;
  }
  ASSERT_TRUE(result.trained && result.untrained);
  EXPECT_EQ(result.progress.step, 30);
  EXPECT_EQ(result.trained->queries, 96u);
  EXPECT_GT(result.trained->mrr_at_10, result.untrained->mrr_at_10 + 0.1);
  auto summary = nlohmann::json::parse(gr::read_file(dir / "run/summary.json"));
  EXPECT_EQ(summary.at("steps"), 30);
  EXPECT_EQ(nlohmann::json::parse(gr::read_file(dir / "run/config.json")).at("batch_size"), 32);
  std::ifstream metrics(dir / "run/metrics.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(metrics, line)) lines += nlohmann::json::parse(line).contains("loss");
  EXPECT_EQ(lines, 15);  // every 2 steps
}

TEST(Trainer, ResumedRunEndsBitIdenticalToAnUninterruptedOne) {
  for (const char* mode : {"cache", "accumulate"}) {
    TempDir dir;
    write_task(dir);
    auto config = tiny_config(dir);
    config.mode = mode;
    config.eval = false;
    config.output = dir / "straight";
    gr::train(config, quiet());

    config.output = dir / "interrupted";
    auto options = quiet();
    options.stop_after_steps = 4;  // 3 batches per epoch: stops inside the second epoch
    auto first = gr::train(config, options);
    EXPECT_TRUE(first.interrupted);
    EXPECT_EQ(first.progress.step, 4);
    options.stop_after_steps = 0;
    options.resume = true;
    auto second = gr::train(config, options);
    EXPECT_FALSE(second.interrupted);
    EXPECT_EQ(second.progress.step, 6);

    auto a = weights(dir / "straight/checkpoint.pt"), b = weights(dir / "interrupted/checkpoint.pt");
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << mode << " tensor " << i;
  }
}

TEST(Trainer, ModesAgreeWhereTheyShould) {
  // One chunk holding the whole batch: cache, full and accumulate compute the same update.
  TempDir dir;
  write_task(dir);
  std::vector<std::vector<torch::Tensor>> results;
  for (const char* mode : {"full", "cache", "accumulate"}) {
    auto config = tiny_config(dir);
    config.mode = mode;
    config.chunk_size = 64;  // larger than the batch: one chunk
    config.sort_by_length = false;  // accumulate never sorts: keep one order for all
    config.max_steps = 2;
    config.eval = false;
    config.output = dir / mode;
    gr::train(config, quiet());
    results.push_back(weights(dir / (std::string(mode) + "/checkpoint.pt")));
  }
  for (size_t m = 1; m < results.size(); ++m) {
    for (size_t i = 0; i < results[0].size(); ++i) {
      EXPECT_TRUE(torch::allclose(results[m][i], results[0][i], 1e-4, 1e-5)) << "mode " << m << " tensor " << i;
    }
  }
}

TEST(Trainer, RefusesToOverwriteARunAndKeepsItIntact) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.max_steps = 2;
  config.eval = false;
  gr::train(config, quiet());
  const auto before = gr::read_file(dir / "run/checkpoint.pt");
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("already holds a training run"), std::string::npos);
  EXPECT_EQ(gr::read_file(dir / "run/checkpoint.pt"), before);

  auto changed = config;
  changed.batch_size = 16;
  auto options = quiet();
  options.resume = true;
  const auto message = error_of([&] { gr::train(changed, options); });
  EXPECT_NE(message.find("batch_size: checkpoint has 32, now 16"), std::string::npos) << message;
  EXPECT_EQ(gr::read_file(dir / "run/checkpoint.pt"), before);
}

TEST(Trainer, CorruptCheckpointIsRefusedAndLeftAlone) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  fs::create_directories(dir / "run");
  write(dir / "run/checkpoint.pt", "this is not a checkpoint");
  auto options = quiet();
  options.resume = true;
  EXPECT_NE(error_of([&] { gr::train(config, options); }).find("corrupt or not a gradcache checkpoint"),
            std::string::npos);
  EXPECT_EQ(gr::read_file(dir / "run/checkpoint.pt"), "this is not a checkpoint");
  EXPECT_NE(error_of([&] { gr::read_checkpoint_info(dir / "missing.pt"); }).find("no checkpoint at"), std::string::npos);
  options.resume = true;
  config.output = dir / "empty";
  EXPECT_NE(error_of([&] { gr::train(config, options); }).find("holds no checkpoint.pt"), std::string::npos);
}

TEST(Trainer, BadSettingsAndDataAreExplained) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.chunk_size = 0;
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("--chunk-size must be positive"), std::string::npos);
  config = tiny_config(dir);
  config.chunk_size = 1000;  // larger than the batch: allowed, one chunk
  config.max_steps = 1;
  config.eval = false;
  EXPECT_EQ(gr::train(config, quiet()).progress.step, 1);

  write(dir / "bad.tsv", "a query\ta passage\nonly a query\n");
  config = tiny_config(dir);
  config.train_file = dir / "bad.tsv";
  config.output = dir / "bad";
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("bad.tsv:2"), std::string::npos);
  config.train_file = dir / "missing.tsv";
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("missing.tsv"), std::string::npos);
  config = tiny_config(dir);
  config.batch_size = 500;
  config.output = dir / "big";
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("larger than the 96 training examples"),
            std::string::npos);
  config = tiny_config(dir);
  config.negatives = 1;
  config.output = dir / "negs";
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("has no negatives"), std::string::npos);
}

TEST(Trainer, TorchScriptEncoderIsTrainedAndAWrongOneIsRefused) {
  TempDir dir;
  write_task(dir);
  // A TorchScript encoder built in C++ (as one exported from Python would be): embeddings,
  // returning [B, T, d], mean-pooled by the trainer.
  torch::manual_seed(0);  // LibTorch seeds its generator randomly per process
  torch::jit::Module good("Enc");
  good.register_attribute("training", c10::BoolType::get(), true);
  good.register_parameter("emb", torch::randn({60, 8}).mul_(0.1).requires_grad_(), false);
  good.define(R"(
    def forward(self, input_ids, attention_mask):
        return torch.dropout(torch.embedding(self.emb, input_ids), 0.1, self.training)
  )");
  good.save(dir / "good.pt");
  torch::jit::Module bad("Bad");
  bad.register_parameter("w", torch::randn({3}).requires_grad_(), false);
  bad.define(R"(
    def forward(self, x):
        return x * self.w
  )");
  bad.save(dir / "bad.pt");

  auto config = tiny_config(dir);
  config.model = dir / "good.pt";
  config.max_steps = 20;
  config.lr = 0.02;
  auto result = gr::train(config, quiet());
  ASSERT_TRUE(result.trained && result.untrained);
  EXPECT_GT(result.trained->mrr_at_10, result.untrained->mrr_at_10);

  config.model = dir / "bad.pt";
  config.output = dir / "bad_run";
  config.eval = false;
  const auto message = error_of([&] { gr::train(config, quiet()); });
  EXPECT_NE(message.find("forward(input_ids, attention_mask)"), std::string::npos) << message;
}

TEST(Trainer, LearningRateWarmsUpThenDecays) {
  EXPECT_DOUBLE_EQ(gr::lr_factor(0, 100, 10), 0.1);
  EXPECT_DOUBLE_EQ(gr::lr_factor(9, 100, 10), 1.0);
  EXPECT_DOUBLE_EQ(gr::lr_factor(10, 100, 10), 1.0);
  EXPECT_DOUBLE_EQ(gr::lr_factor(99, 100, 10), 1.0 / 90);
  EXPECT_DOUBLE_EQ(gr::lr_factor(0, 5, 0), 1.0);
}

TEST(Batching, TokenBudgetChunksKeepOrderAndStayWithinTheBudget) {
  std::vector<std::vector<int64_t>> tokens{{1}, {2}, {3, 3}, {4, 4}, {5, 5, 5}, {6, 6, 6, 6, 6, 6, 6}, {7}};
  auto batch = gr::pad_batch(tokens, {0, 1, 2, 3, 4, 5, 6});
  auto chunks = gr::split_by_tokens(6)(gradcache::ModelInput(batch), /*max_rows=*/100);
  std::vector<int64_t> rows, widths;
  torch::Tensor ids;
  for (const auto& c : chunks) {
    rows.push_back(c.kwarg("input_ids").size(0));
    widths.push_back(c.kwarg("input_ids").size(1));
    EXPECT_TRUE(c.kwarg("input_ids").size(0) == 1 || rows.back() * widths.back() <= 6);
    ids = ids.defined() ? torch::cat({ids, c.kwarg("input_ids").select(1, 0)}) : c.kwarg("input_ids").select(1, 0);
  }
  // {1},{2},{3,3} fit 3x2 = 6; {4,4},{5,5,5} fit 2x3 = 6; {6 x7} alone (longer than the budget); {7}.
  EXPECT_EQ(rows, (std::vector<int64_t>{3, 2, 1, 1}));
  EXPECT_EQ(widths, (std::vector<int64_t>{2, 3, 7, 1}));
  EXPECT_TRUE(torch::equal(ids, torch::tensor({1, 2, 3, 4, 5, 6, 7}, torch::kLong)));  // order kept
  EXPECT_EQ(gr::split_by_tokens(100)(gradcache::ModelInput(batch), /*max_rows=*/2).size(), 4u);  // row cap
  EXPECT_EQ(gr::sorted_by_length(tokens, {5, 0, 2, 4}), (std::vector<int64_t>{0, 2, 4, 5}));
}

TEST(TrainConfig, SizesInBytes) {
  EXPECT_EQ(gr::parse_bytes("1024", "--x"), 1024);
  EXPECT_EQ(gr::parse_bytes("512M", "--x"), int64_t{512} << 20);
  EXPECT_EQ(gr::parse_bytes("2G", "--x"), int64_t{2} << 30);
  EXPECT_EQ(gr::parse_bytes("1.5GiB", "--x"), int64_t{3} << 29);
  EXPECT_EQ(gr::parse_bytes("64kb", "--x"), 64 << 10);
  EXPECT_NE(error_of([] { gr::parse_bytes("12X", "--memory-budget"); }).find("--memory-budget takes a size"),
            std::string::npos);
  EXPECT_NE(error_of([] { gr::parse_bytes("-5M", "--x"); }).find("takes a size"), std::string::npos);
}

TEST(Batching, TokenBudgetAndRetainedChunksGiveFullBatchGradients) {
  torch::manual_seed(2);
  gr::TransformerEncoder enc(gr::EncoderOptions(40).dim(16).heads(2).layers(1).ffn_dim(32).max_len(10).dropout(0));
  std::vector<std::vector<int64_t>> tokens;
  for (int i = 0; i < 16; ++i) tokens.push_back(std::vector<int64_t>(1 + (i * 5) % 9, 1 + i));
  std::vector<int64_t> q_rows{0, 1, 2, 3, 4, 5, 6, 7}, p_rows{8, 9, 10, 11, 12, 13, 14, 15};
  auto q = gr::pad_batch(tokens, gr::sorted_by_length(tokens, q_rows)), p = gr::pad_batch(tokens, p_rows);
  gradcache::SimpleContrastiveLoss loss(gradcache::ContrastiveLossOptions().temperature(0.1));
  loss(enc(q), enc(p)).backward();  // a real full-batch backward
  std::vector<torch::Tensor> full;
  for (auto& t : enc->parameters()) {
    full.push_back(t.grad().clone());
    t.mutable_grad() = torch::Tensor();
  }
  gradcache::GradCache cache({enc, enc}, 8, loss,
                             gradcache::GradCacheOptions().split_input_fn(gr::split_by_tokens(20)).retain_chunks(2));
  cache({q, p});
  double diff = 0, scale = 0;
  auto params = enc->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    diff = std::max(diff, (params[i].grad() - full[i]).abs().max().item<double>());
    scale = std::max(scale, full[i].abs().max().item<double>());
  }
  EXPECT_LT(diff / scale, 1e-5);  // float32 summation order, as in test_grad_cache.cpp
}

TEST(Trainer, AutomaticChunkSizesAreMeasuredOnceAndKeptOnResume) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.chunk_size_auto = true;
  config.memory_budget = int64_t{200} << 10;  // small enough to need several chunks
  config.retain_memory = int64_t{200} << 10;
  config.eval = false;
  auto options = quiet();
  options.stop_after_steps = 2;
  const auto first = gr::train(config, options);
  EXPECT_GE(first.config.chunk_size, 4);
  EXPECT_LT(first.config.chunk_size, 32);
  EXPECT_EQ(nlohmann::json::parse(gr::read_file(dir / "run/config.json")).at("chunk_size"), first.config.chunk_size);
  options.stop_after_steps = 0;
  options.resume = true;
  const auto second = gr::train(config, options);
  EXPECT_EQ(second.progress.step, 6);
  EXPECT_EQ(second.config.chunk_size, first.config.chunk_size);
  EXPECT_EQ(second.config.passage_chunk_size, first.config.passage_chunk_size);
}

TEST(Trainer, Bf16RunTrainsAndResumesBitIdentically) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.precision = "bf16";
  config.eval = false;
  config.output = dir / "straight";
  auto straight = gr::train(config, quiet());
  EXPECT_TRUE(std::isfinite(straight.final_loss));
  auto summary = nlohmann::json::parse(gr::read_file(dir / "straight/summary.json"));
  EXPECT_EQ(summary.at("precision"), "bf16");
  EXPECT_EQ(gr::read_checkpoint_info(dir / "straight/checkpoint.pt").config.precision, "bf16");

  // bf16 computes something else than fp32 (autocast really was on).
  config.precision = "fp32";
  config.output = dir / "fp32";
  gr::train(config, quiet());
  auto a = weights(dir / "straight/checkpoint.pt"), f = weights(dir / "fp32/checkpoint.pt");
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) differs = differs || !torch::equal(a[i], f[i]);
  EXPECT_TRUE(differs);

  // A resumed bf16 run ends where the uninterrupted one did; it may not switch precision.
  config.precision = "bf16";
  config.output = dir / "interrupted";
  auto options = quiet();
  options.stop_after_steps = 4;
  gr::train(config, options);
  options.stop_after_steps = 0;
  options.resume = true;
  auto other = config;
  other.precision = "fp32";
  EXPECT_NE(error_of([&] { gr::train(other, options); }).find("precision"), std::string::npos);
  gr::train(config, options);
  auto b = weights(dir / "interrupted/checkpoint.pt");
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "tensor " << i;
}

TEST(Trainer, PrecisionIsValidated) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.precision = "fp8";
  EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("--precision must be fp32, bf16 or fp16"),
            std::string::npos);
  if (!gradcache::autocast_supported(gradcache::Precision::fp16, c10::kCPU)) {
    config.precision = "fp16";
    EXPECT_NE(error_of([&] { gr::train(config, quiet()); }).find("use --precision bf16 on CPU"), std::string::npos);
  }
}

// fp16 needs CUDA here, so the scaler's trip through a checkpoint is tested on the functions
// the trainer uses: what save_checkpoint writes, load_training_state restores.
TEST(Checkpoint, LossScalerStateRoundTrip) {
  TempDir dir;
  gr::TrainConfig config;
  config.vocab_size = 40;
  config.dim = 16;
  config.heads = 2;
  config.layers = 1;
  config.ffn_dim = 32;
  config.precision = "fp16";
  auto model = gr::build_model(config);
  torch::optim::AdamW optimizer(model.parameters(), torch::optim::AdamWOptions(1e-3));
  gradcache::GradScaler scaler(gradcache::GradScalerOptions().init_scale(1024).growth_interval(5));
  scaler.update(4096);  // and a growth count of 2:
  for (int i = 0; i < 2; ++i) {
    optimizer.zero_grad();
    for (auto& p : model.parameters()) p.mutable_grad() = torch::ones_like(p);
    scaler.step(optimizer);
    scaler.update();
  }
  gr::CheckpointInfo info;
  info.config = config;
  const auto path = dir / "checkpoint.pt";
  gr::save_checkpoint(path, info, model, optimizer, gr::capture_generators(torch::kCPU), &scaler);

  gradcache::GradScaler restored;
  torch::optim::AdamW fresh(model.parameters(), torch::optim::AdamWOptions(1e-3));
  gr::load_training_state(path, fresh, torch::kCPU, 0, &restored);
  EXPECT_EQ(restored.get_scale(), 4096);
  EXPECT_EQ(restored.growth_tracker(), 2);
  EXPECT_EQ(restored.options().growth_interval(), 5);

  // A checkpoint without a scaler (an fp32 or bf16 run) cannot feed one.
  gr::save_checkpoint(path, info, model, optimizer, gr::capture_generators(torch::kCPU));
  gradcache::GradScaler missing;
  EXPECT_NE(error_of([&] { gr::load_training_state(path, fresh, torch::kCPU, 0, &missing); }).find("loss scaler"),
            std::string::npos);
}
