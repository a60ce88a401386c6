// A declarative table of a program's settings. Each setting is declared once, with its JSON
// key, its flag, its help and group, its check, and whether it may change when a run resumes
// or differ between the processes of a distributed run. The command-line flags
// (tools/cli/setting_flags.h), reading and writing JSON config files, validation, and the
// resume and distributed invariants all come from the table. Generic over the settings
// struct, so any program can declare its own table.
//
//   SettingsTable<Config> table;
//   table.add(field("batch_size", &Config::batch_size, "--batch-size", "Queries per batch")
//                 .in_group("Training").checked(positive()));
//   // defaults (Config's member initialisers) < a JSON config file < flags given as text
//   Config c = table.build(Config{}, nlohmann::json::parse(file_text), {{"batch_size", "64"}});
//   table.validate(c);
//   nlohmann::json saved = table.to_json(c);
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gradcache {
namespace retriever {

/// A setting that cannot be used: text that is no value of its type, an unknown or mistyped
/// config key, a failed check. The message names the flag (or the key).
class SettingsError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A check of one setting's value: "" when fine, else the requirement it breaks
/// ("must be positive"); the table adds the flag and the value to the message.
using SettingCheck = std::function<std::string(const nlohmann::json& value)>;

template <class Config>
struct Setting {
  std::string key;         ///< JSON key (config.json, --config files) and the setting's name
  std::string flag;        ///< "--batch-size"; "" for a setting only JSON and other flags set
  std::string help;
  std::string group;       ///< help section
  std::string value_hint;  ///< shown in help: "N", "SIZE", ...
  bool is_switch = false;  ///< a flag without a value: given means true
  bool is_required = false;  ///< the command line must give the flag
  bool may_change_on_resume = false;      ///< where the run writes, logs, how it uses the machine
  bool may_differ_between_ranks = false;  ///< how a process splits its share (chunking, threads)
  std::vector<std::string> old_flags;     ///< former flags, still accepted with a notice
  std::vector<std::string> old_keys;      ///< former JSON keys, still read with a notice
  std::function<nlohmann::json(const Config&)> get;
  /// Stores a JSON value; throws nlohmann::json::exception when it has the wrong type.
  std::function<void(Config&, const nlohmann::json&)> set;
  /// The flag's text as JSON keys and values ({key: value}; a setting may set others too,
  /// e.g. --chunk-size auto). Throws SettingsError naming the flag.
  std::function<nlohmann::json(const std::string& text)> parse;
  std::vector<SettingCheck> checks;

  Setting& in_group(std::string name) {
    group = std::move(name);
    return *this;
  }
  Setting& hint(std::string text) {
    value_hint = std::move(text);
    return *this;
  }
  Setting& as_switch() {
    is_switch = true;
    return *this;
  }
  Setting& required() {
    is_required = true;
    return *this;
  }
  Setting& free_on_resume() {
    may_change_on_resume = true;
    return *this;
  }
  Setting& per_rank() {
    may_differ_between_ranks = true;
    return *this;
  }
  Setting& old_flag(std::string name) {
    old_flags.push_back(std::move(name));
    return *this;
  }
  Setting& old_key(std::string name) {
    old_keys.push_back(std::move(name));
    return *this;
  }
  Setting& checked(SettingCheck check) {
    checks.push_back(std::move(check));
    return *this;
  }
  Setting& parsed_by(std::function<nlohmann::json(const std::string&)> fn) {
    parse = std::move(fn);
    return *this;
  }
  /// How messages name the setting: its flag, or its key when it has none.
  std::string name() const { return flag.empty() ? key : flag; }
};

/// A flag's text as a value of type T; throws SettingsError naming `flag`.
template <class T>
nlohmann::json parse_setting_text(const std::string& text, const std::string& flag) {
  auto fail = [&](const char* expected) {
    return SettingsError(flag + " expects " + expected + ", got '" + text + "'");
  };
  if constexpr (std::is_same_v<T, std::string>) {
    return text;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "0" || text == "no" || text == "off") return false;
    throw fail("true or false");
  } else {
    size_t used = 0;
    try {
      if constexpr (std::is_floating_point_v<T>) {
        // Not inf or nan: no setting means them, and config.json could not store them (JSON
        // has no such numbers), so the run could not be evaluated or resumed.
        const T value = static_cast<T>(std::stod(text, &used));
        if (used == text.size() && std::isfinite(value)) return value;
      } else if constexpr (std::is_unsigned_v<T>) {
        // Parsed as 64 bits and range-checked before the cast: a narrower T must not wrap.
        if (text.find('-') == std::string::npos) {
          const unsigned long long value = std::stoull(text, &used);
          if (used == text.size() && value <= std::numeric_limits<T>::max()) return static_cast<T>(value);
        }
      } else {
        const long long value = std::stoll(text, &used);
        if (used == text.size() && value >= std::numeric_limits<T>::min() && value <= std::numeric_limits<T>::max())
          return static_cast<T>(value);
      }
    } catch (const std::exception&) {  // not a number, or out of range: the message below
    }
    throw fail(std::is_floating_point_v<T> ? "a finite number" : std::is_unsigned_v<T> ? "a non-negative integer" : "an integer");
  }
}

/// `value` (from a JSON file) as a T. A number that T cannot hold is refused rather than
/// converted: 64.7 or 1e30 for an integer, -1 for an unsigned one (a double out of an
/// integer's range is undefined behaviour in C++, found by fuzzing config files).
template <class T>
T json_setting_value(const nlohmann::json& value, const std::string& key) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    const bool fits = value.is_number_unsigned()
                          ? value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                          : value.is_number_integer() && (std::is_signed_v<T> || value.get<int64_t>() >= 0);
    if (value.is_number() && !fits) {
      throw SettingsError("setting \"" + key + "\" expects " +
                          (std::is_signed_v<T> ? "an integer" : "a non-negative integer") + ", got " + value.dump());
    }
  }
  return value.get<T>();  // other mismatches (a string for a number, ...) throw json's type_error
}

