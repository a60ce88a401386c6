// `gradcache eval`: a checkpoint, a corpus, queries and judgements -> retrieval metrics.
#include "commands.h"

#include "retriever/checkpoint.h"
#include "retriever/evaluate.h"
#include "retriever/task.h"

#include <torch/torch.h>

#include <filesystem>
#include <iostream>

namespace gradcache {
namespace cli {

std::function<int()> add_eval_command(CLI::App& app) {
  struct EvalFlags {
    std::string checkpoint, corpus, queries, qrels, split = "test", on_bad_line = "error", device = "cpu";
    std::string wordnet_dir;
    int64_t batch_size = 512, top_k = 100, threads = 0;
    bool json = false, quick = false;
  };
  auto f = std::make_shared<EvalFlags>();
  auto* cmd = app.add_subcommand("eval", "Evaluate a checkpoint: encode the corpus and the queries, rank every "
                                         "document for every query (exact), print Recall@1/10/100, MRR@10, "
                                         "nDCG@10. Without --corpus: the WordNet split of the run's data.");
  cmd->add_option("--checkpoint", f->checkpoint, "checkpoint.pt, or the --output directory of a run")->required();
  cmd->add_option("--corpus", f->corpus, "Corpus: id<TAB>text or JSONL {id, text}");
  cmd->add_option("--queries", f->queries, "Queries: id<TAB>text or JSONL {id, text}");
  cmd->add_option("--qrels", f->qrels, "Judgements: TREC 'qid 0 docid rel'");
  cmd->add_option("--split", f->split, "WordNet split when no files are given: test or dev")->capture_default_str();
  cmd->add_option("--wordnet-dir", f->wordnet_dir, "WordNet database (default: the run's)");
  cmd->add_option("--on-bad-line", f->on_bad_line, "error or skip")->capture_default_str();
  cmd->add_option("--batch-size", f->batch_size, "Encoding batch")->capture_default_str();
  cmd->add_option("--top-k", f->top_k, "Documents ranked per query")->capture_default_str();
  cmd->add_option("--device", f->device, "cpu, cuda, ...")->capture_default_str();
  cmd->add_option("--threads", f->threads, "Intra-op threads (0: 1, OpenBLAS uses all cores)")->capture_default_str();
  cmd->add_flag("--json", f->json, "Print the metrics as JSON instead of a table");
  cmd->add_flag("--quick", f->quick, "A small subset of the WordNet split (smoke tests)");

  return [f]() {
    using namespace retriever;
    torch::set_num_threads(f->threads > 0 ? static_cast<int>(f->threads) : 1);
    std::string path = f->checkpoint;
    if (std::filesystem::is_directory(path)) path = (std::filesystem::path(path) / "checkpoint.pt").string();
    const auto info = read_checkpoint_info(path);
    auto model = load_model(path, info);
    const c10::Device device(f->device);
    model.to(device);
    const auto tokenizer = Tokenizer::from_serialized(info.tokenizer);

    const int given = !f->corpus.empty() + !f->queries.empty() + !f->qrels.empty();
    if (given != 0 && given != 3) throw std::invalid_argument("--corpus, --queries and --qrels go together");
    EvalData data;
    if (given == 3) {
      const auto on_bad = parse_on_bad_line(f->on_bad_line);
      data.name = f->queries;
      data.corpus = read_collection(f->corpus, on_bad);
      data.queries = read_collection(f->queries, on_bad);
      data.qrels = read_qrels(f->qrels, on_bad);
    } else {
      data = load_wordnet_eval(f->wordnet_dir.empty() ? info.config.wordnet_dir : f->wordnet_dir, f->split, f->quick);
    }
    const auto set = tokenize_eval_set(data.name, data.corpus, data.queries, data.qrels, tokenizer,
                                       static_cast<size_t>(info.config.query_max_len),
                                       static_cast<size_t>(info.config.passage_max_len));
    if (set.unknown_docs > 0) {
      std::cerr << "eval: " << set.unknown_docs << " judged documents are not in the corpus (ignored)\n";
    }
    EvalOptions options;
    options.batch_size = f->batch_size;
    options.top_k = f->top_k;
    options.device = device;
    const auto metrics = evaluate(model, set, options);
    if (f->json) {
      auto j = to_json(metrics);
      j["eval"] = data.name;
      j["checkpoint"] = path;
      j["step"] = info.progress.step;
      std::cout << j.dump(2) << std::endl;
    } else {
      std::cout << data.name << " (" << metrics.queries << " queries, " << data.corpus.size() << " passages)\n"
                << format_metrics_table({{"step " + std::to_string(info.progress.step), metrics}});
    }
    return 0;
  };
}

}  // namespace cli
}  // namespace gradcache
