// gradcache-bench's Report (bench/report.h), which every scenario fills: rows go into the JSON
// and the table together, keys stand where they are first written, and the text is laid out
// as title, table, notes, targets.
#include "report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

std::vector<std::string> keys(const gcbench::Json& j) {
  std::vector<std::string> out;
  for (const auto& item : j.items()) out.push_back(item.key());
  return out;
}

TEST(BenchReport, RowsGoIntoTheJsonAndTheTableTogether) {
  gcbench::Report report("demo", {"name", "value"}, "cases");
  report.json["batch"] = 8;  // a setting, written first
  report.add_row({{"name", "a"}, {"value", 1}}, {"a", "1"});
  report.add_row({{"name", "b"}, {"value", 22}});  // JSON only: no table line
  report.table.add({"extra", "333"});              // a table line of the scenario's own
  report.json["worst"] = 22;                       // a conclusion, after the rows
  const auto result = report.finish("demo: a title", "a note\n");

  EXPECT_EQ(keys(result.json), (std::vector<std::string>{"batch", "cases", "worst"}));
  ASSERT_EQ(result.json["cases"].size(), 2u);
  EXPECT_EQ(result.json["cases"][1]["value"], 22);
  EXPECT_EQ(report.rows().size(), 2u);
  EXPECT_EQ(result.text,
            "demo: a title\n"
            "name   value\n"
            "a          1\n"
            "extra    333\n"
            "a note\n");
}

TEST(BenchReport, TargetsComeLastInTheTextWithTheirDetails) {
  gcbench::Report report("demo", {"name"});
  gcbench::Json measured = gcbench::target("ratio", 1.02, 1.05);
  measured["measured"] = 1.2;
  measured["predicted"] = 1.176;
  measured["value_wall"] = 1.031;
  gcbench::Json wall_only = gcbench::target("wall", 2.0, 1.05);
  wall_only["value_wall"] = 2.5;
  report.add_target(measured);
  report.json["after"] = true;  // keys after the first target stay after it
  report.add_target(wall_only);
  report.add_target(gcbench::target("plain", 1e-7, 1e-5));
  const auto result = report.finish("demo", "note\n");

  EXPECT_EQ(keys(result.json), (std::vector<std::string>{"targets", "after", "rows"}));
  ASSERT_EQ(result.json["targets"].size(), 3u);
  EXPECT_FALSE(result.json["targets"][1]["holds"].get<bool>());
  EXPECT_EQ(result.text,
            "demo\n"
            "name\n"
            "note\n"
            "target ratio: 1.020 <= 1.05  holds  (1.200 / 1.176; wall time: 1.031)\n"
            "target wall: 2.000 <= 1.05  FAILS  (wall time: 2.500)\n"
            "target plain: 1.0e-07 <= 1.0e-05  holds\n");
}

TEST(BenchReport, WithoutColumnsThereIsNoTableAndRowsAreStillWritten) {
  gcbench::Report report("demo", {}, "results");
  report.json["config"] = {{"dim", 4}};
  const auto result = report.finish("demo: hand-made lines", "   1 | 2\n");
  EXPECT_EQ(result.text, "demo: hand-made lines\n   1 | 2\n");
  ASSERT_TRUE(result.json.contains("results"));  // no row came: an empty list, not a missing key
  EXPECT_TRUE(result.json["results"].is_array());
  EXPECT_TRUE(result.json["results"].empty());
}

}  // namespace