namespace detail {
// A setting of type T that `access` (Config& -> T&) reaches: what field() and nested_field() build.
template <class T, class Config, class Access>
Setting<Config> accessed_field(std::string key, Access access, std::string flag, std::string help) {
  Setting<Config> s;
  s.key = key;
  s.flag = flag;
  s.help = std::move(help);
  s.get = [access](const Config& c) { return nlohmann::json(access(const_cast<Config&>(c))); };
  s.set = [access, key](Config& c, const nlohmann::json& value) { access(c) = json_setting_value<T>(value, key); };
  s.parse = [key, flag](const std::string& text) {
    return nlohmann::json{{key, parse_setting_text<T>(text, flag.empty() ? key : flag)}};
  };
  if constexpr (std::is_same_v<T, bool>) s.value_hint = "BOOL";
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) s.value_hint = "INT";
  if constexpr (std::is_floating_point_v<T>) s.value_hint = "FLOAT";
  if constexpr (std::is_same_v<T, std::string>) s.value_hint = "TEXT";
  return s;
}
}  // namespace detail

/// A setting stored in `member` of Config: JSON and flag text of the member's type.
template <class Config, class T>
Setting<Config> field(std::string key, T Config::*member, std::string flag, std::string help) {
  return detail::accessed_field<T, Config>(
      std::move(key), [member](Config& c) -> T& { return c.*member; }, std::move(flag), std::move(help));
}

/// A setting kept in a member of a member (e.g. &Config::index, &DenseIndexOptions::nprobe), so
/// that an options struct of the library can be filled from a table as it is.
template <class Config, class Group, class T>
Setting<Config> nested_field(std::string key, Group Config::*group, T Group::*member, std::string flag,
                             std::string help) {
  return detail::accessed_field<T, Config>(
      std::move(key), [group, member](Config& c) -> T& { return (c.*group).*member; }, std::move(flag),
      std::move(help));
}

/// The names of an enum's values as settings files and flags spell them, in the order help
/// lists them.
template <class E>
using ChoiceNames = std::vector<std::pair<E, std::string>>;

/// The name of `value` in `names` (every value must have one).
template <class E>
const std::string& choice_name(const ChoiceNames<E>& names, E value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  throw std::logic_error("a choice without a name");
}

/// "a, b or c".
inline std::string spelled_list(const std::vector<std::string>& items) {
  std::string list;
  for (size_t i = 0; i < items.size(); ++i) list += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  return list;
}

/// The names of `names`, "a, b or c".
template <class E>
std::string choice_list(const ChoiceNames<E>& names) {
  std::vector<std::string> items;
  for (const auto& [value, name] : names) items.push_back(name);
  return spelled_list(items);
}

/// The value named `name`; throws SettingsError "WHO must be a, b or c, got \"x\"" otherwise.
template <class E>
E parse_choice(const ChoiceNames<E>& names, const std::string& name, const std::string& who) {
  for (const auto& [value, n] : names) {
    if (n == name) return value;
  }
  throw SettingsError(who + " must be " + choice_list(names) + ", got " + nlohmann::json(name).dump());
}

