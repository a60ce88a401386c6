// What a scenario reports: its JSON and text, text tables, number formats, targets and
// progress lines.
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

/// A text table: header, rows of cells, columns aligned.
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

}  // namespace gcbench
