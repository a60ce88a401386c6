#include "retriever/commands/mine.h"

#include "files/atomic_file.h"
#include "retriever/commands/model_source_settings.h"
#include "retriever/config/device.h"
#include "retriever/data/data_files.h"
#include "retriever/data/passage_corpus.h"
#include "retriever/data/task.h"
#include "retriever/data/text_data.h"
#include "retriever/files/output_not_input.h"
#include "retriever/launch/threads.h"
#include "retriever/model/encode_all.h"
#include "retriever/model/tokenizer.h"
#include "retriever/run/embeddings.h"
#include "retriever/run/saved_encoder.h"
#include "retriever/search/bm25.h"
#include "retriever/search/exact_top_k.h"
#include "retriever/search/search_settings.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace gradcache::retriever {
namespace {

SettingsTable<MineSettings> make_mine_settings() {
  using S = MineSettings;
  SettingsTable<S> t;
  t.add(field("run", &S::run, "--run", "Dense retrieval with this run: checkpoint.pt (or best.pt) or its directory")
            .in_group("Retrieval"));
  add_pretrained_source_settings(t);
  t.add(field("model", &S::model, "--model", "Dense retrieval with an exported model (gradcache export's directory)")
            .in_group("Retrieval"));
  t.add(field("bm25", &S::bm25, "--bm25", "Retrieve with BM25 (Xapian) instead").as_switch().in_group("Retrieval"));
  t.add(field("embeddings", &S::embeddings, "--embeddings",
              "The corpus's vectors from gradcache encode with the same model (not encoded again)")
            .in_group("Retrieval"));
  add_index_settings(t);
  add_bm25_settings(t);
  t.add(field("train_file", &S::train_file, "--train-file",
              "Training queries and positives (JSONL or TSV, as train reads); default: WordNet's train split")
            .in_group("Data"));
  t.add(field("corpus", &S::corpus, "--corpus",
              "Documents to mine (id<TAB>text or JSONL); default: WordNet's corpus, or the training file's passages")
            .in_group("Data"));
  t.add(field("qrels", &S::qrels, "--qrels", "Judgements (TREC or BEIR): documents marked relevant are never negatives")
            .in_group("Data"));
  t.add(field("wordnet_dir", &S::wordnet_dir, "--wordnet-dir", "WordNet database").in_group("Data"));
  t.add(choice_field("on_bad_line", &S::on_bad_line, "--on-bad-line", "error or skip", on_bad_line_names())
            .in_group("Data"));
  t.add(field("output", &S::output, "--output", "The mined training file (Tevatron JSONL)").required().in_group("Output"));
  t.add(field("overwrite", &S::overwrite, "--overwrite", "Replace an existing --output").as_switch().in_group("Output"));
  t.add(field("negatives", &S::negatives, "--negatives", "Negatives per query").checked(positive()).in_group("Mining"));
  t.add(field("depth", &S::depth, "--depth", "Rank range FIRST:LAST the negatives are drawn from (1-based)")
            .in_group("Mining"));
  t.add(field("margin", &S::margin, "--margin",
              "Positive-aware filter (dense): keep a candidate only if its score < margin x the positive's; 0: off")
            .checked(at_least(0.0)).in_group("Mining"));
  t.add(field("seed", &S::seed, "--seed", "Seed of the draw among the candidates").in_group("Mining"));
  t.add(field("on_short", &S::on_short, "--on-short",
              "A query with fewer candidates than --negatives: error, drop it, or top it up with random documents")
            .checked(one_of({"error", "drop", "random"}))
            .in_group("Mining"));
  t.add(field("limit", &S::limit, "--limit", "Only the first N training queries (0: all)").checked(at_least(0))
            .in_group("Mining"));
  t.add(field("batch_size", &S::batch_size, "--batch-size", "Encoding batch").checked(positive()).in_group("Machine"));
  add_machine_settings(t);
  t.add_check([](const S& s) {
    if (!s.run.empty() + !s.model.empty() + !s.pretrained.dir.empty() + s.bm25 != 1)
      return std::string("give exactly one of --run, --model, --model-dir (dense retrieval) and --bm25");
    if (s.bm25 && s.margin > 0) return std::string("--margin needs dense scores: use it with --run, --model or --model-dir");
    if (s.bm25 && !s.embeddings.empty())
      return std::string("--embeddings are dense vectors: use them with --run, --model or --model-dir");
    return std::string();
  });
  t.add_check([](const S& s) {
    MiningOptions options;
    try {
      parse_depth(s.depth, options);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  });
  return t;
}

// Training queries, the corpus they are mined from, and the judgements.
struct MiningData {
  std::vector<TrainExample> examples;
  TextCollection corpus;
  Qrels qrels;
  std::unordered_map<std::string, std::vector<int64_t>> rows_by_text;  // corpus rows of each text
};

MiningData load_mining_data(const MineSettings& s, std::vector<std::string>& notices) {
  const DataFiles read(s.on_bad_line, notices);
  auto pairs = load_training_pairs(s.train_file, s.wordnet_dir, read);
  MiningData data;
  data.examples = std::move(pairs.examples);
  if (!s.corpus.empty()) {
    data.corpus = read.collection(s.corpus);
  } else {
    data.corpus = pairs.wordnet ? std::move(pairs.wordnet->corpus) : passage_corpus(data.examples, s.train_file);
  }
  if (!s.qrels.empty()) data.qrels = read.qrels(s.qrels);
  if (s.limit > 0 && data.examples.size() > static_cast<size_t>(s.limit)) data.examples.resize(s.limit);
  for (size_t row = 0; row < data.corpus.size(); ++row)
    data.rows_by_text[data.corpus.texts[row]].push_back(static_cast<int64_t>(row));
  return data;
}

// What query `e` may not take as a negative: its positives (by id and by identical text) and the
// documents its judgements mark relevant.
std::unordered_set<int64_t> excluded_rows(const MiningData& data, const TrainExample& e) {
  std::unordered_set<int64_t> rows;
  for (size_t i = 0; i < e.positives.size(); ++i) {
    if (auto it = data.rows_by_text.find(e.positives[i]); it != data.rows_by_text.end())
      rows.insert(it->second.begin(), it->second.end());
    if (auto it = data.corpus.index.find(e.positive_ids[i]); it != data.corpus.index.end())
      rows.insert(static_cast<int64_t>(it->second));
  }
  if (auto judged = data.qrels.find(e.query_id); !e.query_id.empty() && judged != data.qrels.end()) {
    for (const auto& [doc, grade] : judged->second) {
      auto it = data.corpus.index.find(doc);
      if (grade > 0 && it != data.corpus.index.end()) rows.insert(static_cast<int64_t>(it->second));
    }
  }
  return rows;
}


// Turns a search's results into mining queries (dropping the -1 rows of a search that found
// fewer documents).
std::vector<MiningQuery> mining_queries(const TopK& top) {
  const auto lists = ranked_lists(top);
  const auto scores = top.scores.to(torch::kCPU).contiguous();
  std::vector<MiningQuery> out(lists.size());
  for (size_t q = 0; q < out.size(); ++q) {
    out[q].ranked = lists[q];
    const float* score = scores[static_cast<int64_t>(q)].data_ptr<float>();
    out[q].scores.assign(score, score + lists[q].size());
  }
  return out;
}

// The query and passage encoders of a run, of a pretrained model or of an export.
std::pair<TextEncoder, TextEncoder> load_encoders(const MineSettings& s) {
  if (!s.run.empty() || !s.pretrained.dir.empty()) {
    TextEncoder model = s.run.empty() ? load_pretrained_encoder(s.pretrained) : load_run_encoder(s.run);
    return {model, model};
  }
  return {load_exported_encoder(s.model, "query"), load_exported_encoder(s.model, "passage")};
}

// The corpus's vectors from an encode directory, checked against the corpus (same ids in the
// same order) and the queries (same dimension): vectors of another corpus or model are refused.
at::Tensor encoded_corpus(const std::string& dir, const TextCollection& corpus, int64_t query_dim,
                          const nlohmann::json& passage_model) {
  Embeddings stored = read_embeddings(dir);
  if (stored.ids != corpus.ids)
    throw std::runtime_error("--embeddings " + dir + " holds " + std::to_string(stored.ids.size()) +
                             " vectors whose ids are not the corpus's " + std::to_string(corpus.size()) +
                             " documents in order: encode this corpus (gradcache encode --corpus ...)");
  if (stored.vectors.size(1) != query_dim)
    throw std::runtime_error("--embeddings " + dir + " has dimension " + std::to_string(stored.vectors.size(1)) +
                             " but the model's queries have " + std::to_string(query_dim) +
                             ": the vectors come from another model; encode the corpus with this one");
  if (stored.manifest.value("side", "passage") != "passage")
    throw std::runtime_error("--embeddings " + dir + " holds query-side vectors; encode the corpus with --side passage");
  // manifest.json names the model (checkpoint and step, export file or model directory, and a
  // digest of its weights) that made the vectors: another model's vectors of the same width are
  // as wrong as another width's, and so are those of a run trained again at the same path and
  // step. (Manifests of earlier versions hold no digest: compared without it.)
  nlohmann::json expected = passage_model;
  if (stored.manifest.contains("model") && !stored.manifest["model"].contains("weights_crc32"))
    expected.erase("weights_crc32");
  if (stored.manifest.contains("model") && stored.manifest["model"] != expected)
    throw std::runtime_error("--embeddings " + dir + " were made by " + stored.manifest["model"].dump() +
                             ", not by this passage encoder, " + passage_model.dump() +
                             ": encode the corpus with this model (gradcache encode), or mine with that one");
  return stored.vectors;
}

// Ranks the corpus for every query with a trained encoder through a DenseIndex (no dropout).
// With a margin, also each query's score of its first positive.
std::vector<MiningQuery> retrieve_dense(const MineSettings& s, const MiningData& data, int64_t k,
                                        const MineControl& control) {
  auto [query_encoder, passage_encoder] = load_encoders(s);
  const c10::Device device(s.device);
  auto encode = [&](TextEncoder& encoder, bool query_side, const std::vector<std::string>& texts) {
    encoder.model.to(device);
    encoder.model.train(false);
    std::vector<std::vector<int64_t>> tokens;
    tokens.reserve(texts.size());
    for (const auto& text : texts) tokens.push_back(encoder.tokens(text, query_side));
    const auto model = query_side ? encoder.model.query_model() : encoder.model.passage_model();
    return encode_all(model, tokens, s.batch_size, device, control.stop);
  };
  std::vector<std::string> query_texts, positive_texts;
  for (const auto& e : data.examples) {
    query_texts.push_back(e.query);
    positive_texts.push_back(e.positives.front());
  }
  if (control.log)
    control.log("encoding " + std::to_string(query_texts.size()) + " queries and " +
                (s.embeddings.empty() ? std::to_string(data.corpus.size()) + " documents"
                                      : "reading the documents' vectors from " + s.embeddings));
  const auto queries = encode(query_encoder, true, query_texts);
  DenseIndexOptions index_options = s.index;
  index_options.threads = s.threads > 0 ? s.threads : 1;
  index_options.stop = control.stop;
  const DenseIndex index(s.embeddings.empty() ? encode(passage_encoder, false, data.corpus.texts)
                                              : encoded_corpus(s.embeddings, data.corpus, queries.size(1),
                                                               model_identity(passage_encoder)),
                         index_options);
  if (control.log) control.log("searching with " + index.describe());
  auto out = mining_queries(index.search(queries, k));
  if (s.margin > 0) {
    const auto scores = (queries * encode(passage_encoder, false, positive_texts)).sum(1).to(torch::kCPU);
    for (size_t q = 0; q < out.size(); ++q) out[q].positive_score = scores[static_cast<int64_t>(q)].item<float>();
  }
  return out;
}

// Ranks the corpus for every query with BM25 (the index is built once, or reused from --bm25-index).
std::vector<MiningQuery> retrieve_bm25(const MineSettings& s, const MiningData& data, int64_t k,
                                       const MineControl& control) {
  Bm25Options options;
  options.k1 = s.bm25_k1;
  options.b = s.bm25_b;
  options.index_dir = s.bm25_index;
  options.stop = control.stop;
  const Bm25Index index(data.corpus, options, control.log);
  std::vector<std::string> query_texts;
  for (const auto& e : data.examples) query_texts.push_back(e.query);
  return mining_queries(index.search(query_texts, k));
}

// A passage of the output file: {"docid", "text"}.
nlohmann::ordered_json passage_json(const std::string& id, const std::string& text) {
  return {{"docid", id}, {"text", text}};
}

// Tevatron JSONL: one line per query with its positives and the chosen negatives.
// Queries with fewer than `negatives` negatives are left out (--on-short drop).
std::string mined_jsonl(const MiningData& data, const std::vector<std::vector<int64_t>>& chosen, int64_t negatives,
                        int64_t& written) {
  std::string out;
  for (size_t q = 0; q < data.examples.size(); ++q) {
    if (static_cast<int64_t>(chosen[q].size()) < negatives) continue;
    ++written;
    const TrainExample& e = data.examples[q];
    nlohmann::ordered_json line = {{"query_id", e.query_id.empty() ? "q" + std::to_string(q) : e.query_id},
                           {"query", e.query},
                           {"positive_passages", nlohmann::ordered_json::array()},
                           {"negative_passages", nlohmann::ordered_json::array()}};
    for (size_t i = 0; i < e.positives.size(); ++i) {
      std::string id = e.positive_ids[i];
      if (auto it = data.rows_by_text.find(e.positives[i]); id.empty() && it != data.rows_by_text.end())
        id = data.corpus.ids[it->second.front()];
      line["positive_passages"].push_back(passage_json(id, e.positives[i]));
    }
    for (int64_t row : chosen[q])
      line["negative_passages"].push_back(passage_json(data.corpus.ids[row], data.corpus.texts[row]));
    out += line.dump() + "\n";
  }
  return out;
}

// Refuses a mining whose queries cannot all get --negatives negatives: train would fail on it.
void check_enough(const MineSettings& s, const MiningOptions& options, const MiningStats& stats) {
  if (stats.short_queries == 0 || s.on_short == "drop") return;
  throw std::runtime_error(
      "--negatives " + std::to_string(s.negatives) + ": " + std::to_string(stats.short_queries) + " of " +
      std::to_string(stats.queries) + " queries have fewer candidates in ranks " + s.depth + " (fewest: " +
      std::to_string(stats.fewest_candidates) + ", after dropping " + std::to_string(stats.excluded) +
      " positives/relevant and " + std::to_string(stats.above_margin) + " above the margin); use a deeper --depth "
      "(e.g. " + std::to_string(options.first_rank) + ":" + std::to_string(2 * options.last_rank) +
      "), fewer --negatives" + (s.margin > 0 ? ", a larger --margin" : "") +
      " or --on-short drop|random; nothing was written");
}

}  // namespace

const SettingsTable<MineSettings>& mine_settings() {
  static const SettingsTable<MineSettings> table = make_mine_settings();
  return table;
}

}  // namespace gradcache::retriever