namespace detail {
// A choice setting that `access` (Config& -> E&) reaches: what choice_field() and
// nested_choice_field() build.
template <class E, class Config, class Access>
Setting<Config> accessed_choice(std::string key, Access access, std::string flag, std::string help,
                                ChoiceNames<E> names) {
  Setting<Config> s;
  s.key = key;
  s.flag = flag;
  s.help = std::move(help);
  const std::string who = s.name();
  s.get = [access, names](const Config& c) {
    return nlohmann::json(choice_name(names, access(const_cast<Config&>(c))));
  };
  s.set = [access, names, who](Config& c, const nlohmann::json& value) {
    access(c) = parse_choice(names, value.get<std::string>(), who);  // a non-string: json's type_error
  };
  s.parse = [key](const std::string& text) { return nlohmann::json{{key, text}}; };
  for (const auto& [value, name] : names) s.value_hint += (s.value_hint.empty() ? "" : "|") + name;
  return s;
}
}  // namespace detail

/// A setting kept as an enum in `member`, written and read as one of `names`: the choice is
/// parsed once, here, and the rest of the program compares enums, never strings. Any other
/// name is refused with the list (from a flag or a settings file alike).
template <class Config, class E>
Setting<Config> choice_field(std::string key, E Config::*member, std::string flag, std::string help,
                             ChoiceNames<E> names) {
  return detail::accessed_choice<E, Config>(
      std::move(key), [member](Config& c) -> E& { return c.*member; }, std::move(flag), std::move(help),
      std::move(names));
}

/// choice_field for an enum kept in a member of a member (a feature's settings struct).
template <class Config, class Group, class E>
Setting<Config> nested_choice_field(std::string key, Group Config::*group, E Group::*member, std::string flag,
                                    std::string help, ChoiceNames<E> names) {
  return detail::accessed_choice<E, Config>(
      std::move(key), [group, member](Config& c) -> E& { return (c.*group).*member; }, std::move(flag), std::move(help),
      std::move(names));
}

/// A bound as people write it: 0, -1, 0.5 (not 0.0).
inline std::string format_bound(double x) {
  if (x == static_cast<double>(static_cast<int64_t>(x))) return std::to_string(static_cast<int64_t>(x));
  return nlohmann::json(x).dump();
}

/// Checks for Setting::checked. A real setting reaches LibTorch as a 32-bit float (a learning
/// rate, a temperature, a clipping norm), so positive() and at_least() also refuse what a float
/// cannot hold: --lr 1e300 failed at the first step with LibTorch's "value cannot be converted
/// to type float without overflow", and --temperature 1e-300 became 0 (1e-38, a subnormal float,
/// is kept: a test diverges a run with it).
inline SettingCheck positive() {
  return [](const nlohmann::json& v) {
    const double x = v.get<double>();
    if (!(x > 0)) return std::string("must be positive");
    if (!std::isfinite(x)) return std::string("must be finite");
    if (x > std::numeric_limits<float>::max()) return std::string("must be at most 3.4e38 (the largest 32-bit float)");
    if (x < std::numeric_limits<float>::denorm_min()) return std::string("must be at least 1.4e-45 (the smallest 32-bit float)");
    return std::string();
  };
}
inline SettingCheck at_least(double low) {
  return [low](const nlohmann::json& v) {
    const double x = v.get<double>();
    if (!(x >= low)) return "must be >= " + format_bound(low);
    if (!std::isfinite(x)) return std::string("must be finite");
    if (x > std::numeric_limits<float>::max()) return std::string("must be at most 3.4e38 (the largest 32-bit float)");
    return std::string();
  };
}
/// [low, high): e.g. a fraction or a probability.
inline SettingCheck in_range(double low, double high) {
  return [low, high](const nlohmann::json& v) {
    const double x = v.get<double>();
    return x >= low && x < high ? std::string()
                                : "must be in [" + format_bound(low) + ", " + format_bound(high) + ")";
  };
}
/// [low, high], both included: e.g. a count with a hard limit.
inline SettingCheck between(double low, double high) {
  return [low, high](const nlohmann::json& v) {
    const double x = v.get<double>();
    return x >= low && x <= high ? std::string()
                                 : "must be from " + format_bound(low) + " to " + format_bound(high);
  };
}
inline SettingCheck one_of(std::vector<std::string> allowed) {
  return [allowed](const nlohmann::json& v) {
    const bool found = std::find(allowed.begin(), allowed.end(), v.get<std::string>()) != allowed.end();
    return found ? std::string() : "must be " + spelled_list(allowed);
  };
}
inline SettingCheck not_empty() {
  return [](const nlohmann::json& v) { return v.get<std::string>().empty() ? "must not be empty" : ""; };
}

