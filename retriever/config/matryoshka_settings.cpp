#include "retriever/config/matryoshka_settings.h"

#include "retriever/config/train_config.h"
#include "retriever/files/comma_items.h"

#include <algorithm>
#include <cmath>

namespace gradcache {
namespace retriever {
namespace {

// Checks across settings: the weights fit the dims, the dims fit the encoder's width.
std::string check_matryoshka(const TrainConfig& c) {
  const auto dims = parse_dim_list(c.matryoshka.dims, "--matryoshka");
  const auto weights = parse_weight_list(c.matryoshka.weights, "--matryoshka-weights");
  if (dims.empty()) return weights.empty() ? "" : "--matryoshka-weights is used only with --matryoshka DIMS";
  if (!weights.empty() && weights.size() != dims.size()) {
    return "--matryoshka-weights gives " + std::to_string(weights.size()) + " weights for the " +
           std::to_string(dims.size()) + " dimensions of --matryoshka " + c.matryoshka.dims +
           ": give one per dimension";
  }
  if (!weights.empty() && std::all_of(weights.begin(), weights.end(), [](double w) { return w == 0; })) {
    return "--matryoshka-weights: all weights are 0";
  }
  const int64_t width = output_width(c);
  return matryoshka_too_wide(c, width,
                             "the model's output width " + std::to_string(width) +
                                 (c.encoder.projection_dim > 0 ? " (--projection)" : " (--dim)"));
}

}  // namespace

std::vector<int64_t> parse_dim_list(const std::string& text, const std::string& flag) {
  std::vector<int64_t> dims;
  for (const auto& item : comma_items(text)) {
    size_t used = 0;
    int64_t d = 0;
    try {
      d = std::stoll(item, &used);
    } catch (const std::exception&) {
    }
    if (item.empty() || used != item.size() || d <= 0) {
      throw SettingsError(flag + " takes positive integers separated by commas (e.g. 64,32,16), got '" + text + "'");
    }
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) {
      throw SettingsError(flag + " " + text + ": dimension " + std::to_string(d) + " is given twice");
    }
    dims.push_back(d);
  }
  return dims;
}

std::vector<double> parse_weight_list(const std::string& text, const std::string& flag) {
  std::vector<double> weights;
  for (const auto& item : comma_items(text)) {
    size_t used = 0;
    double w = -1;
    try {
      w = std::stod(item, &used);
    } catch (const std::exception&) {
    }
    if (item.empty() || used != item.size() || !std::isfinite(w) || w < 0) {
      throw SettingsError(flag + " takes finite numbers >= 0 separated by commas (e.g. 1,1,1), got '" + text + "'");
    }
    weights.push_back(w);
  }
  return weights;
}

std::string matryoshka_too_wide(const TrainConfig& c, int64_t width, const std::string& whose_width) {
  for (int64_t d : parse_dim_list(c.matryoshka.dims, "--matryoshka")) {
    if (width > 0 && d > width) {
      return "--matryoshka " + c.matryoshka.dims + ": dimension " + std::to_string(d) + " is larger than " +
             whose_width;
    }
  }
  return "";
}

int64_t output_width(const TrainConfig& c) { return c.encoder.is_builtin() ? c.encoder.output_dim() : 0; }


void add_matryoshka_settings(SettingsTable<TrainConfig>& t) {
  const char* group = "Training";
  t.add(nested_field("matryoshka", &TrainConfig::matryoshka, &MatryoshkaSettings::dims, "--matryoshka",
                     "Matryoshka representations: the loss is summed over these leading dimensions of the embeddings "
                     "(e.g. 64,32,16), each then usable alone; \"\" = off")
            .in_group(group)
            .hint("DIMS")
            .checked([](const nlohmann::json& v) {
              parse_dim_list(v.get<std::string>(), "--matryoshka");
              return std::string();
            }));
  t.add(nested_field("matryoshka_weights", &TrainConfig::matryoshka, &MatryoshkaSettings::weights,
                     "--matryoshka-weights",
                     "With --matryoshka: one weight per dimension (e.g. 1,1,1; default: 1 each)")
            .in_group(group)
            .hint("W")
            .checked([](const nlohmann::json& v) {
              parse_weight_list(v.get<std::string>(), "--matryoshka-weights");
              return std::string();
            }));
  t.add_check(check_matryoshka);
}

void check_prefix_dim(int64_t dim, int64_t width, const std::string& flag) {
  if (dim <= 0) throw SettingsError(flag + " must be positive, got " + std::to_string(dim));
  if (dim > width) {
    throw SettingsError(flag + " " + std::to_string(dim) + " is larger than the embeddings' width " +
                        std::to_string(width));
  }
}

}  // namespace retriever
}  // namespace gradcache
