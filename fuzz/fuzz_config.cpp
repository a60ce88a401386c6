// libFuzzer target: a --config file (JSON settings) through what `gradcache train --config`
// does with it: parse_settings_text, build_train_config, validate. The contract checked on
// every input, besides no crash, hang or leak:
// - the only exception is SettingsError, with a valid UTF-8 message;
// - a config that validates is saved and read back unchanged (config.json round trip), and
//   holds no null (a non-finite number is stored as null and the run could not be resumed).
#include "fuzz_common.h"
#include "retriever/config/train_config.h"

#include <cstdint>
#include <string>

using namespace gradcache::retriever;

namespace {

bool holds_null(const nlohmann::json& j) {
  if (j.is_null()) return true;
  if (j.is_structured()) {
    for (const auto& item : j) {
      if (holds_null(item)) return true;
    }
  }
  return false;
}

void check_round_trip(const TrainConfig& config) {
  const nlohmann::json saved = config;
  fuzz::check(!holds_null(saved), "a valid config saves no null", saved.dump());
  const nlohmann::json again = read_saved_config(nlohmann::json::parse(saved.dump()));
  fuzz::check(again == saved, "config.json round trip", saved.dump());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json file = parse_settings_text(text, "fuzz.json");
    const TrainConfig config = build_train_config(file, {});
    validate(config);
    check_round_trip(config);
  } catch (const SettingsError& error) {
    fuzz::check_message(error.what());
  }
  return 0;
}
