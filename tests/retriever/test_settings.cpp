// The settings tables of train and eval: what the flags and config files become.
#include "retriever/commands/evaluate_run.h"
#include "retriever/config/train_config.h"
#include "tests/retriever/train_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace train_test;

TEST(TrainConfig, SizesInBytes) {
  EXPECT_EQ(gr::parse_bytes("1024", "--x"), 1024);
  EXPECT_EQ(gr::parse_bytes("512M", "--x"), int64_t{512} << 20);
  EXPECT_EQ(gr::parse_bytes("2G", "--x"), int64_t{2} << 30);
  EXPECT_EQ(gr::parse_bytes("1.5GiB", "--x"), int64_t{3} << 29);
  EXPECT_EQ(gr::parse_bytes("64kb", "--x"), 64 << 10);
  EXPECT_NE(error_of([] { gr::parse_bytes("12X", "--chunk-memory"); }).find("--chunk-memory takes a size"),
            std::string::npos);
  EXPECT_NE(error_of([] { gr::parse_bytes("-5M", "--x"); }).find("takes a size"), std::string::npos);
}

namespace {

std::string settings_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const gr::SettingsError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TrainConfig, TableDeclaresEverySettingOnceWithHelp) {
  std::set<std::string> keys, flags;
  for (const auto& s : gr::train_settings().settings()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    if (!s.flag.empty()) {
      EXPECT_TRUE(flags.insert(s.flag).second) << s.flag;
    }
    for (const auto& old : s.old_flags) EXPECT_TRUE(flags.insert(old).second) << old;
    EXPECT_FALSE(s.help.empty()) << s.key;
  }
  // config.json holds every key, and reads back to the same settings.
  gr::TrainConfig c;
  c.batching.batch_size = 77;
  c.batching.chunk_memory = 12345;
  c.batching.mode = gr::TrainMode::Accumulate;
  const nlohmann::json j = c;
  EXPECT_EQ(j.size(), keys.size());
  EXPECT_EQ(j.get<gr::TrainConfig>().batching.batch_size, 77);
  EXPECT_EQ(nlohmann::json(j.get<gr::TrainConfig>()), j);
}

