// The figures: gnuplot scripts and data files written from the scenarios' JSON.
#pragma once

#include "report.h"

#include <string>
#include <vector>

namespace gcbench {

/// Writes PNG + data + gnuplot script from the scenarios' JSON: the memory curves (memory) and
/// the time / memory trade-off (retain, or overhead alone); or, for the streaming scenario,
/// the dense and streaming losses' memory and time vs N. Returns the files written; throws if
/// there is nothing to plot or gnuplot fails.
std::vector<std::string> write_plot(const std::string& png, const Json& scenarios);

}  // namespace gcbench
