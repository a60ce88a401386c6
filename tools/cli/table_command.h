// The action of a subcommand whose flags are a settings table's (eval, encode, mine, export),
// written once: parse the flags, make the control, run the command's body, and turn a stop by a
// signal into its message and exit status 128 + the signal (130 for SIGINT, 143 for SIGTERM).
#pragma once

#include "commands.h"
#include "setting_flags.h"

#include "retriever/commands/command_control.h"
#include "retriever/launch/stop_signal.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <iostream>
#include <string>

namespace gradcache {
namespace cli {

/// Adds the flags of `table` to `command` and returns its action: the settings from the flags
/// (a usage error: exit 2), a Control whose log writes "gradcache NAME: LINE" on stderr and
/// whose stop flag is the program's, then body(settings, control), its exit status. A stop by a
/// signal prints "gradcache NAME: stopped by SIGxxx" and when_stopped(settings) (what was left
/// undone), nothing on stdout, and exits 128 + the signal.
/// Body is any callable int(const Settings&, Control&); a template parameter rather than a
/// std::function so that a lambda binds without naming Control.
template <class Settings, class Control = retriever::CommandControl, class Body>
std::function<int()> table_command(CLI::App& command, const retriever::SettingsTable<Settings>& table,
                                   std::function<std::string(const Settings&)> when_stopped, Body body) {
  auto given = add_setting_flags(command, table, Settings{});
  const std::string name = command.get_name();
  return [given, name, &table, when_stopped, body]() -> int {
    const auto settings = settings_from_flags(table, *given, name);
    if (!settings) return 2;
    Control control;
    control.log = [name](const std::string& line) { std::cerr << "gradcache " << name << ": " << line << std::endl; };
    control.stop = &stop_signal;
    try {
      return body(*settings, control);
    } catch (const retriever::StoppedBySignal& stopped) {
      std::cerr << "gradcache " << name << ": stopped by " << retriever::signal_name(stopped.signal())
                << when_stopped(*settings) << std::endl;
      return 128 + stopped.signal();
    }
  };
}

}  // namespace cli
}  // namespace gradcache
