#include "retriever/run/run_directory.h"

#include "retriever/run/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace gradcache {
namespace retriever {
namespace fs = std::filesystem;
namespace {

// Refuses a resume whose settings would compute something else than the original run.
void check_resume_compatible(const TrainConfig& saved, TrainConfig requested, const std::string& path) {
  if (requested.encoder.torchscript.empty())
    requested.tokenizer.vocab_size = saved.tokenizer.vocab_size;               // set by the tokenizer, not by the user
  if (requested.batching.chunk_size_auto && saved.batching.chunk_size_auto) {  // chosen by measurement in the first run
    requested.batching.chunk_size = saved.batching.chunk_size;
    requested.batching.passage_chunk_size = saved.batching.passage_chunk_size;
  }
  const auto a = resume_invariant(saved), b = resume_invariant(requested);
  std::string differences;
  for (const auto& item : a.items()) {
    if (b.at(item.key()) != item.value()) {
      differences += "\n  " + item.key() + ": checkpoint has " + item.value().dump() + ", now " + b.at(item.key()).dump();
    }
  }
  if (!differences.empty()) {
    throw std::invalid_argument("cannot resume " + path + " with different settings (a resumed run must compute "
                                "what the original would have):" + differences +
                                "\nDrop these flags, or start a new run with another --output.");
  }
}

// Keeps the metrics lines of steps up to `step` (a resumed run logs the later ones again).
// A file with nothing to drop is left as it is: resuming then needs no room for a copy.
void truncate_metrics(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    try {
      if (nlohmann::json::parse(line).value("step", int64_t{0}) <= step) {
        kept += line + "\n";
        continue;
      }
    } catch (const std::exception&) {  // a torn last line from a crash: drop it
    }
    dropped = true;
  }
  if (dropped || kept.size() != fs::file_size(path)) write_file_atomic(path, kept);
}

// --metrics-out must name a file in an existing directory: found before training, not after.
void check_metrics_path(const std::string& path) {
  const fs::path file(path);
  if (fs::is_directory(file)) {
    throw std::invalid_argument("--metrics-out " + path + " is a directory; name a file in it, e.g. " +
                                (file / "metrics.jsonl").string());
  }
  const fs::path parent = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(parent)) {
    throw std::invalid_argument("--metrics-out " + path + ": the directory " + parent.string() +
                                " does not exist; create it first or choose another path");
  }
}

}  // namespace

RunDirectory::RunDirectory(const TrainConfig& config, bool writer)
    : output_(config.output.dir),
      checkpoint_path_((fs::path(config.output.dir) / "checkpoint.pt").string()),
      metrics_path_(config.output.metrics_out.empty() ? (fs::path(config.output.dir) / "metrics.jsonl").string()
                                                      : config.output.metrics_out),
      metrics_elsewhere_(!config.output.metrics_out.empty()),
      writer_(writer) {}

void RunDirectory::start(bool overwrite) {
  if (fs::exists(checkpoint_path_) && !overwrite) {
    throw std::invalid_argument(output_ + " already holds a training run (checkpoint.pt). Pass --resume to "
                                "continue it, --overwrite to start again, or choose another --output.");
  }
  if (!writer_) return;
  if (metrics_elsewhere_) check_metrics_path(metrics_path_);
  fs::create_directories(output_);
  fresh_metrics_ = true;
}

CheckpointInfo RunDirectory::resume(const TrainConfig& requested, int world_size) {
  if (!fs::exists(checkpoint_path_)) {
    throw std::invalid_argument("--resume: " + output_ + " holds no checkpoint.pt to resume from");
  }
  auto info = read_checkpoint_info(checkpoint_path_);
  if (info.world_size != world_size) {
    throw std::invalid_argument(checkpoint_path_ + " was saved by " + std::to_string(info.world_size) +
                                " process(es); resume it with as many (now " + std::to_string(world_size) + ")");
  }
  check_resume_compatible(info.config, requested, checkpoint_path_);
  if (writer_ && metrics_elsewhere_) check_metrics_path(metrics_path_);
  if (writer_) truncate_metrics(metrics_path_, info.progress.step);
  return info;
}

std::string RunDirectory::path(const std::string& name) const { return (fs::path(output_) / name).string(); }

void RunDirectory::remove(const std::string& name) const {
  if (writer_) fs::remove(path(name));
}

void RunDirectory::write(const std::string& name, const std::string& content) const {
  if (writer_) write_file_atomic(path(name), content);
}

void RunDirectory::append_metrics(const StepRecord& r) {
  append_line(nlohmann::json{{"step", r.step},
                             {"epoch", r.epoch},
                             {"loss", r.loss},
                             {"lr", r.lr},
                             {"pairs_per_s", r.pairs_per_s},
                             {"peak_rss_mb", r.peak_rss_mb},
                             {"elapsed_s", r.elapsed_s},
                             {"seconds",
                              {{"collate", r.collate_s},
                               {"forward", r.forward_s},
                               {"loss_step", r.loss_s},  // not "loss": one key of that name per line
                               {"backward", r.backward_s},
                               {"update", r.update_s}}}}
                  .dump());
}

void RunDirectory::append_dev_metrics(int64_t step, const nlohmann::json& metrics) {
  append_line(nlohmann::json{{"step", step}, {"dev", metrics}}.dump());
}

void RunDirectory::append_line(const std::string& line) {
  if (!writer_) return;
  if (!metrics_.is_open()) {
    metrics_.open(metrics_path_, fresh_metrics_ ? std::ios::trunc : std::ios::app);
    fresh_metrics_ = false;
  }
  std::error_code no_size;
  const auto size_before = fs::file_size(metrics_path_, no_size);
  metrics_ << line << '\n' << std::flush;
  if (metrics_) return;
  const std::string reason = std::strerror(errno);
  // A full disk may have taken part of the line: cut it off, so that the file ends with the
  // last whole line (closed first: closing flushes what is left in the stream's buffer).
  metrics_.close();
  if (!no_size) fs::resize_file(metrics_path_, size_before, no_size);
  throw std::runtime_error("cannot write the metrics to " + metrics_path_ + ": " + reason +
                           "; the lines of earlier steps are kept");
}

}  // namespace retriever
}  // namespace gradcache
