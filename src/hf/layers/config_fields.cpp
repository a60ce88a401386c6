#include "hf/layers/config_fields.h"

#include <algorithm>

namespace gradcache {
namespace hf {
namespace detail {
namespace {

std::string listed(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* name : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

void require_choice(const char* key, const std::string& value, std::initializer_list<const char*> allowed,
                    const std::string& file) {
  if (std::none_of(allowed.begin(), allowed.end(), [&](const char* name) { return value == name; }))
    throw ModelFileError(file, std::string(key) + " " + quoted(value) + " is not supported (supported: " + listed(allowed) + ")");
}

// 1 rather than 1.0 for a whole number, as a person writes bounds.
std::string number_text(double value) {
  const bool whole = value == static_cast<double>(static_cast<int64_t>(value)) && value > -1e15 && value < 1e15;
  return whole ? std::to_string(static_cast<int64_t>(value)) : Json(value).dump();
}

void require_number(const char* key, double value, double min, double max, bool open_min, bool open_max,
                    const std::string& file) {
  const bool fits = (open_min ? value > min : value >= min) && (open_max ? value < max : value <= max);  // NaN fails too
  if (!fits)
    throw ModelFileError(file, quoted(key) + " is " + Json(value).dump() + "; it must be in " + (open_min ? "(" : "[") +
                                   number_text(min) + ", " + number_text(max) + (open_max ? ")" : "]"));
}

}  // namespace

void require_in_range(const char* key, int64_t value, int64_t min, int64_t max, const std::string& file) {
  if (value < min || value > max)
    throw ModelFileError(file, quoted(key) + " is " + std::to_string(value) + "; it must be from " + std::to_string(min) +
                                   " to " + std::to_string(max));
}

void FieldReader::integer(const char* key, int64_t& value, int64_t min, int64_t max) {
  value = int_field(config_, key, value, min, max, file_);
}

void FieldReader::optional_integer(const char* key, int64_t& value, int64_t none, int64_t min, int64_t max) {
  auto it = config_.find(key);
  if (it == config_.end()) return;  // absent: the type's default; null: none
  value = it->is_null() ? none : int_field(config_, key, none, min, max, file_);
}

void FieldReader::number(const char* key, double& value, double min, double max, bool open_min, bool open_max) {
  value = number_field(config_, key, value, min, max, file_);
  require_number(key, value, min, max, open_min, open_max, file_);
}

void FieldReader::flag(const char* key, bool& value) { value = bool_field(config_, key, value, file_); }

void FieldReader::choice(const char* key, std::string& value, std::initializer_list<const char*> allowed) {
  value = string_field(config_, key, value, file_);
  require_choice(key, value, allowed, file_);
}

void FieldChecker::integer(const char* key, int64_t& value, int64_t min, int64_t max) {
  require_in_range(key, value, min, max, file_);
}

void FieldChecker::optional_integer(const char* key, int64_t& value, int64_t none, int64_t min, int64_t max) {
  if (value != none) require_in_range(key, value, min, max, file_);
}

void FieldChecker::number(const char* key, double& value, double min, double max, bool open_min, bool open_max) {
  require_number(key, value, min, max, open_min, open_max, file_);
}

void FieldChecker::choice(const char* key, std::string& value, std::initializer_list<const char*> allowed) {
  require_choice(key, value, allowed, file_);
}

void FieldWriter::optional_integer(const char* key, int64_t& value, int64_t none, int64_t, int64_t) {
  config_[key] = value == none ? Json(nullptr) : Json(value);
}

std::string require_model_type(const Json& config, std::initializer_list<const char*> types, const std::string& file) {
  require_object(config, file);
  const std::string type = string_field(config, "model_type", "", file);
  if (std::none_of(types.begin(), types.end(), [&](const char* name) { return type == name; }))
    throw ModelFileError(file, "model_type " + quoted(type) + " is not " + listed(types));
  return type;
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
