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

bool read_required_bool(const Json& object, const char* key, const Source& source) {
  require_field(object, key, source);
  return read_bool(object, key, source, false);
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

std::vector<std::string> read_dense_vocab(const Json& vocab, const Source& source, uint64_t max_size) {
  expect_object(vocab, source);
  if (vocab.size() > max_size)
    fail(source, "declares " + std::to_string(vocab.size()) + " tokens, more than the " + std::to_string(max_size) +
                     " this reader accepts");
  std::vector<std::string> tokens(vocab.size());
  std::vector<bool> seen(vocab.size(), false);
  for (const auto& [token, id_value] : vocab.items()) {
    const uint64_t id = as_count(id_value, source.at(token), UINT32_MAX);
    if (id >= vocab.size())
      fail(source, "the id of " + quote_for_message(token) + " is " + std::to_string(id) + ", out of range: " +
                       std::to_string(vocab.size()) + " tokens need the ids 0.." + std::to_string(vocab.size() - 1));
    if (seen[id])
      fail(source, "the id " + std::to_string(id) + " is given to both " + quote_for_message(tokens[id]) + " and " +
                       quote_for_message(token) + "; each id must name one token");
    seen[id] = true;
    tokens[id] = token;
  }
  return tokens;
}

OrderedJson dense_vocab_json(const std::vector<std::string>& tokens) {
  // The ordered object's own insert looks for the key first (quadratic over a vocabulary); the
  // tokens are known to be distinct, so they are appended to the vector it is made of.
  OrderedJson vocab = OrderedJson::object();
  auto& entries = static_cast<OrderedJson::object_t::Container&>(vocab.get_ref<OrderedJson::object_t&>());
  entries.reserve(tokens.size());
  for (size_t id = 0; id < tokens.size(); ++id) entries.emplace_back(tokens[id], id);
  return vocab;
}

}  // namespace gradcache::hf::detail
