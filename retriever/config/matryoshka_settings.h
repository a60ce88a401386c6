// Matryoshka training in the retriever (--matryoshka, --matryoshka-weights): one encoder whose
// leading dimensions each work as an embedding. Declared here, apart from the other settings
// of a run, as one concept: the flags and their checks (the loss they wrap is built in
// train/training_loss.h).
#pragma once

#include "retriever/config/settings_table.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

struct TrainConfig;

/// --matryoshka and --matryoshka-weights, as given (parsed by parse_dim_list and
/// parse_weight_list; checked when the settings are).
struct MatryoshkaSettings {
  std::string dims;     ///< prefix widths the loss is summed over, "64,32,16"; "" = off
  std::string weights;  ///< one weight per prefix, "1,1,1"; "" = 1 each
  bool enabled() const { return !dims.empty(); }
};

/// Prefix widths from a comma list ("64,32,16"; "" = none). Throws SettingsError naming
/// `flag` unless each item is a positive integer and none repeats.
std::vector<int64_t> parse_dim_list(const std::string& text, const std::string& flag);

/// Weights from a comma list ("1,0.5,0.25"; "" = none). Throws SettingsError naming `flag`
/// unless each item is a finite number >= 0.
std::vector<double> parse_weight_list(const std::string& text, const std::string& flag);

/// The width of the built-in encoder's output (--projection, else --dim); 0 for a TorchScript
/// --model or a --model-dir model, whose width is known only once it is loaded.
int64_t output_width(const TrainConfig& c);

/// "" when every --matryoshka dimension fits embeddings `width` wide (0: unknown, all fit); else
/// the refusal naming the flag, ending "is larger than " + `whose_width` (where the width comes
/// from, e.g. "the model's output width 16 (--dim)").
std::string matryoshka_too_wide(const TrainConfig& c, int64_t width, const std::string& whose_width);

/// Adds --matryoshka and --matryoshka-weights and their checks to a run's table.
void add_matryoshka_settings(SettingsTable<TrainConfig>& table);

/// --dim M of eval, encode and export, declared once: what `what_uses_it` does with the first M
/// dimensions of each embedding (re-normalised when the model normalises); any settings struct
/// with a member `int64_t dim`.
template <class Config>
void add_prefix_dim_setting(SettingsTable<Config>& t, const std::string& what_uses_it) {
  t.add(field("dim", &Config::dim, "--dim",
              what_uses_it + " the first M dimensions of each embedding (re-normalised when the model normalises), "
                             "e.g. a prefix of a --matryoshka run (0: all)")
            .hint("M")
            .checked(at_least(0)));
}

/// Throws SettingsError naming `flag` unless 0 < dim <= width (the embeddings' width).
void check_prefix_dim(int64_t dim, int64_t width, const std::string& flag);

}  // namespace retriever
}  // namespace gradcache
