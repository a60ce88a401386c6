// The CLI's built-in default task: a reverse dictionary (definition -> words) from WordNet 3.0,
// which Debian ships as the package wordnet-base, so training works without any download.
#pragma once

#include "retriever/data/text_data.h"

#include <string>
#include <vector>

namespace gradcache::retriever {

/// A retrieval task: training pairs, a corpus, and dev/test queries with their judgements.
struct RetrievalData {
  std::vector<TrainExample> train;
  TextCollection corpus;  // every distinct passage once
  TextCollection dev_queries, test_queries;
  Qrels dev_qrels, test_qrels;
};

struct WordNetOptions {
  std::string dir = "/usr/share/wordnet";  // Debian package wordnet-base: data.noun, data.verb, data.adj, data.adv
  int train_percent = 90;                  // of the synsets; then dev_percent for dev, the rest for test
  int dev_percent = 5;
};

/// Reverse dictionary from the WordNet data files data.noun, data.verb, data.adj, data.adv (read
/// in that order).
/// - Query: a synset's definition, i.e. its gloss without the quoted examples: the ";"-separated
///   parts before the first part that starts with a double quote, joined by "; ". A quoted
///   example glued to the end of a part is cut off too (`restrict or confine, "I limit you..."`,
///   `necessary:"long on brains"`), except after "phrase" / "expression", where the quote names
///   the phrase being defined. Examples usually contain the very words to retrieve.
/// - Passage: the synset's words, underscores as spaces, adjective markers "(a)", "(p)", "(ip)"
///   removed, joined by ", " (e.g. "laying waste, ruin, ruination").
/// Identical passages are one passage of the corpus (ids "p0", "p1", ... in first-seen order);
/// relevance is by passage: a query's relevant document is its synset's passage (grade 1).
/// A synset's key is the data file's part-of-speech letter (n, v, a, r: adjective satellites,
/// ss_type 's', count as 'a' since they live in data.adj) followed by its 8-digit offset, e.g.
/// "n00001740"; keys are unique because offsets are unique within a file. Each synset goes to
/// train / dev / test by FNV-1a 64 of its key modulo 100 (< train_percent: train; then
/// dev_percent buckets: dev; else test), so the split is the same across runs and machines.
/// Query ids are the synset keys. Train examples have one positive (the passage, with its
/// corpus id), the synset key as query id, and no negatives. Synsets whose definition is empty
/// are skipped. The corpus holds the passages of all synsets, train ones included.
/// Throws std::invalid_argument on percentages outside 0..100 or summing above 100, and
/// DataError naming the file when a data file is missing (with a hint to install the Debian
/// package wordnet-base) or a line is malformed.
RetrievalData load_wordnet(const WordNetOptions& options = {});

/// The split bucket of a synset key: FNV-1a 64 of the key modulo 100. Exposed for tests and for
/// tools that need to tell which split a synset is in.
int wordnet_bucket(const std::string& key);

}  // namespace gradcache::retriever
