// The run directory's guarantees that are not about training itself: one writer at a time.
#include "retriever/run/run_directory.h"
#include "tests/retriever/train_test_util.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <string>

using namespace train_test;

// Issue 41, item 2: one writer per run directory. Two resumes of one run both ran (the second
// failed, the first ended with metrics.jsonl torn short), and two new runs on one --output shared
// their temporary files. The writer holds a lock from start() or resume() to its end; a second
// writer is refused naming the holder, and once the first is gone the directory is free again.
TEST(Trainer, OneWriterPerRunDirectory) {
  TempDir dir;
  auto config = two_step_run(dir);
  const std::string holder = "run " + config.output.dir + " is in use by process " + std::to_string(::getpid());
  {
    gr::RunDirectory first(config, /*writer=*/true);
    first.resume(config, 1);
    gr::RunDirectory second(config, /*writer=*/true);
    EXPECT_NE(error_of([&] { second.resume(config, 1); }).find(holder), std::string::npos);
    EXPECT_NE(error_of([&] { second.start(/*overwrite=*/true); }).find(holder), std::string::npos);
    auto options = quiet();
    options.resume = true;
    EXPECT_NE(error_of([&] { gr::train(config, options); }).find(holder), std::string::npos);
    gr::RunDirectory reader(config, /*writer=*/false);  // other ranks only read: no lock
    EXPECT_EQ(error_of([&] { reader.resume(config, 1); }), "");
  }
  auto fresh = config;  // a new run's directory is locked from before its first check
  fresh.output.dir = dir / "fresh";
  {
    gr::RunDirectory first(fresh, /*writer=*/true);
    first.start(false);
    gr::RunDirectory second(fresh, /*writer=*/true);
    EXPECT_NE(error_of([&] { second.start(false); }).find("is in use by process"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(fresh.output.dir));  // made, locked, left empty: removed
  gr::RunDirectory again(config, /*writer=*/true);
  EXPECT_EQ(error_of([&] { again.resume(config, 1); }), "");
}
