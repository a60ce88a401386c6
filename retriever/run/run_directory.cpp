#include "retriever/run/run_directory.h"

#include "files/atomic_file.h"
#include "files/directory_lock.h"
#include "files/leftovers.h"
#include "retriever/files/output_not_input.h"
#include "retriever/files/scratch.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace gradcache {
namespace retriever {
namespace fs = std::filesystem;
namespace {

constexpr const char* kReplacedPrefix = ".replaced-";

// The settings in which two configs differ in what a run computes, a line each ("" if none).
std::string differing_settings(const TrainConfig& saved, const TrainConfig& other, const std::string& now) {
  const auto a = resume_invariant(saved), b = resume_invariant(other);
  std::string differences;
  for (const auto& item : a.items()) {
    if (b.at(item.key()) != item.value()) {
      differences += "\n  " + item.key() + ": checkpoint has " + item.value().dump() + ", " + now + " " +
                     b.at(item.key()).dump();
    }
  }
  return differences;
}

// Refuses a resume whose settings would compute something else than the original run.
void check_resume_compatible(const TrainConfig& saved, TrainConfig requested, const std::string& path) {
  if (requested.encoder.torchscript.empty())
    requested.tokenizer.vocab_size = saved.tokenizer.vocab_size;               // set by the tokenizer, not by the user
  if (requested.batching.chunk_size_auto && saved.batching.chunk_size_auto) {  // chosen by measurement in the first run
    requested.batching.chunk_size = saved.batching.chunk_size;
    requested.batching.passage_chunk_size = saved.batching.passage_chunk_size;
  }
  const std::string differences = differing_settings(saved, requested, "now");
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
  if (dropped || kept.size() != fs::file_size(path)) files::write_file_atomic(path, kept);
}

// --metrics-out must name a file in an existing directory: found before training, not after.
// Nor may it be one of the run's inputs (by inode: through ./, .. or a symbolic link too),
// which its first line would replace, --overwrite or not.
void check_metrics_path(const std::string& path, const std::vector<std::pair<std::string, std::string>>& inputs) {
  const fs::path file(path);
  refuse_output_that_is_an_input("--metrics-out", path, inputs);
  if (fs::is_directory(file)) {
    throw std::invalid_argument("--metrics-out " + path + " is a directory; name a file in it, e.g. " +
                                (file / "metrics.jsonl").string());
  }
  if (const auto problem = files::regular_file_problem(path); !problem.empty())  // a FIFO's open waits forever
    throw std::invalid_argument("--metrics-out " + path + ": " + problem);
  const fs::path parent = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(parent)) {
    throw std::invalid_argument("--metrics-out " + path + ": the directory " + parent.string() +
                                " does not exist; create it first or choose another path");
  }
}

// `text` as one shell word: in single quotes, each ' written as '\''.
std::string shell_word(const std::string& text) {
  std::string word = "'";
  for (const char c : text) word += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return word + "'";
}

}  // namespace

RunDirectory::RunDirectory(const TrainConfig& config, bool writer)
    : output_(config.output.dir),
      checkpoint_path_((fs::path(config.output.dir) / "checkpoint.pt").string()),
      metrics_path_(config.output.metrics_out.empty() ? (fs::path(config.output.dir) / "metrics.jsonl").string()
                                                      : config.output.metrics_out),
      metrics_elsewhere_(!config.output.metrics_out.empty()),
      writer_(writer) {
  for (const auto& [flag, path] : std::vector<std::pair<std::string, std::string>>{
           {"--train-file", config.data.train_file},
           {"--eval-corpus", config.data.eval_corpus},
           {"--eval-queries", config.data.eval_queries},
           {"--eval-qrels", config.data.eval_qrels},
           {"--tokenizer", config.tokenizer.file},
           {"--model", config.encoder.torchscript}}) {
    if (!path.empty()) inputs_.emplace_back(flag, path);
  }
}

RunDirectory::~RunDirectory() {
  std::error_code ignored;
  if (!replaced_.empty()) {
    restore_replaced();
  } else if (claimed_) {  // a new run that failed before its first checkpoint: its files go too
    for (const auto& name : run_files()) fs::remove(path(name), ignored);
  }
  for (const auto& file : scratch_) fs::remove(file, ignored);
  if (created_) fs::remove(output_, ignored);  // only if empty: a run stopped or failed before its first file
}

std::string RunDirectory::scratch_path(const std::string& name) {
  scratch_.push_back(scratch_file_path(name));
  return scratch_.back();
}

