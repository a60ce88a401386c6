// What a scenario reports: its JSON and text (built together by a Report), text tables,
// number formats, targets and progress lines.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gcbench {

using Json = nlohmann::ordered_json;  // keeps keys in the order they are written

/// What a scenario hands back: its JSON and its text report.
struct ScenarioResult {
  Json json;
  std::string text;
};

/// A text table: header, rows of cells, columns aligned. Without a header: no table ("").
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string fmt(double value, int precision = 3);  ///< fixed notation
std::string sci(double value);                     ///< 1.2e-07
std::string mib(int64_t bytes);                    ///< "12.3"
double to_mib(int64_t bytes);

/// A target: `value` must be <= `limit`.
Json target(const std::string& name, double value, double limit);
std::string target_line(const Json& target);

/// Progress for humans: stderr, always (stdout holds the table or the JSON).
void progress(const std::string& line);

/// A scenario's result as it is built, laid out alike in every scenario. The JSON: the
/// settings first (as the scenario writes them), then its rows, then what it concludes, then
/// its targets; each key stands where it is first written. The text: a title line, the table
/// (a line per row given cells), notes, a line per target.
class Report {
 public:
  /// `columns`: the table's header (none: no table); `rows_key`: the rows' key in the JSON.
  Report(std::string scenario, std::vector<std::string> columns, std::string rows_key = "rows");

  Json json;    ///< the scenario's JSON; add_row and add_target write into it
  Table table;  ///< a line per add_row with cells; a scenario may add lines of its own

  /// "  .. scenario: line" on stderr.
  void progress(const std::string& line) const;
  /// A row into json[rows_key] and, given cells, a line of the table.
  void add_row(Json row, std::vector<std::string> cells = {});
  const Json& rows() const;
  /// A target into json["targets"], and its line after the notes; the line also shows the
  /// target's "measured" / "predicted" and "value_wall" where it has them.
  void add_target(const Json& target);
  /// The result: `title`, the table, `notes` (lines ending in "\n"), the targets' lines.
  /// The rows' key is written (empty) if no row came.
  ScenarioResult finish(const std::string& title, const std::string& notes = "");

 private:
  std::string scenario_, rows_key_;
  std::string target_lines_;
};

}  // namespace gcbench
