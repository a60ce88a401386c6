// The command-line flags of a settings table (retriever/config/settings_table.h) on a CLI11 command. The
// flags only collect text; the command's action builds the settings from it (defaults <
// config file < flags given), so a bad value is reported there, naming its flag.
#pragma once

#include "retriever/config/settings_table.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gradcache {
namespace cli {

/// What the flags of a table received.
struct GivenFlags {
  std::vector<std::pair<std::string, std::string>> values;  ///< (setting key, text), in order given
  std::vector<std::string> notices;                         ///< former flags used, one line each
};

/// Adds a flag for every setting of `table` that has one (and its former flags, hidden), in
/// help sections by group, with the default from `defaults`.
template <class Config>
std::shared_ptr<GivenFlags> add_setting_flags(CLI::App& command, const retriever::SettingsTable<Config>& table,
                                              const Config& defaults) {
  auto given = std::make_shared<GivenFlags>();
  std::map<std::string, CLI::Option_group*> groups;
  auto group_of = [&](const std::string& name) -> CLI::Option_group* {
    auto& group = groups[name];
    if (!group) group = command.add_option_group(name.empty() ? "Settings" : name);
    return group;
  };
  for (const auto& s : table.settings()) {
    if (s.flag.empty()) continue;
    const std::string key = s.key;
    CLI::Option_group* group = group_of(s.group);
    if (s.is_switch) {
      group->add_flag_callback(s.flag, [given, key] { given->values.emplace_back(key, "true"); }, s.help);
      continue;
    }
    const nlohmann::json value = s.get(defaults);
    group
        ->add_option_function<std::string>(
            s.flag, [given, key](const std::string& text) { given->values.emplace_back(key, text); }, s.help)
        ->type_name(s.value_hint)
        ->default_str(value.is_string() ? value.get<std::string>() : value.dump())
        ->required(s.is_required);
    for (const auto& old : s.old_flags) {
      const std::string notice = old + " is now " + s.flag;
      command
          .add_option_function<std::string>(
              old,
              [given, key, notice](const std::string& text) {
                given->values.emplace_back(key, text);
                given->notices.push_back(notice);
              },
              "Former name of " + s.flag)
          ->group("");  // hidden from --help
    }
  }
  return given;
}

/// The settings the flags of `table` received (defaults < flags). Flag text that is no value of
/// its type is a usage error: printed as "gradcache COMMAND: error: ..." and nullopt returned
/// (the command exits 2, as for the parser's errors). Values are checked afterwards, by the
/// library call that uses them (status 1, with the flag named).
template <class Config>
std::optional<Config> settings_from_flags(const retriever::SettingsTable<Config>& table, const GivenFlags& given,
                                          const std::string& command) {
  try {
    return table.build(Config{}, nlohmann::json::object(), given.values);
  } catch (const retriever::SettingsError& e) {
    std::cerr << "gradcache " << command << ": error: " << e.what() << std::endl;
    return std::nullopt;
  }
}

}  // namespace cli
}  // namespace gradcache