std::vector<std::string> RunDirectory::run_files() const {
  std::vector<std::string> names{"checkpoint.pt", "best.pt",      "config.json", "tokenizer.model",
                                 "tokenizer.json", "summary.json", "curves.png"};
  if (!metrics_elsewhere_) names.push_back("metrics.jsonl");  // --metrics-out is the user's file
  return names;
}

// The killed run's own files go first: the old run's, moved back over them, would otherwise sit
// beside a file the old run never had (a --model-dir run's tokenizer.json beside a built-in
// run's tokenizer.model), and --resume would refuse the mix.
std::string RunDirectory::move_back(const std::string& replaced) const {
  std::string remove;
  for (const auto& name : run_files()) {
    std::error_code ignored;
    if (fs::exists(fs::symlink_status(path(name), ignored))) remove += " " + shell_word(path(name));
  }
  return (remove.empty() ? "" : "rm -f" + remove + " && ") + "mv -f " + shell_word(replaced) + "/* " +
         shell_word(output_) + "/ && rmdir " + shell_word(replaced);
}

std::vector<std::string> RunDirectory::stale_replaced() const {
  std::vector<fs::path> dead;
  std::error_code error;
  for (fs::directory_iterator it(output_, error), end; !error && it != end; it.increment(error)) {
    if (files::names_dead_process(it->path().filename().string(), kReplacedPrefix)) dead.push_back(it->path());
  }
  std::vector<std::string> stale;
  for (const auto& dir : dead) {
    std::error_code ignored;  // a run without a checkpoint (killed before its first) is nothing to keep
    if (fs::exists(dir / "checkpoint.pt", ignored)) {
      stale.push_back(dir.string());
    } else if (writer_) {
      fs::remove_all(dir, ignored);
    }
  }
  return stale;
}

void RunDirectory::start(bool overwrite) {
  if (writer_) {  // one writer per run directory, from before its first check to the run's end
    const bool made = fs::create_directories(output_);
    lock_ = files::DirectoryLock(output_, "run");
    created_ = made;  // not removed on failure unless this process made it and held it
  }
  if (fs::exists(checkpoint_path_) && !overwrite) {
    throw std::invalid_argument(output_ + " already holds a training run (checkpoint.pt). Pass --resume to "
                                "continue it, --overwrite to start again, or choose another --output.");
  }
  if (!writer_) return;
  const auto stale = stale_replaced();
  if (!stale.empty() && !overwrite) {
    throw std::invalid_argument(stale.front() + " holds the files of a run that a killed `train --overwrite` was "
                                "replacing (it was stopped before its first checkpoint). To get that run back: " +
                                move_back(stale.front()) + "; to discard it, pass --overwrite (or choose another --output).");
  }
  if (metrics_elsewhere_) {
    check_metrics_path(metrics_path_, inputs_);
    std::error_code no_size;  // an empty file (made for the run, say) holds nothing to lose
    if (!overwrite && fs::exists(metrics_path_) && fs::file_size(metrics_path_, no_size) > 0) {
      throw std::invalid_argument("--metrics-out " + metrics_path_ + " exists; pass --overwrite to replace it, or "
                                  "choose another file");
    }
  }
  fresh_metrics_ = true;
}

CheckpointInfo RunDirectory::resume(const TrainConfig& requested, int world_size) {
  std::error_code no_directory;  // a missing one is refused below: it holds no checkpoint
  if (writer_ && fs::is_directory(output_, no_directory)) lock_ = files::DirectoryLock(output_, "run");
  const auto stale = stale_replaced();
  if (!fs::exists(checkpoint_path_)) {
    if (!stale.empty()) {
      throw std::invalid_argument("--resume: " + output_ + " holds no checkpoint.pt: a `train --overwrite` there was "
                                  "killed before its first checkpoint, and the run it was replacing is in " +
                                  stale.front() + ". To resume that run, move its files back first: " +
                                  move_back(stale.front()) + "; or start anew with --overwrite.");
    }
    throw std::invalid_argument("--resume: " + output_ + " holds no checkpoint.pt to resume from");
  }
  auto info = read_checkpoint_info(checkpoint_path_);
  if (info.world_size != world_size) {
    throw std::invalid_argument(checkpoint_path_ + " was saved by " + std::to_string(info.world_size) +
                                " process(es); resume it with as many (now " + std::to_string(world_size) + ")");
  }
  check_resume_compatible(info.config, requested, checkpoint_path_);
  check_files_of(info);
  if (writer_ && metrics_elsewhere_) check_metrics_path(metrics_path_, inputs_);
  if (writer_) truncate_metrics(metrics_path_, info.progress.step);
  if (writer_) {  // a replacement killed after its first checkpoint: that is this one
    std::error_code ignored;
    for (const auto& dir : stale) fs::remove_all(dir, ignored);
  }
  return info;
}

