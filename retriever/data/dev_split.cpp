#include "retriever/data/dev_split.h"

#include "retriever/data/passage_corpus.h"

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

EvalData hold_out_dev(std::vector<TrainExample>& train, double fraction, uint64_t seed, const std::string& source) {
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
  dev.corpus = passage_corpus(train, source);
  std::unordered_map<std::string, size_t> row_of;  // passage text -> corpus row
  for (size_t row = 0; row < dev.corpus.size(); ++row) row_of.emplace(dev.corpus.texts[row], row);
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
    for (const auto& p : train[i].positives) dev.qrels[qid][dev.corpus.ids[row_of.at(p)]] = 1;
  }
  train = std::move(kept);
  return dev;
}

}  // namespace retriever
}  // namespace gradcache
