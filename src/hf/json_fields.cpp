// Typed reads of JSON fields with messages that name the file and the field.
#include "hf/json_fields.h"

#include <cstdio>

#include "gradcache/hf/tokenizer.h"
#include "hf/unicode.h"

namespace gradcache::hf::detail {

void fail(const Source& source, const std::string& what) {
  std::string message = source.file;
  if (!source.path.empty()) message += ": " + source.path;
  message += ": " + what;
  // File names and parser messages quote bytes of the file, which need not be UTF-8.
  throw TokenizerError(unicode::printable_utf8(message));
}

std::string describe_json(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_float: return "a fractional number";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    default: return "an unexpected value";
  }
}

std::string quote_for_message(std::string_view text) {
  constexpr size_t kShown = 80;
  const std::u32string chars = unicode::decode_utf8(text);
  std::string out = "\"";
  for (size_t i = 0; i < chars.size() && i < kShown; ++i) {
    const char32_t c = chars[i];
    if (c < 0x20 || c == 0x7F || c == U'"' || c == U'\\') {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04X", static_cast<unsigned>(c));
      out += escaped;
    } else {
      unicode::append_utf8(out, c);
    }
  }
  if (chars.size() > kShown) out += "...";
  return out + "\"";
}

void expect_object(const Json& value, const Source& source) {
  if (!value.is_object()) fail(source, "expected an object, found " + describe_json(value));
}

const Json& require_field(const Json& object, const char* key, const Source& source) {
  const auto it = object.find(key);
  if (it == object.end()) fail(source, std::string("the field \"") + key + "\" is missing");
  return *it;
}

bool read_bool(const Json& object, const char* key, const Source& source, bool fallback) {
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  if (!it->is_boolean()) fail(source.at(key), "expected true or false, found " + describe_json(*it));
  return it->get<bool>();
}

std::optional<bool> read_optional_bool(const Json& object, const char* key, const Source& source) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) fail(source.at(key), "expected true, false or null, found " + describe_json(*it));
  return it->get<bool>();
}

std::string read_string(const Json& object, const char* key, const Source& source,
                        const std::optional<std::string>& fallback) {
  const auto it = object.find(key);
  if (it == object.end()) {
    if (fallback) return *fallback;
    fail(source, std::string("the field \"") + key + "\" is missing");
  }
  if (!it->is_string()) fail(source.at(key), "expected a string, found " + describe_json(*it));
  return it->get<std::string>();
}

uint64_t as_count(const Json& value, const Source& source, uint64_t max) {
  if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<int64_t>() >= 0))
    fail(source, "expected a non-negative integer, found " + describe_json(value) +
                     (value.is_number_integer() ? " below zero" : ""));
  const auto count = value.get<uint64_t>();
  if (count > max) fail(source, std::to_string(count) + " is too large (at most " + std::to_string(max) + ")");
  return count;
}

uint64_t read_count(const Json& object, const char* key, const Source& source, std::optional<uint64_t> fallback,
                    uint64_t max) {
  const auto it = object.find(key);
  if (it == object.end()) {
    if (fallback) return *fallback;
    fail(source, std::string("the field \"") + key + "\" is missing");
  }
  return as_count(*it, source.at(key), max);
}

std::string read_type(const Json& object, const Source& source) {
  expect_object(object, source);
  return read_string(object, "type", source);
}

}  // namespace gradcache::hf::detail