// Files of another run beside the checkpoint (left by versions before the claim, or put there
// by hand) would make the resumed run's config.json or tokenizer lie about its model.
void RunDirectory::check_files_of(const CheckpointInfo& info) const {
  const auto refuse = [&](const std::string& name, const std::string& why) {
    throw std::invalid_argument("cannot resume " + output_ + ": its " + name + " is not from the run that saved " +
                                "checkpoint.pt (" + why + "): the directory mixes two runs' files. Start a new run " +
                                "there with --overwrite, or choose another --output.");
  };
  const std::string config = path("config.json");
  if (fs::exists(config)) {
    TrainConfig saved;
    try {
      saved = read_saved_config(nlohmann::json::parse(files::read_file(config)));
    } catch (const std::exception& e) {
      refuse("config.json", std::string("it cannot be read: ") + e.what());
    }
    const std::string differences = differing_settings(info.config, saved, "config.json has");
    if (!differences.empty()) refuse("config.json", "they differ in" + differences + "\n");
  }
  for (const char* name : {"tokenizer.model", "tokenizer.json"}) {
    if (fs::exists(path(name)) && files::read_file(path(name)) != info.tokenizer)
      refuse(name, "the checkpoint holds another tokenizer");
  }
}

void RunDirectory::claim(const std::vector<std::pair<std::string, std::string>>& named_files) {
  if (!writer_) return;
  std::vector<std::pair<std::string, std::string>> staged;  // (temporary, final)
  std::error_code ignored;
  auto remove_staged = [&] {
    for (const auto& file : staged) fs::remove(file.first, ignored);
  };
  try {  // a full disk fails here, before anything of the old run is touched
    for (const auto& [name, content] : named_files) staged.emplace_back(files::write_temporary_file(path(name), content), path(name));
  } catch (...) {
    remove_staged();
    throw;
  }
  for (const auto& dir : stale_replaced()) fs::remove_all(dir, ignored);  // start() allowed it: --overwrite
  const std::string aside = path(kReplacedPrefix + std::to_string(::getpid()));
  fs::remove_all(aside, ignored);  // a killed process's that had this pid
  for (const auto& name : run_files()) {
    if (!fs::exists(fs::symlink_status(path(name), ignored))) continue;
    std::error_code error;
    if (replaced_.empty() && (fs::create_directory(aside, error), !error)) replaced_ = aside;
    if (!error) fs::rename(path(name), fs::path(aside) / name, error);
    if (error) {
      restore_replaced();
      remove_staged();
      throw std::runtime_error("cannot move the earlier run's " + path(name) + " aside to " + aside + ": " +
                               error.message() + "; its files are as they were. Remove them yourself, or choose "
                               "another --output.");
    }
  }
  for (size_t i = 0; i < staged.size(); ++i) {
    try {
      files::commit_file(staged[i].first, staged[i].second);
    } catch (...) {
      staged.erase(staged.begin(), staged.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      remove_staged();
      throw;  // the destructor puts the earlier run back
    }
  }
  claimed_ = true;
}

std::string RunDirectory::settle() {
  claimed_ = false;  // the run has a checkpoint: its files stay, whatever happens next
  if (replaced_.empty()) return "";
  const std::string dir = replaced_;
  replaced_.clear();
  std::error_code error;
  fs::remove_all(dir, error);
  if (!error) return "";
  return "cannot remove " + dir + ", which holds the files of the run this one replaced: " + error.message() +
         "; remove it yourself";
}

// The new run failed before its first checkpoint: its files go, the replaced run's come back.
void RunDirectory::restore_replaced() noexcept {
  if (replaced_.empty()) return;
  std::error_code ignored;
  for (const auto& name : run_files()) fs::remove(path(name), ignored);
  std::vector<fs::path> kept;  // listed first: entries renamed while a directory is read may be skipped
  std::error_code error;
  for (fs::directory_iterator it(replaced_, error), end; !error && it != end; it.increment(error)) {
    kept.push_back(it->path());
  }
  for (const auto& file : kept) fs::rename(file, path(file.filename().string()), ignored);
  fs::remove(replaced_, ignored);
  replaced_.clear();
}

std::string RunDirectory::path(const std::string& name) const { return (fs::path(output_) / name).string(); }

void RunDirectory::write(const std::string& name, const std::string& content) const {
  if (writer_) files::write_file_atomic(path(name), content);
}

void RunDirectory::append_metrics(const StepRecord& r) {
  nlohmann::json line{{"step", r.step},
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
                               {"update", r.update_s}}}};
  if (!r.dataset.empty()) line["dataset"] = r.dataset;
  append_line(line.dump());
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