template <class Config>
class SettingsTable {
 public:
  SettingsTable& add(Setting<Config> setting) {
    settings_.push_back(std::move(setting));
    return *this;
  }
  /// A check across settings: "" when fine, else the whole message.
  SettingsTable& add_check(std::function<std::string(const Config&)> check) {
    cross_checks_.push_back(std::move(check));
    return *this;
  }
  const std::vector<Setting<Config>>& settings() const { return settings_; }

  /// The setting whose key (or former key) is `key`; null if none.
  const Setting<Config>* find(const std::string& key) const {
    for (const auto& s : settings_) {
      if (s.key == key) return &s;
    }
    for (const auto& s : settings_) {
      for (const auto& old : s.old_keys) {
        if (old == key) return &s;
      }
    }
    return nullptr;
  }

  nlohmann::json to_json(const Config& c) const {
    auto j = nlohmann::json::object();
    for (const auto& s : settings_) j[s.key] = s.get(c);
    return j;
  }

  /// Sets on `c` the keys of `j` (a JSON object); a former key is read as its setting's,
  /// with a notice. Unknown keys (usually typos) and values of the wrong type throw.
  void read_json(const nlohmann::json& j, Config& c, std::vector<std::string>* notices = nullptr) const {
    if (!j.is_object()) throw SettingsError("expected a JSON object of settings");
    for (const auto& item : j.items()) {
      const auto* s = find(item.key());
      if (!s) throw SettingsError("unknown setting \"" + item.key() + "\"");
      if (s->key != item.key() && notices) {
        notices->push_back("setting \"" + item.key() + "\" is now \"" + s->key + "\"; read as such");
      }
      try {
        s->set(c, item.value());
      } catch (const nlohmann::json::exception& e) {
        throw SettingsError("setting \"" + item.key() + "\" has the wrong type: " + e.what());
      }
    }
  }

  /// Sets on `c` what the flag of setting `key` says with `text`.
  void set_from_text(Config& c, const std::string& key, const std::string& text) const {
    const auto* s = find(key);
    if (!s) throw SettingsError("unknown setting \"" + key + "\"");
    const auto values = s->parse(text);
    for (const auto& item : values.items()) {
      const auto* target = find(item.key());
      if (!target) throw SettingsError(s->name() + ": sets unknown setting \"" + item.key() + "\"");
      target->set(c, item.value());
    }
  }

  /// `defaults` < the keys of `file` (a JSON object) < `flags`: (setting key, text) in the
  /// order given, as a command line's flags give them. Does not validate.
  Config build(Config defaults, const nlohmann::json& file,
               const std::vector<std::pair<std::string, std::string>>& flags,
               std::vector<std::string>* notices = nullptr) const {
    read_json(file, defaults, notices);
    for (const auto& [key, text] : flags) set_from_text(defaults, key, text);
    return defaults;
  }

  /// Each setting's checks, then the checks across settings; throws SettingsError naming
  /// the flag and the value.
  void validate(const Config& c) const {
    for (const auto& s : settings_) {
      const auto value = s.get(c);
      for (const auto& check : s.checks) {
        const auto broken = check(value);
        if (!broken.empty()) throw SettingsError(s.name() + " " + broken + ", got " + value.dump());
      }
    }
    for (const auto& check : cross_checks_) {
      const auto message = check(c);
      if (!message.empty()) throw SettingsError(message);
    }
  }

  /// The settings a resumed run must keep (what it computes).
  nlohmann::json resume_invariant(const Config& c) const {
    return json_where(c, [](const Setting<Config>& s) { return !s.may_change_on_resume; });
  }
  /// The settings every process of a distributed run must share.
  nlohmann::json distributed_invariant(const Config& c) const {
    return json_where(c, [](const Setting<Config>& s) { return !s.may_differ_between_ranks; });
  }
  /// The settings of a resumed run: `saved`, with those that may change from `requested`.
  Config resumed(const Config& saved, const Config& requested) const {
    Config out = saved;
    for (const auto& s : settings_) {
      if (s.may_change_on_resume) s.set(out, s.get(requested));
    }
    return out;
  }

 private:
  template <class Pred>
  nlohmann::json json_where(const Config& c, Pred keep) const {
    auto j = nlohmann::json::object();
    for (const auto& s : settings_) {
      if (keep(s)) j[s.key] = s.get(c);
    }
    return j;
  }

  std::vector<Setting<Config>> settings_;
  std::vector<std::function<std::string(const Config&)>> cross_checks_;
};

}  // namespace retriever
}  // namespace gradcache
