#include "retriever/commands/evaluate_run.h"

#include "retriever/commands/model_source_settings.h"
#include "retriever/config/device.h"
#include "retriever/config/matryoshka_settings.h"
#include "retriever/data/task.h"
#include "retriever/launch/threads.h"
#include "retriever/run/checkpoint.h"
#include "retriever/run/saved_encoder.h"
#include "retriever/search/evaluate.h"
#include "retriever/search/search_settings.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

namespace gradcache {
namespace retriever {
namespace {

// --index and its parameters, and the BM25 baseline.
void add_search_settings(SettingsTable<EvalSettings>& t) {
  add_index_settings(t);
  t.add(field("eval_bm25", &EvalSettings::eval_bm25, "--eval-bm25", "Also rank with BM25 (Xapian): the bm25 row")
            .in_group("Search"));
  add_bm25_settings(t);
}

SettingsTable<EvalSettings> make_eval_settings() {
  using S = EvalSettings;
  SettingsTable<S> t;
  t.add(field("checkpoint", &S::checkpoint, "--checkpoint", "checkpoint.pt, or the --output directory of a run"));
  add_pretrained_source_settings(t);
  t.add(field("corpus", &S::corpus, "--corpus", "Corpus: id<TAB>text or JSONL {id, text}"));
  t.add(field("queries", &S::queries, "--queries", "Queries: id<TAB>text or JSONL {id, text}"));
  t.add(field("qrels", &S::qrels, "--qrels", "Judgements: TREC 'qid 0 docid rel'"));
  t.add(field("split", &S::split, "--split", "WordNet split when no files are given: test or dev")
            .checked(one_of({"test", "dev"})));
  t.add(field("wordnet_dir", &S::wordnet_dir, "--wordnet-dir", "WordNet database (default: the run's)"));
  t.add(choice_field("on_bad_line", &S::on_bad_line, "--on-bad-line", "error or skip", on_bad_line_names()));
  t.add(field("batch_size", &S::batch_size, "--batch-size", "Encoding batch").checked(positive()));
  t.add(field("top_k", &S::top_k, "--top-k", "Documents ranked per query").checked(positive()));
  add_machine_settings(t);
  t.add(field("quick", &S::quick, "--quick", "A small subset of the WordNet split (smoke tests)").as_switch());
  add_prefix_dim_setting(t, "Evaluate only");
  add_search_settings(t);
  t.add(field("rerank_k", &S::rerank_k, "--rerank-k",
              "Runs with a learned similarity (--similarity mlp): also re-rank each query's dense top K with Phi, "
              "a second row (0: none)")
            .in_group("Search")
            .checked(at_least(0)));
  t.add_check([](const S& s) {
    return s.checkpoint.empty() == s.pretrained.dir.empty()
               ? "give one of --checkpoint (a training run) and --model-dir (a pretrained model)"
               : "";
  });
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
  set_intra_op_threads(s.threads);
  EvalReport report;
  CheckpointInfo info;  // a --model-dir model has no run: the defaults of one
  const bool pretrained = !s.pretrained.dir.empty();
  report.checkpoint = pretrained ? s.pretrained.dir : checkpoint_of_run(s.checkpoint);
  TextEncoder encoder = pretrained ? load_pretrained_encoder(s.pretrained) : load_run_encoder(s.checkpoint, &info);
  if (!encoder.description.empty()) log("pretrained model " + s.pretrained.dir + ": " + encoder.description);
  BiEncoder& model = encoder.model;
  EvalData data;
  if (!s.corpus.empty()) {
    std::vector<std::string> notices;
    data = read_eval_files({s.corpus, s.queries, s.qrels}, s.on_bad_line, notices);
    for (const auto& notice : notices) log(notice);
  } else {
    data = load_wordnet_eval(s.wordnet_dir.empty() ? info.config.data.wordnet_dir : s.wordnet_dir, s.split, s.quick);
  }
  const c10::Device device(s.device);
  model.to(device);
  const auto set = tokenize_eval_set(data.name, data.corpus, data.queries, data.qrels, encoder.tokenizer,
                                     static_cast<size_t>(encoder.query_max_len),
                                     static_cast<size_t>(encoder.passage_max_len));
  log("encoding " + std::to_string(set.corpus.size()) + " passages and " + std::to_string(set.queries.size()) +
      " queries on " + s.device);
  // No more documents can be ranked than the corpus holds: --top-k 1e12 asked the index for a
  // [queries, 1e12] result and failed after the encoding (issue 41).
  const int64_t most_ranked = std::max<int64_t>(static_cast<int64_t>(data.corpus.size()), 1);
  const int64_t top_k = std::min(s.top_k, most_ranked);
  EvalOptions options;
  options.batch_size = s.batch_size;
  options.top_k = top_k;
  options.device = device;
  options.stop = control.stop;
  options.log = log;
  options.index = s.index;
  options.index.threads = s.threads > 0 ? s.threads : 1;
  options.index.stop = control.stop;
  const bool normalizes = model.normalizes();
  if (s.dim > 0) {
    if (model.output_dim() > 0) check_prefix_dim(s.dim, model.output_dim(), "--dim");
    options.prefix_dim = report.dim = s.dim;
    options.normalize_prefix = normalizes;
  }
  options.rerank_k = std::min(s.rerank_k, most_ranked);
  report.dense = evaluate_dense(model, set, options);
  report.metrics = report.dense.metrics;
  const auto prefix_dims = parse_dim_list(info.config.matryoshka.dims, "--matryoshka");
  if (s.dim == 0 && !prefix_dims.empty()) {  // a --matryoshka run: each prefix width too
    report.prefixes = evaluate_prefixes(model, set, options, prefix_dims, normalizes);
  }
  if (s.eval_bm25) {
    Bm25Options bm25;
    bm25.k1 = s.bm25_k1;
    bm25.b = s.bm25_b;
    bm25.index_dir = s.bm25_index;
    bm25.stop = control.stop;
    report.bm25 = evaluate_bm25(data.corpus, data.queries, set, bm25, top_k, log);
  }
  report.data_name = data.name;
  report.corpus_size = data.corpus.size();
  report.step = info.progress.step;
  report.row = pretrained ? "zero-shot" : "step " + std::to_string(report.step);
  return report;
}

}  // namespace retriever
}  // namespace gradcache