// Each choice (--mode, --loss, --precision, --similarity, --on-bad-line) is parsed once, by the
// table, into an enum: config.json keeps its name, any other name is refused from a flag or a
// file alike, with the list, and nothing downstream compares strings.
TEST(TrainConfig, ChoicesAreParsedOnce) {
  const auto c = gr::build_train_config(nlohmann::json{{"loss", "streaming-symmetric"}, {"on_bad_line", "skip"}},
                                        {{"mode", "accumulate"}, {"precision", "bf16"}, {"similarity", "mlp"}});
  EXPECT_EQ(c.batching.mode, gr::TrainMode::Accumulate);
  EXPECT_EQ(c.loss.kind, gr::LossKind::StreamingSymmetric);
  EXPECT_EQ(c.machine.precision, gradcache::Precision::bf16);
  EXPECT_EQ(c.similarity.kind, gr::SimilarityKind::Mlp);
  EXPECT_EQ(c.data.on_bad_line, gr::OnBadLine::Skip);
  const nlohmann::json saved = c;
  EXPECT_EQ(saved.at("mode"), "accumulate");
  EXPECT_EQ(saved.at("loss"), "streaming-symmetric");
  EXPECT_EQ(saved.at("precision"), "bf16");
  EXPECT_EQ(gr::read_saved_config(saved).loss.kind, gr::LossKind::StreamingSymmetric);
  const auto refused = [](const nlohmann::json& file, const gr::GivenSettings& flags) {
    try {
      gr::build_train_config(file, flags);
    } catch (const gr::SettingsError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused(nlohmann::json::object(), {{"mode", "sgd"}}),
            "--mode must be cache, full or accumulate, got \"sgd\"");
  EXPECT_EQ(refused(nlohmann::json{{"similarity", "cosine"}}, {}), "--similarity must be dot or mlp, got \"cosine\"");
  EXPECT_NE(refused(nlohmann::json{{"loss", 3}}, {}).find("wrong type"), std::string::npos);
}

TEST(TrainConfig, FlagsOverrideTheFileWhichOverridesTheDefaults) {
  const auto file = nlohmann::json{{"batch_size", 128}, {"chunk_size", 16}, {"lr", 0.5}};
  const auto c = gr::build_train_config(file, {{"chunk_size", "32"}, {"untie", "true"}, {"retain_memory", "1K"}});
  EXPECT_EQ(c.batching.batch_size, 128);  // file
  EXPECT_EQ(c.batching.chunk_size, 32);   // flag over file
  EXPECT_DOUBLE_EQ(c.training.lr, 0.5);
  EXPECT_TRUE(c.encoder.untie);
  EXPECT_EQ(c.batching.retain_memory, 1024);
  EXPECT_EQ(c.training.steps, gr::TrainConfig{}.training.steps);  // default

  // --quick changes the defaults only.
  const auto q = gr::build_train_config(nlohmann::json{{"batch_size", 64}}, {{"quick", "true"}, {"dim", "32"}});
  EXPECT_TRUE(q.quick);
  EXPECT_EQ(q.batching.batch_size, 64);
  EXPECT_EQ(q.encoder.dim, 32);
  EXPECT_EQ(q.training.steps, gr::quick_defaults().training.steps);
  EXPECT_EQ(q.encoder.layers, gr::quick_defaults().encoder.layers);

  const auto a = gr::build_train_config(nlohmann::json::object(), {{"chunk_size", "auto"}, {"chunk_memory", "2G"}});
  EXPECT_TRUE(a.batching.chunk_size_auto);
  EXPECT_EQ(a.batching.chunk_memory, int64_t{2} << 30);
  EXPECT_NO_THROW(gr::validate(a));
}

TEST(TrainConfig, ErrorsNameTheFlagOrKey) {
  const auto none = nlohmann::json::object();
  EXPECT_NE(settings_error([&] { gr::build_train_config(none, {{"batch_size", "abc"}}); })
                .find("--batch-size expects an integer, got 'abc'"),
            std::string::npos);
  EXPECT_NE(settings_error([&] { gr::build_train_config(none, {{"normalize", "maybe"}}); }).find("--normalize"),
            std::string::npos);
  EXPECT_NE(settings_error([&] { gr::build_train_config(none, {{"chunk_memory", "lots"}}); }).find("--chunk-memory"),
            std::string::npos);
  EXPECT_NE(settings_error([&] { gr::build_train_config({{"batch_sise", 1}}, {}); }).find("unknown setting \"batch_sise\""),
            std::string::npos);
  EXPECT_NE(settings_error([&] { gr::build_train_config({{"batch_size", "big"}}, {}); }).find("\"batch_size\" has the wrong type"),
            std::string::npos);
  // inf and nan are no setting's value: config.json could not store them (the run could
  // then be neither evaluated nor resumed).
  for (const char* key : {"lr", "weight_decay", "max_grad_norm", "temperature", "dropout"}) {
    for (const char* text : {"inf", "-inf", "nan"}) {
      std::string flag = std::string("--") + key;
      std::replace(flag.begin(), flag.end(), '_', '-');
      EXPECT_NE(settings_error([&] { gr::build_train_config(none, {{key, text}}); })
                    .find(flag + " expects a finite number, got '" + text + "'"),
                std::string::npos)
          << key << " " << text;
    }
  }
  gr::TrainConfig infinite;
  infinite.training.max_grad_norm = std::numeric_limits<double>::infinity();
  EXPECT_NE(settings_error([&] { gr::validate(infinite); }).find("--max-grad-norm must be finite"), std::string::npos);
  infinite = gr::TrainConfig{};
  infinite.training.lr = std::numeric_limits<double>::infinity();
  EXPECT_NE(settings_error([&] { gr::validate(infinite); }).find("--lr must be finite"), std::string::npos);
  gr::TrainConfig c;
  c.training.warmup = 1.5;
  EXPECT_NE(settings_error([&] { gr::validate(c); }).find("--warmup must be in [0, 1), got 1.5"), std::string::npos);
  c = gr::TrainConfig{};
  c.batching.chunk_size_auto = true;
  EXPECT_NE(settings_error([&] { gr::validate(c); }).find("--chunk-size auto needs --chunk-memory"), std::string::npos);
  c = gr::TrainConfig{};
  c.batching.sub_batch_size = 0;
  EXPECT_NE(settings_error([&] { gr::validate(c); }).find("--sub-batch-size must be positive, got 0"), std::string::npos);
}

// Integers are parsed as 64 bits and range-checked before any narrowing: 2^32 + 100 was once
// trained as a vocabulary of 100 pieces, and 2^31 printed as -2147483648.
TEST(TrainConfig, IntegersNeverWrap) {
  const auto none = nlohmann::json::object();
  EXPECT_NE(settings_error([&] { gr::validate(gr::build_train_config(none, {{"vocab_size", "4294967396"}})); })
                .find("--vocab-size must be from 16 to 1000000, got 4294967396"),
            std::string::npos);
  EXPECT_NE(settings_error([&] { gr::build_train_config(none, {{"batch_size", "99999999999999999999"}}); })
                .find("--batch-size expects an integer, got '99999999999999999999'"),
            std::string::npos);
  EXPECT_NE(settings_error([&] { gr::validate(gr::build_train_config(none, {{"threads", "100000"}})); })
                .find("--threads must be from 0 to 1024, got 100000"),
            std::string::npos);
  EXPECT_EQ(gr::parse_setting_text<int32_t>("2147483647", "--x"), 2147483647);
  EXPECT_NE(settings_error([&] { gr::parse_setting_text<int32_t>("2147483648", "--x"); })
                .find("--x expects an integer, got '2147483648'"),
            std::string::npos);
  EXPECT_NE(settings_error([&] { gr::parse_setting_text<uint16_t>("65536", "--x"); })
                .find("--x expects a non-negative integer, got '65536'"),
            std::string::npos);
  // Real settings reach LibTorch as floats: --lr 1e300 failed at the first step with LibTorch's
  // "cannot be converted to type float", and --temperature 1e-300 became 0.
  for (const auto& [key, value, expected] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"lr", "1e300", "--lr must be at most 3.4e38"},
           {"max_grad_norm", "1e300", "--max-grad-norm must be at most 3.4e38"},
           {"temperature", "1e-300", "--temperature must be at least 1.4e-45"}}) {
    const std::string k = key, v = value;  // (clang: lambdas capture no structured bindings)
    EXPECT_NE(settings_error([&] { gr::validate(gr::build_train_config(none, {{k, v}})); }).find(expected),
              std::string::npos)
        << expected;
  }
  EXPECT_NO_THROW(gr::validate(gr::build_train_config(none, {{"lr", "3e38"}, {"temperature", "1e-44"}})));
}

