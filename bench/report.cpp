// Text tables, number formats, targets and progress lines.
#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace gcbench {

std::string Table::str() const {
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

}  // namespace gcbench
