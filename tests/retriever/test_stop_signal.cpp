// Stopping on a signal (retriever/launch/stop_signal.h): run_stoppable's child process, and the
// tokenizer's training in one (sentencepiece cannot look at a flag itself). The commands' phases
// are stopped end to end by tests/cli/signals_test.sh.
#include "files/atomic_file.h"
#include "retriever/launch/stop_signal.h"
#include "retriever/model/tokenizer.h"
#include "tests/retriever/text_test_util.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using gradcache::retriever::run_stoppable;
using gradcache::retriever::StoppedBySignal;
using gradcache::retriever::Tokenizer;
using gradcache::retriever::TokenizerTrainOptions;

// The child's result (larger than a pipe holds at once), its exception as a message, its death,
// a flag set before the start, and no flag (the work runs in this process).
TEST(RunStoppable, ReportsTheChildsResultItsErrorAndItsDeath) {
  std::atomic<int> stop{0};
  const std::string big(3 << 20, 'x');
  EXPECT_EQ(run_stoppable([&] { return big; }, &stop, "copying"), big);
  EXPECT_EQ(run_stoppable([] { return std::string(); }, &stop, "nothing"), "");
  try {
    run_stoppable([]() -> std::string { throw std::invalid_argument("bad vocabulary"); }, &stop, "training");
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "bad vocabulary");
  }
  try {
    run_stoppable([]() -> std::string { ::raise(SIGKILL); return ""; }, &stop, "tokenizer training");
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer training: the process doing it was killed by signal 9"),
              std::string::npos) << e.what();
  }
  stop = SIGINT;
  EXPECT_THROW(run_stoppable([] { return std::string("x"); }, &stop, "x"), StoppedBySignal);
  EXPECT_EQ(run_stoppable([] { return std::string("here"); }, nullptr, "x"), "here");
}

// The names in the commands' "stopped by ..." messages; write_all's failure (the child's answer
// and the tokenizer's memory file are written with it; their successes are tested above and by
// every tokenizer test).
TEST(RunStoppable, SignalNamesAndAFailedWrite) {
  EXPECT_EQ(gradcache::retriever::signal_name(SIGINT), "SIGINT");
  EXPECT_EQ(gradcache::retriever::signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(gradcache::retriever::signal_name(SIGHUP), "signal " + std::to_string(SIGHUP));
  const int fd = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 0);
  errno = 0;
  EXPECT_FALSE(gradcache::files::write_all(fd, "abc", 3));
  EXPECT_EQ(errno, EBADF);
  ::close(fd);
}

// With a stop flag the training runs in a child process: the same model bytes as in this
// process; a flag set during training ends it at once, with no model file written.
TEST(StoppableTokenizerTraining, GivesTheSameModelAndStopsAtOnce) {
  text_test::TempDir dir;
  TokenizerTrainOptions options;
  options.vocab_size = 200;
  const auto texts = text_test::sentences(3000);
  std::atomic<int> stop{0};
  TokenizerTrainOptions stoppable = options;
  stoppable.stop = &stop;
  EXPECT_EQ(Tokenizer::train(texts, stoppable, dir.path("child.model")).serialized(),
            Tokenizer::train(texts, options, dir.path("here.model")).serialized());

  // 8000 pieces over 100,000 sentences: seconds of training (two runs: the texts support fewer
  // pieces, and fit_vocab_size trains again with those), which the flag cuts short.
  const auto large = text_test::sentences(100000);
  stoppable.vocab_size = 8000;
  stoppable.fit_vocab_size = true;
  const auto start = std::chrono::steady_clock::now();
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = SIGTERM;
  });
  try {
    Tokenizer::train(large, stoppable, dir.path("stopped.model"));
    ADD_FAILURE() << "the training was not stopped";
  } catch (const StoppedBySignal& stopped) {
    EXPECT_EQ(stopped.signal(), SIGTERM);
  }
  signaller.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 2.0) << "the stop took effect " << took - 0.2 << " s after the flag was set";
  EXPECT_FALSE(text_test::fs::exists(dir.path("stopped.model")));
  EXPECT_FALSE(text_test::fs::exists(dir.path("stopped.model.tmp-" + std::to_string(::getpid()))));
}

}  // namespace
