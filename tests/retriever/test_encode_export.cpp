// gradcache export and encode: the TorchScript encoder equals the built-in one, exports of tied
// and untied runs reproduce their encoders, .npy files and embeddings directories round-trip,
// bad ones are named, and encoding shard by shard equals encoding at once.
#include "retriever/commands/encode_corpus.h"
#include "files/atomic_file.h"
#include "files/staged_directory.h"
#include "retriever/commands/export_run.h"
#include "retriever/files/npy.h"
#include "retriever/model/torchscript_export.h"
#include "retriever/run/embeddings.h"
#include "retriever/run/saved_encoder.h"
#include "retriever/search/evaluate.h"
#include "tests/retriever/train_test_util.h"

#include <torch/script.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <limits>
#include <tuple>

using namespace train_test;

namespace {

torch::jit::Module reloaded(torch::jit::Module module) {
  std::stringstream bytes;
  module.save(bytes);
  return torch::jit::load(bytes);
}

gr::TokenBatch padded_batch() {
  auto ids = torch::tensor({{5, 9, 3, 7, 2, 11}, {4, 8, 0, 0, 0, 0}, {12, 0, 0, 0, 0, 0}}, torch::kLong);
  return {{"input_ids", ids}, {"attention_mask", ids != 0}};
}

double max_difference(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace

TEST(ScriptEncoder, GivesTheBuiltinEncodersEmbeddings) {
  torch::manual_seed(3);
  for (const auto& options : {gr::EncoderOptions(20).dim(16).heads(2).layers(1).ffn_dim(32).max_len(8),
                              gr::EncoderOptions(20).dim(16).heads(4).layers(2).ffn_dim(24).max_len(6).projection_dim(
                                  12).normalize(false)}) {
    gr::TransformerEncoder encoder(options);
    {
      torch::NoGradGuard no_grad;  // layer norms away from 1 and 0, so that they count
      for (auto& p : encoder->parameters()) p.add_(torch::randn_like(p) * 0.1);
    }
    encoder->eval();
    auto module = reloaded(gr::script_encoder(*encoder));
    const auto batch = padded_batch();
    const auto expected = encoder->forward(batch);
    const auto exported = module.forward({batch.at("input_ids"), batch.at("attention_mask").to(torch::kLong)}).toTensor();
    ASSERT_EQ(exported.sizes(), expected.sizes());
    EXPECT_LE(max_difference(exported, expected), 1e-6);
    EXPECT_EQ(exported.size(1), options.projection_dim() > 0 ? options.projection_dim() : options.dim());
  }
}

TEST(ScriptEncoder, TrainsWithDropoutInTrainingMode) {
  torch::manual_seed(4);
  gr::TransformerEncoder encoder(gr::EncoderOptions(20).dim(16).heads(2).layers(1).ffn_dim(32).max_len(8).dropout(0.5));
  auto module = reloaded(gr::script_encoder(*encoder));
  const auto batch = padded_batch();
  const std::vector<c10::IValue> inputs{batch.at("input_ids"), batch.at("attention_mask").to(torch::kLong)};
  module.train(true);
  const auto first = module.forward(inputs).toTensor(), second = module.forward(inputs).toTensor();
  EXPECT_GT(max_difference(first, second), 1e-4) << "dropout is not active in training mode";
  first.sum().backward();
  for (const auto& p : module.named_parameters()) {
    if (p.name == "positions.weight" || p.name == "tokens.weight") {
      EXPECT_TRUE(p.value.grad().defined()) << p.name;
    }
  }
  module.eval();
  EXPECT_EQ(max_difference(module.forward(inputs).toTensor(), module.forward(inputs).toTensor()), 0);
}

// A trained tiny run (tied, or untied with a projection and no normalisation), exported: each
// exported module gives the run's embeddings of the corpus.
TEST(Export, ReproducesTiedAndUntiedRuns) {
  TempDir dir;
  write_task(dir);
  for (const bool untie : {false, true}) {
    auto config = tiny_config(dir);
    config.encoder.untie = untie;
    config.encoder.projection_dim = untie ? 12 : 0;
    config.encoder.normalize = !untie;
    config.output.dir = dir / (untie ? "untied" : "tied");
    gr::train(config, quiet());
    gr::ExportSettings settings;
    settings.run = config.output.dir;
    settings.output = dir / (untie ? "untied_export" : "tied_export");
    const auto description = gr::export_run(settings);
    EXPECT_EQ(description["tied"], !untie);
    EXPECT_EQ(description["dim"], untie ? 12 : 16);
    auto run = gr::load_run_encoder(config.output.dir);
    run.model.train(false);
    const auto corpus = gr::read_collection(dir / "corpus.tsv");
    std::vector<std::vector<int64_t>> tokens;
    for (const auto& text : corpus.texts) tokens.push_back(run.tokenizer.encode(text, 32));
    for (const std::string side : {"query", "passage"}) {
      auto exported = gr::load_exported_encoder(settings.output, side);
      exported.model.train(false);
      const auto& mine = side == "query" ? run.model.query_model() : run.model.passage_model();
      const auto theirs = side == "query" ? exported.model.query_model() : exported.model.passage_model();
      const auto expected = gr::encode_all(mine, tokens, 16, torch::kCPU);
      const auto got = gr::encode_all(theirs, tokens, 16, torch::kCPU);
      EXPECT_LE(max_difference(got, expected), 1e-6) << side << (untie ? " untied" : " tied");
      EXPECT_EQ(exported.normalize, !untie);
    }
    EXPECT_TRUE(fs::exists(settings.output + (untie ? "/query.pt" : "/model.pt")));
    EXPECT_NE(error_of([&] { gr::export_run(settings); }).find("--overwrite"), std::string::npos);
    settings.overwrite = true;
    EXPECT_EQ(error_of([&] { gr::export_run(settings); }), "");
  }
}

// Issue 27: exports are checked as checkpoints are. Each damaged or mismatched export is refused
// by load_exported_encoder (what encode and mine --model call) with a message naming the file,
// where before each loaded and gave wrong vectors or NaN with exit 0.
TEST(Export, DamagedOrMismatchedExportsAreRefused) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  config.training.steps = 1;
  gr::train(config, quiet());
  gr::ExportSettings settings;
  settings.run = config.output.dir;
  settings.output = dir / "export";
  gr::export_run(settings);
  const std::string json_path = settings.output + "/export.json", model_path = settings.output + "/model.pt";
  const std::string good_json = gradcache::files::read_file(json_path), good_model = gradcache::files::read_file(model_path);
  auto refused = [&](const std::string& expected) {
    const std::string error = error_of([&] { gr::load_exported_encoder(settings.output, "query"); });
    EXPECT_NE(error.find(expected), std::string::npos) << "expected \"" << expected << "\", got: " << error;
    EXPECT_EQ(error.find("frame #"), std::string::npos) << "a LibTorch backtrace reached the message: " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << "the TorchScript traceback reached the message: " << error;
  };
  EXPECT_EQ(error_of([&] { gr::load_exported_encoder(settings.output, "query"); }), "");
  for (const auto& [key, value, expected] :
       std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
           {"version", 99, "\"version\" 99 is not 1"},
           {"dim", 8, "export.json says dim 8"},
           {"dim", 0, "\"dim\" 0 is not a width"},
           {"query_max_len", -1, "\"query_max_len\" -1 is not a number of tokens"},
           {"passage_max_len", 99999999999, "is not a number of tokens"},
           {"prefix_dim", 64, "\"prefix_dim\" 64 is not the export's width"}}) {
    auto edited = nlohmann::json::parse(good_json);
    edited[key] = value;
    gradcache::files::write_file_atomic(json_path, edited.dump());
    refused(expected);
  }
  // The files export.json names are files of the export: not elsewhere, not of another type.
  for (const auto& [value, expected] : std::vector<std::pair<nlohmann::json, std::string>>{
           {"../run/tokenizer.model", "\"../run/tokenizer.model\" is not a file name in the export's directory"},
           {"/etc/passwd", "is not a file name in the export's directory"},
           {std::string("tok\0en/izer.model", 17), "\"tok\\u0000en/izer.model\" is not a file name"},  // issue 41
           {5, "export.json: "}}) {
    auto edited = nlohmann::json::parse(good_json);
    edited["tokenizer"] = value;
    gradcache::files::write_file_atomic(json_path, edited.dump());
    refused(expected);
  }
  gradcache::files::write_file_atomic(json_path, good_json);
  // Bytes flipped through the archive: those inside entries (tensors, code) fail their CRC-32.
  std::string flipped = good_model;
  for (size_t i = 1; i <= 5; ++i) flipped[flipped.size() * i / 6] ^= 0x40;
  gradcache::files::write_file_atomic(model_path, flipped);
  refused("is damaged");
  gradcache::files::write_file_atomic(model_path, "not a zip archive at all");
  refused("is damaged");
  gradcache::files::write_file_atomic(model_path, good_model);
  // The tokenizer of a run with more pieces than this model's embedding has rows.
  auto small = tiny_config(dir);
  small.tokenizer.vocab_size = 32;  // the fewest the texts allow (their characters)
  small.training.steps = 1;
  small.output.dir = dir / "small";
  gr::train(small, quiet());
  settings.run = small.output.dir;
  settings.output = dir / "small_export";
  gr::export_run(settings);
  gradcache::files::write_file_atomic(settings.output + "/tokenizer.model", gradcache::files::read_file(config.output.dir + "/tokenizer.model"));
  refused("cannot encode the ids of its tokenizer.model");
}

