// JSON of model files read with checks: parse errors, wrong types and out-of-range values
// become ModelFileError naming the file and the key. Private to gradcache_hf.
#pragma once

#include <gradcache/hf/model_file_error.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace gradcache {
namespace hf {
namespace detail {

using Json = nlohmann::json;

/// Parses `text`, refusing nesting deeper than `max_depth` (model files are shallow; the limit
/// keeps a hostile file from building a deep tree) and, within objects, duplicate keys.
Json parse_json(std::string_view text, const std::string& file, int max_depth = 32);
/// How many times parse_json has run in this process: what shows that loading a model parses
/// its config.json once (tests/hf/test_architectures.cpp).
int64_t parse_json_calls();

/// `text` as a JSON string literal: quoted, escaped, valid UTF-8 whatever `text` holds.
std::string quoted(const std::string& text);

/// "an integer", "a string", ... for messages.
std::string json_kind(const Json& value);

/// `object` must be a JSON object (else ModelFileError: "<file>: expected a JSON object").
void require_object(const Json& object, const std::string& file, const std::string& what = "the file");

/// Field `key` of `object` (a JSON object), or `fallback` when absent (or null, as Python's
/// json writes None). Wrong types and values outside [min, max] are errors naming key and file.
int64_t int_field(const Json& object, const std::string& key, int64_t fallback, int64_t min, int64_t max,
                  const std::string& file);
double number_field(const Json& object, const std::string& key, double fallback, double min, double max,
                    const std::string& file);
bool bool_field(const Json& object, const std::string& key, bool fallback, const std::string& file);
std::string string_field(const Json& object, const std::string& key, const std::string& fallback,
                         const std::string& file);

/// Reads a whole (small) text file; ModelFileError if it is missing, unreadable or over `max_bytes`.
std::string read_text_file(const std::string& path, size_t max_bytes = 64 << 20);

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
