// Shared by the retriever's training tests: scratch directories, a tiny retrieval task and
// the settings of a run on it that takes a second.
#pragma once

#include "retriever/run/checkpoint.h"
#include "retriever/train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <unistd.h>

namespace train_test {
namespace fs = std::filesystem;
namespace gr = gradcache::retriever;

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

inline void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A tiny retrieval task: each query names an animal and a colour; its passage says the same
// in other words. Written as TSV training pairs and an evaluation set.
inline void write_task(const TempDir& dir, int pairs = 96) {
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

// The tiny built-in encoder of the tests (vocabulary 40, dim 16, 2 heads, 1 layer, ffn 32);
// every other setting at its default.
inline gr::TrainConfig tiny_model_config() {
  gr::TrainConfig c;
  c.tokenizer.vocab_size = 40;
  c.encoder.dim = 16;
  c.encoder.heads = 2;
  c.encoder.layers = 1;
  c.encoder.ffn_dim = 32;
  return c;
}

inline gr::TrainConfig tiny_config(const TempDir& dir) {
  gr::TrainConfig c = tiny_model_config();
  c.data.train_file = dir / "train.tsv";
  c.data.eval_corpus = dir / "corpus.tsv";
  c.data.eval_queries = dir / "queries.tsv";
  c.data.eval_qrels = dir / "qrels.txt";
  c.batching.batch_size = 32;
  c.batching.chunk_size = 8;
  c.batching.sub_batch_size = 8;
  c.training.steps = 6;
  c.training.lr = 5e-3;
  c.output.log_every = 2;
  c.output.dir = dir / "run";
  return c;
}

inline gr::TrainOptions quiet() {
  static std::ostringstream sink;
  gr::TrainOptions o;
  o.log = &sink;
  return o;
}

inline std::vector<torch::Tensor> weights(const std::string& checkpoint) {
  auto info = gr::read_checkpoint_info(checkpoint);
  auto model = gr::load_model(checkpoint, info);
  std::vector<torch::Tensor> out;
  for (auto& [name, t] : model.named_state()) out.push_back(t.clone());
  return out;
}

// A finished two-step run in DIR/run, without evaluation: what the overwrite tests start from.
inline gr::TrainConfig two_step_run(const TempDir& dir) {
  write_task(dir);
  auto config = tiny_config(dir);
  config.training.steps = 2;
  config.eval.enabled = false;
  gr::train(config, quiet());
  return config;
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

}  // namespace train_test