TEST(Npy, RoundTripsFloat32AndFloat16) {
  TempDir dir;
  const auto values = torch::randn({7, 5});
  for (const auto type : {torch::kFloat32, torch::kFloat16}) {
    const auto matrix = values.to(type);
    EXPECT_EQ(gr::npy_header(matrix).size() % 64, 0u);
    gr::write_npy(dir / "m.npy", matrix);
    const auto back = gr::read_npy(dir / "m.npy");
    EXPECT_EQ(back.scalar_type(), type);
    EXPECT_TRUE(torch::equal(back, matrix));
  }
  EXPECT_TRUE(torch::equal(gr::read_npy(dir / "m.npy"), values.to(torch::kFloat16)));
  EXPECT_THROW(gr::write_npy(dir / "bad.npy", torch::zeros({3})), std::invalid_argument);
}

TEST(Npy, BadFilesAreNamed) {
  TempDir dir;
  gr::write_npy(dir / "m.npy", torch::ones({4, 3}));
  auto bytes = gradcache::files::read_file(dir / "m.npy");
  write(dir / "truncated.npy", bytes.substr(0, bytes.size() - 1));
  write(dir / "text.npy", "hello");
  auto doubles = bytes;
  doubles.replace(doubles.find("<f4"), 3, "<f8");
  write(dir / "f8.npy", doubles);
  auto lying = bytes;  // format 2.0: a 4-byte header length, here 4 GiB (nothing allocated for it)
  lying[6] = '\x02';
  lying.insert(10, std::string("\xf0\xff", 2));
  lying[8] = '\xff';
  lying[9] = '\xff';
  write(dir / "lying.npy", lying);
  for (const auto& [name, message] : std::vector<std::pair<std::string, std::string>>{
           {"lying.npy", "the .npy header is truncated"},
           {"truncated.npy", "truncated or damaged"}, {"text.npy", "not a .npy file"},
           {"f8.npy", "'<f8' values"}, {"missing.npy", "cannot open"}}) {
    const auto path = dir / name;  // C++17 lambdas cannot capture structured bindings (clang)
    const auto error = error_of([&] { gr::read_npy(path); });
    EXPECT_NE(error.find(name), std::string::npos) << error;
    EXPECT_NE(error.find(message), std::string::npos) << error;
  }
}

