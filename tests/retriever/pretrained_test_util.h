// Shared by the tests of a pretrained model in the retriever (test_pretrained.cpp,
// test_trainable.cpp): the tiny random BERT of tests/hf/fixtures and a batch tokenized by it.
#pragma once

#include "retriever/model/batching.h"
#include "retriever/model/pretrained.h"
#include "retriever/run/build_model.h"
#include "retriever/train/training_step.h"
#include "tests/core/test_util.h"

#include <gradcache/gradcache.h>

#include <torch/torch.h>
#include "retriever/model/tokenizer.h"

#include <string>
#include <vector>

namespace pretrained_test {
namespace gr = gradcache::retriever;

inline const std::string kTinyBert = std::string(GRADCACHE_HF_FIXTURES) + "/tiny_bert";

// Six queries and their passages, of unequal lengths (padding and trimming matter), tokenized
// as the program does: the model's tokenizer, [CLS] pieces [SEP], padded with id 0.
struct Batch {
  gr::TokenBatch queries, passages;
};

inline Batch tokenized(const gr::Tokenizer& tokenizer) {
  const std::vector<std::string> queries = {"which red cat", "a small dog that lives in the house by the river",
                                            "owl", "the grey eel swims", "bees make honey in summer", "elk"};
  const std::vector<std::string> passages = {"cat", "dog house river", "the owl hoots at night", "eel",
                                             "honey bee", "a large deer of northern forests"};
  std::vector<std::vector<int64_t>> q, p;
  std::vector<int64_t> rows;
  for (size_t i = 0; i < queries.size(); ++i) {
    q.push_back(tokenizer.encode_query(queries[i]));
    p.push_back(tokenizer.encode_passage(passages[i]));
    rows.push_back(static_cast<int64_t>(i));
  }
  return {gr::pad_batch(q, rows), gr::pad_batch(p, rows)};
}

// The tiny BERT as the program loads it (dropout 0.1 in its config), one shared encoder, and the
// training step's gradients.
struct Fixture {
  gr::LoadedPretrained loaded = gr::load_pretrained(kTinyBert);
  gr::BiEncoder model = gr::pretrained_model(loaded, /*untie=*/false);
  Batch batch = tokenized(gr::pretrained_tokenizer(loaded.description));
  gradcache::Loss loss = gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions().temperature(0.05));

  std::vector<torch::Tensor> gradients(const gr::StepOptions& options, double* loss_out = nullptr) {
    const auto params = model.parameters();
    gctest::zero_grads(params);
    auto step = gr::make_training_step(model.query_model(), model.passage_model(), loss, options);
    torch::manual_seed(11);
    const double value = step->run(batch.queries, batch.passages);
    if (loss_out) *loss_out = value;
    return gctest::grads_of(params);
  }

  // Every parameter's gradient after one step (undefined where none was computed).
  std::vector<torch::Tensor> all_gradients(const gr::StepOptions& options, int seed = 11) {
    auto all = loaded.module->parameters();
    for (auto& p : all) p.mutable_grad() = torch::Tensor();
    auto step = gr::make_training_step(model.query_model(), model.passage_model(), loss, options);
    torch::manual_seed(seed);
    step->run(batch.queries, batch.passages);
    std::vector<torch::Tensor> out;
    for (auto& p : all) out.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
    return out;
  }
};

}  // namespace pretrained_test
