// gradcache-bench's flag table (bench/options.h): a flag shared by several rows sets all of
// them, settings survive the trip to a child process's command line, lists and bad values.
#include "options.h"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

struct Settings {
  int64_t batch = 64;
  double limit = 0.1;
  std::string mode = "cache";
  std::vector<int64_t> batches{64, 256};
  std::vector<std::string> modes{"full", "cache"};
  bool no_spawn = false;

  void add_options(gcbench::OptionTable& t) {
    t.add("--batch", &batch, "pairs")
        .add("--limit", &limit, "target")
        .add("--mode", &mode, "mode")
        .add("--batches", &batches, "sizes")
        .add("--modes", &modes, "modes")
        .add_switch("--no-spawn", &no_spawn, "here");
  }
};

// Parses `args` (without the program name) into the table's fields.
void parse(const gcbench::OptionTable& table, std::vector<std::string> args) {
  CLI::App app("test");
  table.declare(app);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  app.parse(reversed);
}

TEST(BenchOptions, OneFlagSetsEveryFieldBoundToIt) {
  Settings a, b;
  gcbench::OptionTable table;
  a.add_options(table);
  b.add_options(table);
  parse(table, {"--batch", "32", "--batches", "16,32", "--no-spawn"});
  EXPECT_EQ(a.batch, 32);
  EXPECT_EQ(b.batch, 32);
  EXPECT_EQ(b.batches, (std::vector<int64_t>{16, 32}));
  EXPECT_TRUE(a.no_spawn && b.no_spawn);
  EXPECT_EQ(a.mode, "cache");  // not given: the default stays
}

TEST(BenchOptions, SettingsRoundTripThroughChildFlags) {
  Settings parent;
  parent.batch = 7;
  parent.limit = 0.1 + 0.2;  // not the shortest decimal: the child must get this very double
  parent.mode = "accumulate";
  parent.batches = {1, 2, 3};
  parent.modes = {"cache-r1"};
  gcbench::OptionTable parent_table;
  parent.add_options(parent_table);

  Settings child;
  gcbench::OptionTable child_table;
  child.add_options(child_table);
  parse(child_table, parent_table.to_args());
  EXPECT_EQ(child.batch, parent.batch);
  EXPECT_EQ(child.limit, parent.limit);
  EXPECT_EQ(child.mode, parent.mode);
  EXPECT_EQ(child.batches, parent.batches);
  EXPECT_EQ(child.modes, parent.modes);
}

TEST(BenchOptions, ChildCommandLineIsTheCommandThenTheSettingsFlags) {
  Settings parent;
  parent.batch = 9;
  parent.modes = {"full"};
  parent.no_spawn = true;  // a switch: not handed over (the children have none)
  const auto args = gcbench::child_command_line("child-demo", parent);
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args.front(), "child-demo");
  EXPECT_EQ(args.size(), 1u + 2 * 5);  // five flags with values
  EXPECT_EQ(parent.batch, 9);          // the settings themselves are untouched

  Settings child;
  gcbench::OptionTable child_table;
  child.add_options(child_table);
  parse(child_table, std::vector<std::string>(args.begin() + 1, args.end()));
  EXPECT_EQ(child.batch, 9);
  EXPECT_EQ(child.modes, (std::vector<std::string>{"full"}));
  EXPECT_FALSE(child.no_spawn);
}

TEST(BenchOptions, LastValueWinsAndBadValuesAreErrors) {
  Settings s;
  gcbench::OptionTable table;
  s.add_options(table);
  parse(table, {"--batch", "1", "--batch=2"});
  EXPECT_EQ(s.batch, 2);
  EXPECT_THROW(parse(table, {"--batch", "two"}), CLI::ParseError);
  EXPECT_THROW(parse(table, {"--unknown", "1"}), CLI::ParseError);
}

TEST(BenchOptions, OneFlagCannotBindFieldsOfDifferentTypes) {
  int64_t n = 0;
  double x = 0;
  gcbench::OptionTable table;
  table.add("--value", &n, "an integer");
  EXPECT_THROW(table.add("--value", &x, "a number"), std::logic_error);
}

}  // namespace
