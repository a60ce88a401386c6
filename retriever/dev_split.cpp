#include "retriever/dev_split.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace gradcache {
namespace retriever {
namespace {

// Every distinct passage text, in order of first appearance, with its corpus id.
std::unordered_map<std::string, std::string> passage_corpus(const std::vector<TrainExample>& train,
                                                            TextCollection& corpus) {
  std::unordered_map<std::string, std::string> id_of;
  auto add = [&](const std::string& text) {
    if (id_of.count(text)) return;
    id_of[text] = "p" + std::to_string(corpus.size() + 1);
    corpus.add(id_of[text], text);
  };
  for (const auto& ex : train) {
    for (const auto& p : ex.positives) add(p);
    for (const auto& p : ex.negatives) add(p);
  }
  return id_of;
}

// Which examples are held out: the first `count` of a seeded permutation (Fisher-Yates with
// mt19937_64: std::shuffle's algorithm is implementation-defined), in data order.
std::vector<bool> held_out_rows(size_t n, size_t count, uint64_t seed) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed ^ 0x6465762d73706c74ULL);  // "dev-splt": not the epoch orders' stream
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  std::vector<bool> held(n, false);
  for (size_t i = 0; i < count; ++i) held[order[i]] = true;
  return held;
}

}  // namespace

EvalData hold_out_dev(std::vector<TrainExample>& train, double fraction, uint64_t seed) {
  if (!(fraction > 0 && fraction < 1)) {
    throw std::invalid_argument("--dev-fraction must be in (0, 1), got " + std::to_string(fraction));
  }
  const size_t n = train.size();
  if (n < 2) {
    throw std::invalid_argument("--dev-fraction needs at least 2 training examples (one to train on, one to hold "
                                "out); the training data hold " + std::to_string(n));
  }
  const auto count = std::clamp<size_t>(static_cast<size_t>(std::llround(fraction * static_cast<double>(n))), 1, n - 1);
  EvalData dev;
  dev.name = "dev (" + std::to_string(count) + " training pairs held out)";
  const auto id_of = passage_corpus(train, dev.corpus);
  const auto held = held_out_rows(n, count, seed);
  std::vector<TrainExample> kept;
  kept.reserve(n - count);
  for (size_t i = 0; i < n; ++i) {
    if (!held[i]) {
      kept.push_back(std::move(train[i]));
      continue;
    }
    const std::string qid = "dev-" + std::to_string(dev.queries.size() + 1);
    dev.queries.add(qid, train[i].query);
    for (const auto& p : train[i].positives) dev.qrels[qid][id_of.at(p)] = 1;
  }
  train = std::move(kept);
  return dev;
}

}  // namespace retriever
}  // namespace gradcache
