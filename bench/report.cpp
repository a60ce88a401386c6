// Text tables, number formats, targets, progress lines and the Report they make up.
#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace gcbench {

std::string Table::str() const {
  if (header_.empty()) return "";
  std::vector<size_t> width(header_.size(), 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  widen(header_);
  for (const auto& r : rows_) widen(r);
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      // First column left-aligned (names), the others right-aligned (numbers).
      const std::string pad(width[i] - cell.size(), ' ');
      text += (i ? "  " : "") + (i == 0 ? cell + pad : pad + cell);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  };
  line(header_);
  for (const auto& r : rows_) line(r);
  return out.str();
}

std::string fmt(double value, int precision) {
  if (std::isnan(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, value);
  return buf;
}

std::string sci(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1e", value);
  return buf;
}

double to_mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }
std::string mib(int64_t bytes) { return fmt(to_mib(bytes), 1); }

Json target(const std::string& name, double value, double limit) {
  return Json{{"name", name}, {"value", value}, {"limit", limit}, {"holds", value <= limit}};
}

std::string target_line(const Json& t) {
  const double value = t["value"].get<double>(), limit = t["limit"].get<double>();
  const bool small = std::abs(limit) < 1e-2;
  return "target " + t["name"].get<std::string>() + ": " + (small ? sci(value) : fmt(value, 3)) +
         " <= " + (small ? sci(limit) : fmt(limit, 2)) + "  " + (t["holds"].get<bool>() ? "holds" : "FAILS");
}

void progress(const std::string& line) { std::cerr << "  .. " << line << std::endl; }

Report::Report(std::string scenario, std::vector<std::string> columns, std::string rows_key)
    : table(std::move(columns)), scenario_(std::move(scenario)), rows_key_(std::move(rows_key)) {}

void Report::progress(const std::string& line) const { gcbench::progress(scenario_ + ": " + line); }

void Report::add_row(Json row, std::vector<std::string> cells) {
  json[rows_key_].push_back(std::move(row));
  if (!cells.empty()) table.add(std::move(cells));
}

const Json& Report::rows() const { return json.at(rows_key_); }

void Report::add_target(const Json& t) {
  json["targets"].push_back(t);
  std::string details;
  if (t.contains("measured") && t.contains("predicted")) {
    details = fmt(t["measured"].get<double>(), 3) + " / " + fmt(t["predicted"].get<double>(), 3);
  }
  if (t.contains("value_wall")) {
    details += (details.empty() ? "" : "; ") + std::string("wall time: ") + fmt(t["value_wall"].get<double>(), 3);
  }
  target_lines_ += target_line(t) + (details.empty() ? "" : "  (" + details + ")") + "\n";
}

ScenarioResult Report::finish(const std::string& title, const std::string& notes) {
  if (!json.contains(rows_key_)) json[rows_key_] = Json::array();
  return {json, title + "\n" + table.str() + notes + target_lines_};
}

}  // namespace gcbench
