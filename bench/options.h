// The benchmarks' command-line options: one table per settings struct, each row a flag bound
// to a field (flag, field, help; the field's value is the default shown), parsed by CLI11 as
// the `gradcache` program's flags are.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace gcbench {

/// Rows of flags bound to fields. Several rows may share a flag (same field type): one value
/// then sets all of them, so that `all --batch 256` reaches every scenario with a batch, and
/// the exactness scenario's two models both read --dim.
class OptionTable {
 public:
  /// A flag taking a value: int64_t, double, std::string, or a comma-separated list of
  /// int64_t or std::string (instantiated for these in options.cpp).
  template <class T>
  OptionTable& add(const std::string& flag, T* field, const std::string& help);
  /// A flag without a value: sets `field` to true.
  OptionTable& add_switch(const std::string& flag, bool* field, const std::string& help);
  OptionTable& append(const OptionTable& other);

  /// Declares each flag once on `app` (its default: the current value of its first field).
  void declare(CLI::App& app) const;
  /// "--flag value" for every flag that takes a value: these settings, for a child process.
  std::vector<std::string> to_args() const;

 private:
  struct Row {
    std::string flag, help;
    std::type_index type;
    void* field;
    std::function<std::string()> show;  ///< the field's value as a flag value
    /// Declares the flag on an app, bound to the fields of all rows that share it.
    std::function<CLI::Option*(CLI::App&, const std::vector<const Row*>&)> declare;
  };
  OptionTable& add_row(Row row);
  std::vector<Row> rows_;
};

/// A value as text that parses back to the same value (doubles: the shortest such text).
std::string option_text(int64_t value);
std::string option_text(double value);
std::string option_text(const std::string& value);
std::string option_text(const std::vector<int64_t>& values);
std::string option_text(const std::vector<std::string>& values);

/// The command line of a child process that reads `settings` back: `command` (a hidden
/// subcommand), then every flag of `settings`' table with its value. Settings is any struct
/// with add_options(OptionTable&); it is taken by value because the table binds its fields.
template <class Settings>
std::vector<std::string> child_command_line(const std::string& command, Settings settings) {
  OptionTable table;
  settings.add_options(table);
  std::vector<std::string> args{command};
  for (auto& flag : table.to_args()) args.push_back(std::move(flag));
  return args;
}

}  // namespace gcbench