// Issue 41, item 6: a built-in encoder too big for the machine is refused by the settings,
// before any work (it failed after seconds inside the allocator, or swapped).
TEST(TrainConfig, ABuiltInEncoderTooBigForTheMachineIsRefusedBeforeAnyWork) {
  const auto none = nlohmann::json::object();
  for (const auto& flag : std::vector<std::pair<std::string, std::string>>{
           {"dim", "1000000000"}, {"ffn_dim", "2000000000"}, {"layers", "100000000"},
           {"projection_dim", "2000000000"}, {"query_max_len", "1000000000"}, {"passage_max_len", "1000000000"}}) {
    const std::string key = flag.first, value = flag.second;  // (clang: lambdas capture no structured bindings)
    const auto message = settings_error([&] { gr::validate(gr::build_train_config(none, {{key, value}})); });
    EXPECT_NE(message.find("parameters: training them needs at least"), std::string::npos) << key << ": " << message;
    EXPECT_NE(message.find("make them smaller"), std::string::npos) << key << ": " << message;
  }
  EXPECT_EQ(settings_error([&] { gr::validate(gr::build_train_config(none, {{"dim", "1024"}, {"layers", "12"}})); }), "");
}

TEST(TrainConfig, AccumulateComputesChunkSizeQueriesAtOnceUnlessSubBatchSizeIsGiven) {
  // One knob for the memory of a forward in every mode: --chunk-size 16 with accumulate gives
  // sub-batches of 16, not the default 128 (four times the cache's memory at 32, as it was).
  const nlohmann::json none = nlohmann::json::object();
  const auto chunked = gr::build_train_config(none, {{"mode", "accumulate"}, {"chunk_size", "16"}});
  EXPECT_EQ(chunked.batching.sub_batch_size, 16);
  EXPECT_EQ(gr::describe_passes(chunked.batching), "sub-batches of 16");
  EXPECT_EQ(gr::build_train_config(none, {{"mode", "accumulate"}, {"chunk_size", "16"}, {"sub_batch_size", "4"}})
                .batching.sub_batch_size,
            4);
  EXPECT_EQ(gr::build_train_config({{"sub_batch_size", 8}}, {{"mode", "accumulate"}, {"chunk_size", "16"}})
                .batching.sub_batch_size,
            8);
  EXPECT_EQ(gr::build_train_config(none, {{"mode", "accumulate"}, {"quick", "true"}}).batching.sub_batch_size, 32);
  EXPECT_EQ(gr::build_train_config(none, {{"chunk_size", "16"}}).batching.sub_batch_size,
            gr::TrainConfig{}.batching.sub_batch_size);  // cache: not used, left at its default
}

