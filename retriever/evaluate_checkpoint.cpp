#include "retriever/evaluate_checkpoint.h"

#include "retriever/checkpoint.h"
#include "retriever/device.h"
#include "retriever/evaluate.h"
#include "retriever/task.h"

#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

namespace gradcache {
namespace retriever {
namespace {

/// A setting stored in EvalSettings::index (DenseIndexOptions), declared as field() declares one.
template <class T>
Setting<EvalSettings> index_field(const std::string& key, T DenseIndexOptions::*member, const std::string& flag,
                                  const std::string& help) {
  Setting<EvalSettings> s = field(key, &EvalSettings::checkpoint, flag, help);  // key, flag, help, parse
  s.get = [member](const EvalSettings& c) { return nlohmann::json(c.index.*member); };
  s.set = [member, key](EvalSettings& c, const nlohmann::json& v) {
    c.index.*member = json_setting_value<T>(v, key);
  };
  s.parse = [key, flag](const std::string& text) { return nlohmann::json{{key, parse_setting_text<T>(text, flag)}}; };
  s.value_hint = std::is_same_v<T, std::string> ? "TEXT" : "INT";
  return s.in_group("Search");
}

// --index and its parameters, and the BM25 baseline.
void add_search_settings(SettingsTable<EvalSettings>& t) {
  using S = EvalSettings;
  using D = DenseIndexOptions;
  const std::string group = "Search";
  auto index = [](const char* key, int64_t D::*member, const char* flag, const char* help) {
    return index_field(key, member, flag, help);
  };
  t.add(index_field("index", &D::type, "--index",
                    "Dense search: exact (the faster exact method), flat (FAISS), blocked, hnsw or ivfpq")
            .checked(one_of({"exact", "flat", "blocked", "hnsw", "ivfpq"})));
  t.add(index("hnsw_m", &DenseIndexOptions::hnsw_m, "--hnsw-m", "HNSW: neighbours per node").checked(at_least(2)));
  t.add(index("ef_construction", &DenseIndexOptions::ef_construction, "--ef-construction",
              "HNSW: candidates while building").checked(positive()));
  t.add(index("ef_search", &DenseIndexOptions::ef_search, "--ef-search", "HNSW: candidates while searching")
            .checked(positive()));
  t.add(index("nlist", &DenseIndexOptions::nlist, "--nlist", "IVF-PQ: clusters (0: about sqrt(passages))")
            .checked(at_least(0)));
  t.add(index("nprobe", &DenseIndexOptions::nprobe, "--nprobe", "IVF-PQ: clusters visited per query")
            .checked(positive()));
  t.add(index("pq_m", &DenseIndexOptions::pq_m, "--pq-m", "IVF-PQ: sub-quantizers, dividing the embedding size (0: auto)")
            .checked(at_least(0)));
  t.add(index("pq_bits", &DenseIndexOptions::pq_bits, "--pq-bits", "IVF-PQ: bits per code").checked(positive()));
  t.add(field("eval_bm25", &S::eval_bm25, "--eval-bm25", "Also rank with BM25 (Xapian): the bm25 row").in_group(group));
  t.add(field("bm25_index", &S::bm25_index, "--bm25-index",
              "BM25 index directory, reused when it holds the same corpus (default: a temporary one)")
            .in_group(group));
  t.add(field("bm25_k1", &S::bm25_k1, "--bm25-k1", "BM25 k1").in_group(group).checked(at_least(0)));
  t.add(field("bm25_b", &S::bm25_b, "--bm25-b", "BM25 b").in_group(group).checked(at_least(0)));
}

SettingsTable<EvalSettings> make_eval_settings() {
  using S = EvalSettings;
  SettingsTable<S> t;
  t.add(field("checkpoint", &S::checkpoint, "--checkpoint", "checkpoint.pt, or the --output directory of a run")
            .required());
  t.add(field("corpus", &S::corpus, "--corpus", "Corpus: id<TAB>text or JSONL {id, text}"));
  t.add(field("queries", &S::queries, "--queries", "Queries: id<TAB>text or JSONL {id, text}"));
  t.add(field("qrels", &S::qrels, "--qrels", "Judgements: TREC 'qid 0 docid rel'"));
  t.add(field("split", &S::split, "--split", "WordNet split when no files are given: test or dev")
            .checked(one_of({"test", "dev"})));
  t.add(field("wordnet_dir", &S::wordnet_dir, "--wordnet-dir", "WordNet database (default: the run's)"));
  t.add(field("on_bad_line", &S::on_bad_line, "--on-bad-line", "error or skip").checked(one_of({"error", "skip"})));
  t.add(field("batch_size", &S::batch_size, "--batch-size", "Encoding batch").checked(positive()));
  t.add(field("top_k", &S::top_k, "--top-k", "Documents ranked per query").checked(positive()));
  t.add(field("device", &S::device, "--device", "cpu, cuda, ...").checked(existing_device()));
  t.add(field("threads", &S::threads, "--threads", "Intra-op threads (0: 1)").checked(at_least(0)));
  t.add(field("quick", &S::quick, "--quick", "A small subset of the WordNet split (smoke tests)").as_switch());
  add_search_settings(t);
  t.add_check([](const S& s) {
    const int given = !s.corpus.empty() + !s.queries.empty() + !s.qrels.empty();
    return given == 0 || given == 3 ? "" : "--corpus, --queries and --qrels go together";
  });
  return t;
}

}  // namespace

const SettingsTable<EvalSettings>& eval_settings() {
  static const SettingsTable<EvalSettings> table = make_eval_settings();
  return table;
}

EvalReport evaluate_checkpoint(const EvalSettings& s, const EvalControl& control) {
  eval_settings().validate(s);
  auto log = [&](const std::string& line) {
    if (control.log) control.log(line);
  };
  torch::set_num_threads(s.threads > 0 ? static_cast<int>(s.threads) : 1);
  EvalReport report;
  report.checkpoint = s.checkpoint;
  if (std::filesystem::is_directory(s.checkpoint)) {
    report.checkpoint = (std::filesystem::path(s.checkpoint) / "checkpoint.pt").string();
  }
  auto [info, model] = load_checkpoint(report.checkpoint);  // checked (CRCs) and read once
  EvalData data;
  if (!s.corpus.empty()) {
    std::vector<std::string> notices;
    data = read_eval_files({s.corpus, s.queries, s.qrels}, parse_on_bad_line(s.on_bad_line), notices);
    for (const auto& notice : notices) log(notice);
  } else {
    data = load_wordnet_eval(s.wordnet_dir.empty() ? info.config.wordnet_dir : s.wordnet_dir, s.split, s.quick);
  }
  const c10::Device device(s.device);
  model.to(device);
  const auto tokenizer = Tokenizer::from_serialized(info.tokenizer);
  const auto set = tokenize_eval_set(data.name, data.corpus, data.queries, data.qrels, tokenizer,
                                     static_cast<size_t>(info.config.query_max_len),
                                     static_cast<size_t>(info.config.passage_max_len));
  log("encoding " + std::to_string(set.corpus.size()) + " passages and " + std::to_string(set.queries.size()) +
      " queries on " + s.device);
  EvalOptions options;
  options.batch_size = s.batch_size;
  options.top_k = s.top_k;
  options.device = device;
  options.stop = control.stop;
  options.index = s.index;
  options.index.threads = s.threads > 0 ? s.threads : 1;
  report.dense = evaluate_dense(model, set, options);
  report.metrics = report.dense.metrics;
  if (s.eval_bm25) {
    Bm25Options bm25;
    bm25.k1 = s.bm25_k1;
    bm25.b = s.bm25_b;
    bm25.index_dir = s.bm25_index;
    report.bm25 = evaluate_bm25(data.corpus, data.queries, set, bm25, s.top_k, log);
  }
  report.data_name = data.name;
  report.corpus_size = data.corpus.size();
  report.step = info.progress.step;
  return report;
}

}  // namespace retriever
}  // namespace gradcache
