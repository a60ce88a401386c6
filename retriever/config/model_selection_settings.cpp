#include "retriever/config/model_selection_settings.h"

#include "retriever/config/train_config.h"

namespace gradcache {
namespace retriever {
namespace {

using Table = SettingsTable<TrainConfig>;

bool has_dev_files(const TrainConfig& c) {
  return !c.selection.dev_corpus.empty() || !c.selection.dev_queries.empty() || !c.selection.dev_qrels.empty();
}

// What dev data a run has, and whether the flags given for it fit together.
std::string check_dev_data(const TrainConfig& c) {
  const bool files = has_dev_files(c), fraction = c.selection.dev_fraction > 0;
  if (c.data.train_file.empty() && (files || fraction)) {
    return std::string(files ? "--dev-corpus, --dev-queries and --dev-qrels are" : "--dev-fraction is") +
           " for --train-file data; WordNet's dev split is used without them";
  }
  if (files && fraction) return "--dev-fraction and --dev-queries/--dev-qrels are two kinds of dev data; give one";
  if (files && (c.selection.dev_queries.empty() || c.selection.dev_qrels.empty()))
    return "--dev-queries and --dev-qrels go together";
  if (files && c.selection.dev_corpus.empty() && c.data.eval_corpus.empty()) {
    return "--dev-queries are ranked against --dev-corpus, or else --eval-corpus: give one of them";
  }
  if (c.selection.eval_every == 0 && (files || fraction || c.selection.patience > 0)) {
    return std::string(fraction ? "--dev-fraction" : files ? "--dev-queries" : "--patience") +
           " is used only with --eval-every N (steps between dev evaluations)";
  }
  if (c.selection.eval_every > 0 && !c.data.train_file.empty() && !files && !fraction) {
    return "--eval-every needs dev data: with --train-file, give --dev-queries and --dev-qrels (ranked against "
           "--eval-corpus or --dev-corpus), or hold out training pairs with --dev-fraction F";
  }
  return "";
}

}  // namespace

const std::vector<std::string>& selection_metric_names() {
  static const std::vector<std::string> names{"recall@1", "recall@10", "recall@100", "mrr@10", "ndcg@10"};
  return names;
}

// They decide which model best.pt holds and when the run stops: a resumed run keeps them.
void add_model_selection_settings(Table& t) {
  const char* group = "Model selection";
  t.add(
      nested_field("eval_every", &TrainConfig::selection, &SelectionSettings::eval_every, "--eval-every",
                   "Steps between evaluations on dev data (WordNet's dev split, or --dev-*); the best model is kept as "
                   "OUTPUT/best.pt (0: none)")
          .in_group(group)
          .hint("N")
          .checked(at_least(0)));
  t.add(nested_field("dev_corpus", &TrainConfig::selection, &SelectionSettings::dev_corpus, "--dev-corpus",
                     "Corpus the dev queries are ranked against (default: --eval-corpus)")
            .in_group(group));
  t.add(nested_field("dev_queries", &TrainConfig::selection, &SelectionSettings::dev_queries, "--dev-queries",
                     "Dev queries: id<TAB>text or JSONL")
            .in_group(group));
  t.add(nested_field("dev_qrels", &TrainConfig::selection, &SelectionSettings::dev_qrels, "--dev-qrels",
                     "Dev judgements: TREC 'qid 0 docid rel'")
            .in_group(group));
  t.add(nested_field(
            "dev_fraction", &TrainConfig::selection, &SelectionSettings::dev_fraction, "--dev-fraction",
            "Hold out this fraction of the training pairs (seeded by --seed) as dev queries, ranked against every "
            "distinct passage of --train-file")
            .in_group(group)
            .hint("F")
            .checked([](const nlohmann::json& v) {
              const double x = v.get<double>();
              return x >= 0 && x < 1 ? "" : "must be in (0, 1): the fraction of training pairs held out (0: none)";
            }));
  t.add(nested_field("select_metric", &TrainConfig::selection, &SelectionSettings::metric, "--select-metric",
                     "Dev metric best.pt is chosen by")
            .in_group(group)
            .checked(one_of(selection_metric_names())));
  t.add(nested_field("patience", &TrainConfig::selection, &SelectionSettings::patience, "--patience",
                     "Stop after this many dev evaluations without improvement (0: never)")
            .in_group(group)
            .hint("K")
            .checked(at_least(0)));
  t.add_check(check_dev_data);
}

}  // namespace retriever
}  // namespace gradcache