TEST(TrainConfig, FormerKeysOfSavedConfigsStillLoad) {
  // A config.json of the version before: max_steps, memory_budget, and accumulate's
  // sub-batches were chunk_size queries.
  nlohmann::json saved = gr::TrainConfig{};
  saved.erase("steps");
  saved.erase("chunk_memory");
  saved.erase("sub_batch_size");
  saved["max_steps"] = 12;
  saved["memory_budget"] = 1 << 20;
  saved["mode"] = "accumulate";
  saved["chunk_size"] = 8;
  std::vector<std::string> notices;
  const auto c = gr::read_saved_config(saved, &notices);
  EXPECT_EQ(c.training.steps, 12);
  EXPECT_EQ(c.batching.chunk_memory, 1 << 20);
  EXPECT_EQ(c.batching.sub_batch_size, 8);
  ASSERT_EQ(notices.size(), 3u);
  EXPECT_NE(notices[0].find("\"max_steps\" is now \"steps\""), std::string::npos);

  saved["mode"] = "cache";  // sub_batch_size does not matter: the default
  EXPECT_EQ(gr::read_saved_config(saved).batching.sub_batch_size, gr::TrainConfig{}.batching.sub_batch_size);
}

TEST(TrainConfig, ResumeAndDistributedInvariantsComeFromTheTable) {
  const auto resume = gr::resume_invariant(gr::TrainConfig{});
  for (const char* free : {"output", "save_every", "log_every", "metrics_out", "eval", "eval_baseline",
                           "eval_batch_size", "threads", "blas_threads", "retain_chunks", "retain_memory"}) {
    EXPECT_FALSE(resume.contains(free)) << free;
  }
  for (const char* kept : {"batch_size", "chunk_size", "sub_batch_size", "seed", "steps", "mode", "precision"}) {
    EXPECT_TRUE(resume.contains(kept)) << kept;
  }
  const auto ranks = gr::distributed_invariant(gr::TrainConfig{});
  for (const char* local : {"chunk_size", "passage_chunk_size", "chunk_size_auto", "chunk_memory", "chunk_tokens",
                            "retain_chunks", "retain_memory", "threads", "blas_threads", "eval_batch_size"}) {
    EXPECT_FALSE(ranks.contains(local)) << local;
  }
  EXPECT_TRUE(ranks.contains("sub_batch_size"));  // it decides the loss
  EXPECT_TRUE(ranks.contains("batch_size"));

  gr::TrainConfig saved, requested;
  saved.batching.batch_size = 16;
  requested.output.dir = "elsewhere";
  requested.batching.batch_size = 99;
  const auto resumed = gr::resumed_config(saved, requested);
  EXPECT_EQ(resumed.output.dir, "elsewhere");
  EXPECT_EQ(resumed.batching.batch_size, 16);
}

TEST(EvalSettings, FlagsAndChecksComeFromTheirTable) {
  const auto& table = gr::eval_settings();
  auto s = table.build(gr::EvalSettings{}, nlohmann::json::object(),
                       {{"checkpoint", "runs/x"}, {"top_k", "10"}, {"quick", "true"}});
  EXPECT_EQ(s.checkpoint, "runs/x");
  EXPECT_EQ(s.top_k, 10);
  EXPECT_TRUE(s.quick);
  EXPECT_EQ(s.batch_size, 512);  // default
  EXPECT_NO_THROW(table.validate(s));
  s.corpus = "corpus.tsv";
  EXPECT_NE(settings_error([&] { table.validate(s); }).find("--corpus, --queries and --qrels go together"),
            std::string::npos);
  s = gr::EvalSettings{};
  s.checkpoint = "runs/x";
  s.split = "train";
  EXPECT_NE(settings_error([&] { table.validate(s); }).find("--split must be test or dev, got \"train\""),
            std::string::npos);
  // The model: exactly one of --checkpoint and --model-dir; the prompt flags only with --model-dir.
  s = gr::EvalSettings{};
  const std::string one_model = "give one of --checkpoint (a training run) and --model-dir (a pretrained model)";
  EXPECT_NE(settings_error([&] { table.validate(s); }).find(one_model), std::string::npos);
  s.checkpoint = "runs/x";
  s.pretrained.dir = "models/minilm";
  EXPECT_NE(settings_error([&] { table.validate(s); }).find(one_model), std::string::npos);
  s.checkpoint.clear();
  s.pretrained.query_prompt = "query: ";
  EXPECT_NO_THROW(table.validate(s));
  s.pretrained.dir.clear();
  s.checkpoint = "runs/x";
  EXPECT_NE(settings_error([&] { table.validate(s); }).find("go with --model-dir (a run keeps its own)"),
            std::string::npos);
}

