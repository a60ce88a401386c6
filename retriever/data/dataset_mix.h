// Several training data sets in one run (--train-file A,B,... and --mix): every batch is drawn
// from one data set, so that its in-batch negatives are of one kind, as sentence-transformers'
// multi-dataset batch samplers (PROPORTIONAL, ROUND_ROBIN) and contrastors draw them. Which data
// set each batch of an epoch comes from depends only on (seed, epoch), so that a resumed run and
// every rank see the same batches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gradcache::retriever {

struct MixRule {
  enum class Kind {
    Proportional,  ///< each data set's full batches once an epoch, in a seeded shuffle
    RoundRobin,    ///< one batch of each in turn, until the one with fewest batches has given all
    Weighted,      ///< as many batches an epoch as Proportional, each drawn from data set i with
                   ///< probability weights[i] / sum (a data set drawn more often than it has batches
                   ///< goes round its order again)
  };
  Kind kind = Kind::Proportional;
  std::vector<double> weights;
};

/// --mix: "proportional", "round-robin", or one positive weight per data set, comma-separated
/// ("3,1"). Throws std::invalid_argument naming the flag and what is wrong.
MixRule parse_mix(const std::string& text, size_t datasets);

/// One batch of an epoch: which data set, and which of that data set's batches (its order's
/// positions [batch * B, (batch + 1) * B), modulo its size).
struct BatchSource {
  uint32_t dataset = 0;
  uint32_t batch = 0;
};

/// How many batches an epoch has, for data sets of `full_batches` full batches each.
size_t mixed_batches_per_epoch(const std::vector<size_t>& full_batches, const MixRule& rule);

/// The data set of every batch of `epoch`.
std::vector<BatchSource> mix_schedule(const std::vector<size_t>& full_batches, const MixRule& rule, uint64_t seed,
                                      int64_t epoch);

}  // namespace gradcache::retriever
