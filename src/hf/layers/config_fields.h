// A config.json's fields declared once. Each architecture's config lists its fields in one
// function, visit(FieldVisitor&), naming the key, the member, its bounds and what it may hold;
// reading (parse), checking (validate) and writing (to_json) are three visitors of that list, so
// a field cannot be read but not checked, or checked but not written. Private to gradcache_hf.
#pragma once

#include "hf/model_json.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace gradcache {
namespace hf {
namespace detail {

// Sanity bounds of every architecture's config.json: above any released model (Llama-3.1-405B:
// 16,384 wide, 126 layers; BLOOM's 250,880 words; 131,072 positions), low enough that a corrupt
// file cannot ask for terabytes. Learned position tables (BERT, MPNet) are allocated whole,
// rotary positions (Llama, Qwen, ModernBERT) are not: two bounds.
constexpr int64_t kMaxVocabulary = 10'000'000;
constexpr int64_t kMaxWidth = 65'536;
constexpr int64_t kMaxLayers = 1'000;
constexpr int64_t kMaxLearnedPositions = 1'048'576;
constexpr int64_t kMaxRotaryPositions = 16'777'216;

/// What every models/*_config.cpp reads with, in one line: `using namespace detail::config_reading;`.
namespace config_reading {
using ::gradcache::hf::detail::kMaxLayers;
using ::gradcache::hf::detail::kMaxVocabulary;
using ::gradcache::hf::detail::kMaxWidth;
using Json = nlohmann::json;
}  // namespace config_reading

/// What a config's field list is walked with.
class FieldVisitor {
 public:
  virtual ~FieldVisitor() = default;
  /// An integer in [min, max].
  virtual void integer(const char* key, int64_t& value, int64_t min, int64_t max) = 0;
  /// An integer in [min, max], or null, held as `none` (a value outside [min, max]); when the
  /// key is absent the member keeps its default.
  virtual void optional_integer(const char* key, int64_t& value, int64_t none, int64_t min, int64_t max) = 0;
  /// A finite number from min to max; `open_min` / `open_max`: that end itself is refused (an
  /// epsilon must be > 0, a dropout probability < 1).
  virtual void number(const char* key, double& value, double min, double max, bool open_min = false,
                      bool open_max = false) = 0;
  virtual void flag(const char* key, bool& value) = 0;
  /// A string among `allowed`.
  virtual void choice(const char* key, std::string& value, std::initializer_list<const char*> allowed) = 0;
};

/// Reads each field from a parsed config.json (absent or null: the member keeps its default);
/// ModelFileError naming `file` and the key for a wrong type or an out-of-range value.
class FieldReader : public FieldVisitor {
 public:
  FieldReader(const Json& config, std::string file) : config_(config), file_(std::move(file)) {}
  void integer(const char* key, int64_t& value, int64_t min, int64_t max) override;
  void optional_integer(const char* key, int64_t& value, int64_t none, int64_t min, int64_t max) override;
  void number(const char* key, double& value, double min, double max, bool open_min, bool open_max) override;
  void flag(const char* key, bool& value) override;
  void choice(const char* key, std::string& value, std::initializer_list<const char*> allowed) override;

 private:
  const Json& config_;
  std::string file_;
};

/// Checks each member against its bounds (a config made or changed in code); ModelFileError
/// naming `file` and the key.
class FieldChecker : public FieldVisitor {
 public:
  explicit FieldChecker(std::string file) : file_(std::move(file)) {}
  void integer(const char* key, int64_t& value, int64_t min, int64_t max) override;
  void optional_integer(const char* key, int64_t& value, int64_t none, int64_t min, int64_t max) override;
  void number(const char* key, double& value, double min, double max, bool open_min, bool open_max) override;
  void flag(const char*, bool&) override {}
  void choice(const char* key, std::string& value, std::initializer_list<const char*> allowed) override;

 private:
  std::string file_;
};

/// Writes each member into `config` (an optional integer at its `none`: null).
class FieldWriter : public FieldVisitor {
 public:
  explicit FieldWriter(Json& config) : config_(config) {}
  void integer(const char* key, int64_t& value, int64_t, int64_t) override { config_[key] = value; }
  void optional_integer(const char* key, int64_t& value, int64_t none, int64_t, int64_t) override;
  void number(const char* key, double& value, double, double, bool, bool) override { config_[key] = value; }
  void flag(const char* key, bool& value) override { config_[key] = value; }
  void choice(const char* key, std::string& value, std::initializer_list<const char*>) override { config_[key] = value; }

 private:
  Json& config_;
};

/// The config.json text that `source` (the file read, "" for a config made in code) becomes
/// with `fields` written over it: keys this library does not read ("architectures",
/// "transformers_version", ...) are kept.
template <class Config>
std::string config_json_over(const std::string& source, Config config) {
  Json json = source.empty() ? Json::object() : Json::parse(source, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) json = Json::object();
  FieldWriter writer(json);
  config.visit(writer);
  return json.dump(2) + "\n";
}

/// The bounds of every field Config::visit declares (the first check of each config's validate()).
template <class Config>
void check_fields(const Config& config, const std::string& file) {
  Config copy = config;  // visit takes the fields by reference; the checker changes none
  FieldChecker checker(file);
  copy.visit(checker);
}

/// A config.json's "model_type", which must be one of `types`; ModelFileError otherwise.
std::string require_model_type(const Json& config, std::initializer_list<const char*> types, const std::string& file);

/// ModelFileError unless `value` is in [min, max].
void require_in_range(const char* key, int64_t value, int64_t min, int64_t max, const std::string& file);

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