namespace gradcache::retriever {

MineReport mine(const MineSettings& s, const MineControl& control) {
  mine_settings().validate(s);
  if (std::filesystem::is_directory(s.output))  // checked before the work: the rename at the end would fail
    throw std::runtime_error("--output " + s.output + " is a directory; give the path of the JSONL file to write");
  refuse_output_that_is_an_input("--output", s.output,
                                 {{"--train-file", s.train_file}, {"--corpus", s.corpus}, {"--qrels", s.qrels}});
  if (!s.overwrite && std::filesystem::exists(s.output))
    throw std::runtime_error("--output " + s.output + " exists; pass --overwrite to replace it");
  set_intra_op_threads(s.threads);
  MiningOptions options;
  parse_depth(s.depth, options);
  options.negatives = s.negatives;
  options.margin = s.margin;
  options.seed = s.seed;
  std::vector<std::string> notices;
  const MiningData data = load_mining_data(s, notices);
  for (const auto& notice : notices)
    if (control.log) control.log(notice);
  // A query's negatives are distinct documents other than its positive: refused before any
  // retrieval when the corpus cannot hold that many, whatever --on-short says.
  const auto documents = static_cast<int64_t>(data.corpus.size());
  if (s.negatives >= documents)
    throw std::invalid_argument("--negatives " + std::to_string(s.negatives) + ": the corpus holds " +
                                std::to_string(documents) + " documents, and a query's negatives are other "
                                "documents than its positive; give at most " + std::to_string(documents - 1));
  options.stop = control.stop;
  MineReport report;
  report.output = s.output;
  report.corpus_size = data.corpus.size();
  std::vector<MiningQuery> queries = s.bm25 ? retrieve_bm25(s, data, options.last_rank, control)
                                            : retrieve_dense(s, data, options.last_rank, control);
  report.source = s.bm25                    ? "bm25"
                  : !s.run.empty()            ? checkpoint_of_run(s.run)
                  : !s.pretrained.dir.empty() ? s.pretrained.dir
                                              : s.model;
  for (size_t q = 0; q < queries.size(); ++q) queries[q].excluded = excluded_rows(data, data.examples[q]);
  if (s.on_short == "random") options.random_fill_from = static_cast<int64_t>(data.corpus.size());
  const auto negatives = choose_negatives(queries, options, report.stats);
  check_enough(s, options, report.stats);
  const std::string lines = mined_jsonl(data, negatives, s.negatives, report.written);
  if (report.written == 0) throw std::runtime_error("--on-short drop: every query fell short; nothing was written");
  stop_if_signalled(control.stop);  // the last moment: a signal during selection writes nothing
  files::write_file_atomic(s.output, lines);
  return report;
}

}  // namespace gradcache::retriever