TEST(Embeddings, DirectoriesRoundTripAndBadOnesAreNamed) {
  TempDir dir;
  fs::create_directories(dir / "e");
  gr::EmbeddingsWriter writer(dir / "e", torch::kFloat16);
  const auto a = torch::randn({3, 4}), b = torch::randn({2, 4});
  writer.add_shard({"x", "y", "z"}, a);
  writer.add_shard({"u", "v"}, b);
  EXPECT_THROW(writer.add_shard({"w"}, torch::randn({1, 5})), std::invalid_argument);
  EXPECT_THROW(writer.add_shard({"line\nbreak"}, torch::randn({1, 4})), std::invalid_argument);
  writer.finish({{"side", "passage"}});
  const auto read = gr::read_embeddings(dir / "e");
  EXPECT_EQ(read.ids, (std::vector<std::string>{"x", "y", "z", "u", "v"}));
  EXPECT_EQ(read.vectors.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(read.vectors, torch::cat({a, b}).to(torch::kFloat16).to(torch::kFloat32)));
  EXPECT_EQ(read.manifest["side"], "passage");

  auto expect_error = [&](const std::string& message) {
    const auto error = error_of([&] { gr::read_embeddings(dir / "e"); });
    EXPECT_NE(error.find(message), std::string::npos) << "expected '" << message << "', got: " << error;
  };
  const auto manifest = gradcache::files::read_file(dir / "e/manifest.json");
  write(dir / "e/ids_00001.txt", "u\n");
  expect_error("ids_00001.txt: holds 1 ids for 2 rows");
  write(dir / "e/ids_00001.txt", "u\nv\n");
  gr::write_npy(dir / "e/embeddings_00000.npy", torch::randn({3, 4}));
  expect_error("embeddings_00000.npy: holds 3 x 4 float32 values, but manifest.json says 3 x 4 float16");
  write(dir / "e/manifest.json", "{\"format\": ");
  expect_error("manifest.json: malformed JSON");
  auto wrong_rows = nlohmann::json::parse(manifest);
  wrong_rows["rows"] = 6;
  write(dir / "e/manifest.json", wrong_rows.dump());
  expect_error("the shards hold 5 rows, but \"rows\" says 6");
  // Issue 27 (found by fuzz_embeddings' kind of input): a manifest that claims more rows than
  // its files hold is refused before the memory is taken; counts are bounded; shard files are
  // names in the directory; a key of the wrong type is named, not a JSON library's exception.
  auto huge = nlohmann::json::parse(manifest);
  huge["rows"] = (int64_t{1} << 39) + 2;
  huge["shards"][0]["rows"] = int64_t{1} << 39;
  write(dir / "e/manifest.json", huge.dump());
  expect_error("bytes cannot hold the 549755813888 x 4 float16 values manifest.json says it has");
  huge["rows"] = int64_t{1} << 41;
  write(dir / "e/manifest.json", huge.dump());
  expect_error("\"rows\" must be an integer from 0 to 1099511627776");
  auto outside = nlohmann::json::parse(manifest);
  outside["shards"][0]["embeddings"] = "../embeddings_00000.npy";
  write(dir / "e/manifest.json", outside.dump());
  expect_error("shard file \"../embeddings_00000.npy\" is not a file name in the directory");
  outside["shards"][0]["embeddings"] = std::string("a\0b.npy", 7);  // issue 41, item 9: the NUL cut the message
  write(dir / "e/manifest.json", outside.dump());
  expect_error("shard file \"a\\u0000b.npy\" is not a file name in the directory");
  auto typed = nlohmann::json::parse(manifest);
  typed["version"] = "one";
  write(dir / "e/manifest.json", typed.dump());
  expect_error("manifest.json: not a manifest of gradcache embeddings");
  fs::remove(dir / "e/manifest.json");
  expect_error("no manifest.json");
}