// --chunk-memory only sizes --chunk-size auto: set without it (flag or config file) it would be
// silently ignored, so it is refused.
TEST(TrainConfig, ChunkMemoryWithoutChunkSizeAutoIsRefused) {
  const auto none = nlohmann::json::object();
  const std::string expected = "--chunk-memory is used only with --chunk-size auto; add --chunk-size auto or drop";
  EXPECT_NE(settings_error([&] { gr::validate(gr::build_train_config(none, {{"chunk_memory", "512M"}})); })
                .find(expected),
            std::string::npos);
  EXPECT_NE(settings_error([&] { gr::validate(gr::build_train_config({{"chunk_memory", 1 << 20}}, {})); })
                .find(expected),
            std::string::npos);
  EXPECT_NO_THROW(gr::validate(gr::build_train_config(none, {{"chunk_memory", "512M"}, {"chunk_size", "auto"}})));
  EXPECT_NO_THROW(gr::validate(gr::build_train_config(none, {{"chunk_size", "auto"}, {"chunk_memory", "512M"}})));
  EXPECT_NO_THROW(gr::validate(gr::build_train_config(none, {{"chunk_memory", "0"}})));  // the default: no effect
}

// One query per loss term and no hard negatives: the softmax has one entry, the loss is log 1 = 0
// whatever the model, and nothing is learned. With hard negatives it is a (weak) loss: a warning.
TEST(TrainConfig, ALossOverOneQueryNeedsHardNegatives) {
  gr::TrainConfig c;
  c.batching.batch_size = 1;
  EXPECT_NE(settings_error([&] { gr::validate(c); }).find("--batch-size 1 without --negatives"), std::string::npos);
  EXPECT_TRUE(gr::setting_warnings(gr::TrainConfig{}).empty());
  c.batching.negatives = 2;
  EXPECT_NO_THROW(gr::validate(c));
  ASSERT_EQ(gr::setting_warnings(c).size(), 1u);
  EXPECT_NE(gr::setting_warnings(c)[0].find("only its 2 hard negatives"), std::string::npos);
  c = gr::TrainConfig{};  // accumulate: each sub-batch is a loss of its own
  c.batching.mode = gr::TrainMode::Accumulate;
  c.batching.sub_batch_size = 1;
  EXPECT_NE(settings_error([&] { gr::validate(c); }).find("--sub-batch-size 1 without --negatives"),
            std::string::npos);
  c.batching.mode = gr::TrainMode::Cache;  // sub-batches are accumulate's only
  EXPECT_NO_THROW(gr::validate(c));
}

// --device is checked with the settings, before the tokenizer is trained or the model built.
TEST(TrainConfig, DeviceMustExistOnThisMachine) {
  gr::TrainConfig c;
  gr::EvalSettings e;
  e.checkpoint = "runs/x";
  for (const std::string device : {"gpu", "cuda:99", "cpu:1:2", ""}) {
    c.machine.device = e.device = device;
    EXPECT_NE(settings_error([&] { gr::validate(c); }).find("--device"), std::string::npos) << device;
    EXPECT_NE(settings_error([&] { gr::eval_settings().validate(e); }).find("--device"), std::string::npos) << device;
  }
  c.machine.device = e.device = "cuda";
  if (torch::cuda::is_available()) {
    EXPECT_NO_THROW(gr::validate(c));
  } else {
    EXPECT_NE(settings_error([&] { gr::validate(c); }).find("CUDA is not available"), std::string::npos);
    EXPECT_NE(settings_error([&] { gr::eval_settings().validate(e); }).find("use --device cpu"), std::string::npos);
  }
  c.machine.device = "cpu";
  EXPECT_NO_THROW(gr::validate(c));
}

// inf is refused when the flag is read, 0 and negative temperatures by the check: all before any work.
TEST(TrainConfig, TemperatureMustBePositiveAndFinite) {
  const auto none = nlohmann::json::object();
  for (const char* text : {"0", "-0.05"}) {
    EXPECT_NE(settings_error([&] { gr::validate(gr::build_train_config(none, {{"temperature", text}})); })
                  .find("--temperature must be positive"),
              std::string::npos)
        << text;
  }
  EXPECT_NE(settings_error([&] { gr::build_train_config(none, {{"temperature", "inf"}}); })
                .find("--temperature expects a finite number"),
            std::string::npos);
}
