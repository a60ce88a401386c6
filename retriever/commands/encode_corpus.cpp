#include "retriever/commands/encode_corpus.h"

#include "files/staged_directory.h"
#include "retriever/commands/model_source_settings.h"
#include "retriever/config/device.h"
#include "retriever/config/matryoshka_settings.h"
#include "retriever/data/data_files.h"
#include "retriever/data/text_data.h"
#include "retriever/launch/threads.h"
#include "retriever/model/encode_all.h"
#include "retriever/run/embeddings.h"
#include "retriever/run/saved_encoder.h"

#include <gradcache/matryoshka_loss.h>

#include <torch/torch.h>

#include <chrono>
#include <filesystem>

namespace gradcache {
namespace retriever {
namespace {

using Clock = std::chrono::steady_clock;

SettingsTable<EncodeSettings> make_encode_settings() {
  using S = EncodeSettings;
  SettingsTable<S> t;
  t.add(field("run", &S::run, "--run", "checkpoint.pt, or the --output directory of a run"));
  t.add(field("model", &S::model, "--model", "An export directory (gradcache export) instead of --run"));
  add_pretrained_source_settings(t);
  t.add(field("corpus", &S::corpus, "--corpus", "Texts to encode: id<TAB>text[<TAB>title] or JSONL {id, text, title?}")
            .required()
            .checked(not_empty()));
  t.add(field("side", &S::side, "--side", "Encoder and max length: passage or query").checked(one_of({"passage", "query"})));
  t.add(field("output", &S::output, "--output", "Embeddings directory (manifest.json, embeddings_*.npy, ids_*.txt)")
            .required()
            .checked(not_empty()));
  t.add(field("dtype", &S::dtype, "--dtype", "Stored as fp32 or fp16 (computed in fp32)").checked(one_of({"fp32", "fp16"})));
  t.add(field("shard_size", &S::shard_size, "--shard-size", "Rows per .npy file: texts held in memory at once")
            .checked(positive()));
  t.add(field("batch_size", &S::batch_size, "--batch-size", "Encoding batch").checked(positive()));
  add_machine_settings(t);
  t.add(choice_field("on_bad_line", &S::on_bad_line, "--on-bad-line", "error or skip", on_bad_line_names()));
  t.add(field("overwrite", &S::overwrite, "--overwrite", "Replace an existing embeddings directory").as_switch());
  add_prefix_dim_setting(t, "Write");
  t.add_check([](const S& s) {
    return !s.run.empty() + !s.model.empty() + !s.pretrained.dir.empty() != 1
               ? "give one of --run (a training run), --model (an export directory) and --model-dir (a pretrained "
                 "model)"
               : "";
  });
  return t;
}

// Encodes one shard's texts in order, a few batches at a time so that progress is reported and
// a stop request is seen between batches (encode_all throws StoppedBySignal).
at::Tensor encode_shard(const gradcache::Model& model, const TextEncoder& encoder, const std::vector<std::string>& texts,
                        const EncodeSettings& s, const EncodeControl& control,
                        const std::function<void(int64_t)>& rows_done) {
  std::vector<std::vector<int64_t>> tokens;
  tokens.reserve(texts.size());
  for (const auto& text : texts) tokens.push_back(encoder.tokens(text, s.side == "query"));
  const size_t block = static_cast<size_t>(s.batch_size) * 8;
  std::vector<at::Tensor> parts;
  for (size_t start = 0; start < tokens.size(); start += block) {
    const size_t end = std::min(tokens.size(), start + block);
    const std::vector<std::vector<int64_t>> part(tokens.begin() + start, tokens.begin() + end);
    parts.push_back(encode_all(model, part, s.batch_size, c10::Device(s.device), control.stop).to(torch::kCPU));
    rows_done(static_cast<int64_t>(end));
  }
  auto embeddings = torch::cat(parts, 0);
  if (s.dim <= 0) return embeddings;
  check_prefix_dim(s.dim, embeddings.size(1), "--dim");
  return gradcache::matryoshka_prefix(embeddings, s.dim, encoder.normalize).contiguous();
}

// Refuses vectors that are not finite as written (NaN or infinity, or beyond fp16's range for
// --dtype fp16): a model with a NaN weight or a diverged run encodes to garbage that search would
// silently rank. Names the first text whose vector is bad.
void check_finite(const at::Tensor& vectors, c10::ScalarType dtype, const std::vector<std::string>& ids,
                  const std::string& corpus) {
  const auto bad_rows = vectors.to(dtype).isfinite().all(1).logical_not().nonzero();
  if (bad_rows.numel() == 0) return;
  const int64_t row = bad_rows[0][0].item<int64_t>();
  throw std::runtime_error("the model gives a vector that is not finite (NaN or infinity" +
                           std::string(dtype == torch::kFloat16 ? ", or beyond fp16's range" : "") + ") for '" +
                           ids[static_cast<size_t>(row)] + "' of " + corpus + " (and " +
                           std::to_string(bad_rows.size(0) - 1) + " more in its shard); its weights are probably "
                           "not finite (a diverged run?): nothing was written");
}

}  // namespace

const SettingsTable<EncodeSettings>& encode_settings() {
  static const SettingsTable<EncodeSettings> table = make_encode_settings();
  return table;
}

EncodeReport encode_corpus(const EncodeSettings& s, const EncodeControl& control) {
  encode_settings().validate(s);
  const auto started = Clock::now();
  set_intra_op_threads(s.threads);
  CollectionReader reader(s.corpus, s.on_bad_line);  // a missing corpus: before anything else
  files::StagedDirectory out(s.output, "manifest.json", s.overwrite);
  TextEncoder encoder = !s.run.empty()   ? load_run_encoder(s.run)
                        : !s.model.empty() ? load_exported_encoder(s.model, s.side)
                                           : load_pretrained_encoder(s.pretrained);
  encoder.model.to(c10::Device(s.device));
  encoder.model.train(false);
  const bool query = s.side == "query";
  const auto model = query ? encoder.model.query_model() : encoder.model.passage_model();
  const int64_t max_len = query ? encoder.query_max_len : encoder.passage_max_len;
  const auto dtype = s.dtype == "fp16" ? torch::kFloat16 : torch::kFloat32;
  EmbeddingsWriter writer(out.partial(), dtype);
  EncodeProgress progress;
  progress.file_size = reader.file_size();
  uint64_t bytes_before = 0;
  for (auto shard = reader.next(s.shard_size); shard.size() > 0; shard = reader.next(s.shard_size)) {
    const int64_t rows_before = writer.rows(), shard_rows = static_cast<int64_t>(shard.size());
    const uint64_t shard_bytes = reader.bytes_read() - bytes_before;
    auto rows_done = [&](int64_t done) {
      progress.rows = rows_before + done;
      progress.bytes_read = bytes_before + shard_bytes * static_cast<uint64_t>(done) / static_cast<uint64_t>(shard_rows);
      progress.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
      if (control.progress) control.progress(progress);
    };
    const auto vectors = encode_shard(model, encoder, shard.texts, s, control, rows_done);
    check_finite(vectors, dtype, shard.ids, s.corpus);
    writer.add_shard(shard.ids, vectors);
    bytes_before = reader.bytes_read();
  }
  const ReadStats& stats = reader.stats();
  if (auto notice = skipped_lines_notice(s.corpus, stats); notice && control.log) control.log(*notice);
  const auto manifest = writer.finish({{"side", s.side},
                                       {"prefix_dim", s.dim > 0 ? nlohmann::json(s.dim) : nlohmann::json(nullptr)},
                                       {"normalize", encoder.normalize},
                                       {"max_len", max_len},
                                       {"model", model_identity(encoder)},
                                       {"corpus", std::filesystem::absolute(s.corpus).lexically_normal().string()},
                                       {"skipped_lines", stats.skipped}});
  out.commit();
  EncodeReport report;
  report.output = out.target();
  report.rows = writer.rows();
  report.dim = manifest["dim"];
  report.shards = static_cast<int64_t>(manifest["shards"].size());
  report.skipped = stats.skipped;
  report.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return report;
}

}  // namespace retriever
}  // namespace gradcache