TEST(CollectionReader, ShardsAreTheCollectionInOrder) {
  TempDir dir;
  write_task(dir);
  const auto whole = gr::read_collection(dir / "corpus.tsv");
  gr::CollectionReader reader(dir / "corpus.tsv");
  std::vector<std::string> ids, texts;
  for (auto shard = reader.next(10); shard.size() > 0; shard = reader.next(10)) {
    EXPECT_LE(shard.size(), 10u);
    ids.insert(ids.end(), shard.ids.begin(), shard.ids.end());
    texts.insert(texts.end(), shard.texts.begin(), shard.texts.end());
  }
  EXPECT_EQ(ids, whole.ids);
  EXPECT_EQ(texts, whole.texts);
  EXPECT_EQ(reader.bytes_read(), reader.file_size());
  write(dir / "dup.tsv", "a\tone\nb\ttwo\na\tthree\n");
  gr::CollectionReader duplicates(dir / "dup.tsv");
  duplicates.next(2);
  EXPECT_NE(error_of([&] { duplicates.next(2); }).find("dup.tsv:3: duplicate id 'a' (first on line 1)"),
            std::string::npos);
  write(dir / "empty.tsv", "\n");
  gr::CollectionReader empty(dir / "empty.tsv");
  EXPECT_NE(error_of([&] { empty.next(2); }).find("no records"), std::string::npos);
}

