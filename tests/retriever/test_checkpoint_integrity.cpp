// Damaged checkpoints are refused with a message naming the file and the entry, wherever they
// are loaded (read_checkpoint_info, --resume, eval, load_checkpoint_bytes); sound ones load.
#include "retriever/commands/evaluate_run.h"
#include "files/atomic_file.h"
#include "tests/retriever/train_test_util.h"

#include <gtest/gtest.h>

using namespace train_test;

namespace {

// Where the model's largest weight lies in the checkpoint file: found by its bytes, and the
// name of the zip entry that holds them (the local header before them).
struct WeightBytes {
  size_t begin = 0, end = 0;
  std::string entry;
};
WeightBytes largest_weight(const std::string& path) {
  const auto zip = gradcache::files::read_file(path);
  torch::Tensor largest;
  for (const auto& w : weights(path)) largest = !largest.defined() || w.numel() > largest.numel() ? w : largest;
  const std::string bytes(static_cast<const char*>(largest.data_ptr()), largest.nbytes());
  WeightBytes found;
  found.begin = zip.find(bytes);
  if (found.begin == std::string::npos) ADD_FAILURE() << "the weight's bytes are not in " << path;
  found.end = found.begin + bytes.size();
  const size_t header = zip.rfind("PK\x03\x04", found.begin);
  const size_t name_size = static_cast<unsigned char>(zip[header + 26]) | static_cast<unsigned char>(zip[header + 27]) << 8;
  found.entry = zip.substr(header + 30, name_size);
  return found;
}

// A run of 2 of its 4 steps: a checkpoint to damage, and a run to resume.
std::string interrupted_run(const TempDir& dir) {
  write_task(dir);
  auto config = tiny_config(dir);
  config.training.steps = 4;
  config.eval.enabled = false;
  auto options = quiet();
  options.stop_after_steps = 2;
  gr::train(config, options);
  return dir / "run/checkpoint.pt";
}

gr::EvalSettings eval_settings(const TempDir& dir) {
  gr::EvalSettings s;
  s.checkpoint = dir / "run";
  s.corpus = dir / "corpus.tsv";
  s.queries = dir / "queries.tsv";
  s.qrels = dir / "qrels.txt";
  return s;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(CheckpointIntegrity, AFlippedTensorByteIsRefusedByEveryLoader) {
  TempDir dir;
  const auto path = interrupted_run(dir);
  const auto original = gradcache::files::read_file(path);
  auto damaged = original;
  const auto weight = largest_weight(path);
  const size_t at = (weight.begin + weight.end) / 2;
  damaged[at] = static_cast<char>(damaged[at] ^ 0x01);
  write(path, damaged);
  const std::string expected =
      "checkpoint " + path + " is damaged: entry '" + weight.entry + "' fails its CRC check (stored 0x";
  const std::string advice = "; restore it from a backup or retrain";

  const auto info_error = error_of([&] { gr::read_checkpoint_info(path); });
  EXPECT_TRUE(contains(info_error, expected) && contains(info_error, advice)) << info_error;
  const auto eval_error = error_of([&] { gr::evaluate_checkpoint(eval_settings(dir)); });
  EXPECT_TRUE(contains(eval_error, expected)) << eval_error;
  auto config = tiny_config(dir);
  config.training.steps = 4;
  config.eval.enabled = false;
  auto options = quiet();
  options.resume = true;
  const auto resume_error = error_of([&] { gr::train(config, options); });
  EXPECT_TRUE(contains(resume_error, expected)) << resume_error;
  EXPECT_TRUE(gradcache::files::read_file(path) == damaged) << "--resume must not re-save a damaged checkpoint";
  const auto bytes_error = error_of([&] { gr::load_checkpoint_bytes(damaged, "copy.pt"); });
  EXPECT_TRUE(contains(bytes_error, "checkpoint copy.pt is damaged: entry '" + weight.entry + "' fails its CRC check"))
      << bytes_error;

  write(path, original);  // the untouched file loads, from disk and from memory, and resumes
  const auto from_file = weights(path);
  const auto from_bytes = gr::load_checkpoint_bytes(original).model.named_state();
  ASSERT_EQ(from_file.size(), from_bytes.size());
  for (size_t i = 0; i < from_file.size(); ++i) EXPECT_TRUE(torch::equal(from_file[i], from_bytes[i].second));
  EXPECT_EQ(gr::train(config, options).progress.step, 4);
}

TEST(CheckpointIntegrity, TruncatedAndGarbageFilesAreRefusedWithAMessage) {
  TempDir dir;
  const auto path = interrupted_run(dir);
  const auto original = gradcache::files::read_file(path);
  for (size_t size : {original.size() - 1, original.size() / 2, size_t{100}}) {
    write(path, original.substr(0, size));
    const auto message = error_of([&] { gr::evaluate_checkpoint(eval_settings(dir)); });
    EXPECT_TRUE(contains(message, "checkpoint " + path + " is damaged: the end-of-central-directory record is missing"))
        << size << ": " << message;
  }
  for (const std::string& garbage : {std::string(), std::string("not a checkpoint"), std::string(5000, '\x07')}) {
    EXPECT_THROW(
        {
          try {
            gr::load_checkpoint_bytes(garbage, "garbage.pt");
          } catch (const gr::CheckpointError& e) {
            EXPECT_TRUE(contains(e.what(), "checkpoint garbage.pt is corrupt or not a gradcache checkpoint")) << e.what();
            throw;
          }
        },
        gr::CheckpointError);
  }
}

// LibTorch's own errors reach the user without their 20-line C++ backtrace.
TEST(CheckpointIntegrity, LibTorchErrorsComeWithoutTheirBacktrace) {
  TempDir dir;
  const auto path = interrupted_run(dir);
  auto renamed = gradcache::files::read_file(path);
  // Renaming an entry keeps every CRC valid (they cover the data only), but LibTorch then
  // misses its data.pkl and throws a c10::Error.
  for (size_t at = renamed.find("archive/data.pkl"); at != std::string::npos; at = renamed.find("archive/data.pkl", at)) {
    renamed[at + 15] = 'X';
  }
  write(path, renamed);
  std::string message;
  try {
    gr::read_checkpoint_info(path);
  } catch (const std::exception& e) {  // what() itself: a c10::Error's carries the backtrace
    message = e.what();
  }
  EXPECT_TRUE(contains(message, "checkpoint " + path + " is corrupt or not a gradcache checkpoint (")) << message;
  EXPECT_TRUE(contains(message, "data.pkl")) << message;
  EXPECT_FALSE(contains(message, "Exception raised from")) << message;
  EXPECT_FALSE(contains(message, "frame #")) << message;
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 0) << message;
}

// Single-byte changes all over a real checkpoint: each load either succeeds (the byte was in a
// header field nothing reads, or padding) or throws CheckpointError; none crashes or throws
// anything else. Changes inside an entry's data are all caught.
TEST(CheckpointIntegrity, EveryFlippedByteIsAnsweredWithACheckpointError) {
  TempDir dir;
  const auto path = interrupted_run(dir);
  const auto original = gradcache::files::read_file(path);
  const auto weight = largest_weight(path);
  for (size_t at = 0; at < original.size(); at += original.size() / 300 + 1) {
    auto flipped = original;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x20);
    try {
      gr::load_checkpoint_bytes(flipped, "flipped.pt");
      EXPECT_FALSE(at >= weight.begin && at < weight.end) << "a change at byte " << at << " went unnoticed";
    } catch (const gr::CheckpointError& e) {
      EXPECT_TRUE(contains(e.what(), "checkpoint flipped.pt ")) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "byte " << at << ": not a CheckpointError: " << e.what();
    }
  }
}
