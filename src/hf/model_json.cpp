#include "hf/model_json.h"

#include "files/atomic_file.h"

#include <atomic>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

namespace gradcache {
namespace hf {
namespace detail {

namespace {
std::atomic<int64_t> parses{0};
}  // namespace

int64_t parse_json_calls() { return parses.load(); }

Json parse_json(std::string_view text, const std::string& file, int max_depth) {
  ++parses;
  // Keys seen in each open object, to refuse duplicates (the format of safetensors forbids them,
  // and a later duplicate silently replacing an earlier value hides a broken file).
  std::vector<std::set<std::string>> keys;
  auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) {
      if (depth >= max_depth) throw ModelFileError(file, "JSON nested more than " + std::to_string(max_depth) + " deep");
      if (event == Json::parse_event_t::object_start) keys.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      keys.pop_back();
    } else if (event == Json::parse_event_t::key && !keys.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(key).second) throw ModelFileError(file, "duplicate JSON key " + quoted(key));
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), check);
  } catch (const Json::parse_error& error) {
    // Not error.what(): it quotes the offending bytes, which need not be UTF-8.
    throw ModelFileError(file, "not valid JSON (syntax error at byte " + std::to_string(error.byte) + ")");
  } catch (const Json::out_of_range&) {  // a number beyond a double, e.g. 1e400 (found by fuzz_safetensors)
    throw ModelFileError(file, "not valid JSON here: a number out of range");
  }
}

std::string quoted(const std::string& text) {
  return Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string json_kind(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number with a fraction";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "an unusual value";
  }
}

void require_object(const Json& object, const std::string& file, const std::string& what) {
  if (!object.is_object()) throw ModelFileError(file, what + " must be a JSON object, not " + json_kind(object));
}

namespace {

const Json* field(const Json& object, const std::string& key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void wrong_type(const std::string& key, const Json& value, const std::string& expected,
                             const std::string& file) {
  throw ModelFileError(file, quoted(key) + " must be " + expected + ", not " + json_kind(value));
}

}  // namespace

int64_t int_field(const Json& object, const std::string& key, int64_t fallback, int64_t min, int64_t max,
                  const std::string& file) {
  const Json* value = field(object, key);
  if (value == nullptr) return fallback;
  if (!value->is_number_integer()) wrong_type(key, *value, "an integer", file);
  bool fits;
  if (value->is_number_unsigned()) {  // may exceed int64_t: compare unsigned
    const uint64_t number = value->get<uint64_t>();
    fits = number <= static_cast<uint64_t>(max) && (min <= 0 || number >= static_cast<uint64_t>(min));
  } else {
    const int64_t number = value->get<int64_t>();
    fits = number >= min && number <= max;
  }
  if (!fits)
    throw ModelFileError(file, quoted(key) + " is " + value->dump() + "; it must be from " + std::to_string(min) +
                                   " to " + std::to_string(max));
  return value->get<int64_t>();
}

double number_field(const Json& object, const std::string& key, double fallback, double min, double max,
                    const std::string& file) {
  const Json* value = field(object, key);
  if (value == nullptr) return fallback;
  if (!value->is_number()) wrong_type(key, *value, "a number", file);
  const double number = value->get<double>();
  if (!(number >= min && number <= max))  // NaN fails too
    throw ModelFileError(file, quoted(key) + " is " + value->dump() + "; it must be from " + Json(min).dump() +
                                   " to " + Json(max).dump());
  return number;
}

bool bool_field(const Json& object, const std::string& key, bool fallback, const std::string& file) {
  const Json* value = field(object, key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) wrong_type(key, *value, "true or false", file);
  return value->get<bool>();
}

std::string string_field(const Json& object, const std::string& key, const std::string& fallback,
                         const std::string& file) {
  const Json* value = field(object, key);
  if (value == nullptr) return fallback;
  if (!value->is_string()) wrong_type(key, *value, "a string", file);
  return value->get<std::string>();
}

std::string read_text_file(const std::string& path, size_t max_bytes) {
  if (const auto problem = files::regular_file_problem(path); !problem.empty())
    throw ModelFileError(path, problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelFileError(path, "missing or unreadable");
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) throw ModelFileError(path, "larger than " + std::to_string(max_bytes) + " bytes");
  }
  if (in.bad()) throw ModelFileError(path, "read error");
  return text;
}

}  // namespace detail
}  // namespace hf
}  // namespace gradcache