// Encoding in shards of 10 rows gives what encoding the corpus at once gives; a stop request
// leaves neither the output nor a partial directory.
TEST(Encode, ShardsEqualOneEncodingAndAStopLeavesNothing) {
  TempDir dir;
  write_task(dir);
  auto config = tiny_config(dir);
  gr::train(config, quiet());
  gr::EncodeSettings settings;
  settings.run = config.output.dir;
  settings.corpus = dir / "corpus.tsv";
  settings.output = dir / "embeddings";
  settings.shard_size = 10;
  settings.batch_size = 4;
  const auto report = gr::encode_corpus(settings);
  EXPECT_EQ(report.rows, 96);
  EXPECT_EQ(report.shards, 10);
  const auto read = gr::read_embeddings(settings.output);
  auto run = gr::load_run_encoder(config.output.dir);
  run.model.train(false);
  const auto corpus = gr::read_collection(settings.corpus);
  std::vector<std::vector<int64_t>> tokens;
  for (const auto& text : corpus.texts) tokens.push_back(run.tokenizer.encode(text, 32));
  EXPECT_LE(max_difference(read.vectors, gr::encode_all(run.model.passage_model(), tokens, 96, torch::kCPU)), 1e-6);
  EXPECT_EQ(read.ids, corpus.ids);

  // A NaN weight: nothing is written, and the message names the first text.
  auto [info, model] = gr::load_checkpoint(config.output.dir + "/checkpoint.pt");
  {
    torch::NoGradGuard no_grad;
    model.parameters()[0].fill_(std::numeric_limits<float>::quiet_NaN());
  }
  torch::optim::AdamW optimizer(model.parameters(), torch::optim::AdamWOptions(1e-3));
  gr::save_checkpoint(config.output.dir + "/checkpoint.pt", info, model, optimizer, gr::capture_generators(torch::kCPU));
  settings.output = dir / "nan";
  const auto nan_message = error_of([&] { gr::encode_corpus(settings); });
  EXPECT_NE(nan_message.find("not finite (NaN or infinity) for 'd0' of " + settings.corpus), std::string::npos)
      << nan_message;
  EXPECT_FALSE(fs::exists(settings.output));
  // Nor does export ship it: it says the weights are not finite (before: "this is a bug").
  gr::ExportSettings export_settings;
  export_settings.run = config.output.dir;
  export_settings.output = dir / "nan-export";
  const auto export_message = error_of([&] { gr::export_run(export_settings); });
  EXPECT_NE(export_message.find("are not finite"), std::string::npos) << export_message;
  EXPECT_FALSE(fs::exists(export_settings.output));

  std::atomic<int> stop{SIGINT};
  gr::EncodeControl control;
  control.stop = &stop;
  settings.output = dir / "stopped";
  EXPECT_THROW(gr::encode_corpus(settings, control), gr::StoppedBySignal);
  for (const auto& entry : fs::directory_iterator(dir.path))
    EXPECT_EQ(entry.path().filename().string().find("stopped"), std::string::npos) << entry.path();
}

// Issue 41, item 2: a file is written under a temporary name of this process's own, and a killed
// writer's temporary file goes with the next write; one command at a time writes an output
// directory: a second is refused, naming the first, and a killed one's partial directory goes
// whatever process now has its pid.
TEST(OutputFiles, TemporaryNamesArePerProcessAndOneCommandWritesAnOutput) {
  TempDir dir;
  const std::string file = dir / "out.json";
  EXPECT_EQ(gradcache::files::temporary_path(file), file + ".tmp-" + std::to_string(::getpid()));
  write(dir / "out.json.tmp-999999999", "torn");  // no process has this pid
  write(dir / "out.json.tmp-1", "live");          // init's: a live process's is left alone
  fs::create_directories(dir / "out.json.tmp-999999998");  // a directory: not one this program writes
  gradcache::files::write_file_atomic(file, "whole");
  EXPECT_EQ(gradcache::files::read_file(file), "whole");
  EXPECT_FALSE(fs::exists(dir / "out.json.tmp-999999999"));
  EXPECT_TRUE(fs::exists(dir / "out.json.tmp-1"));
  EXPECT_TRUE(fs::is_directory(dir / "out.json.tmp-999999998"));
  EXPECT_FALSE(fs::exists(gradcache::files::temporary_path(file)));

  const std::string target = dir / "emb";
  {
    gradcache::files::StagedDirectory first(target, "manifest.json", /*overwrite=*/false);
    const pid_t child = ::fork();
    if (child == 0) {  // another command, encoding into the same output
      int code = 2;
      try {
        gradcache::files::StagedDirectory second(target, "manifest.json", false);
      } catch (const std::exception& e) {
        const std::string expected = "--output " + target + " is being written by process " + std::to_string(::getppid());
        code = std::string(e.what()).rfind(expected, 0) == 0 ? 0 : 3;
      }
      ::_exit(code);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    EXPECT_TRUE(fs::is_directory(first.partial()));  // the refused command took nothing of it
    EXPECT_FALSE(fs::exists(target + ".partial-" + std::to_string(child)));
  }
  // An unlocked partial directory is a killed command's, even where its pid is in use (1).
  // A directory that only looks like one ("emb.partial-notes") is somebody else's, and stays.
  fs::create_directories(target + ".partial-1");
  fs::create_directories(target + ".partial-notes");
  gradcache::files::StagedDirectory third(target, "manifest.json", false);
  EXPECT_FALSE(fs::exists(target + ".partial-1"));
  EXPECT_TRUE(fs::is_directory(target + ".partial-notes"));
}
