// The option table on CLI11: each flag declared once, its value handed to every field bound
// to it.
#include "options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace gcbench {

namespace {

template <class T>
std::string join(const std::vector<T>& values) {
  std::ostringstream out;
  for (size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
  return out.str();
}

// What --help shows for a flag's value, as the old parser did.
std::string value_name(const std::type_index& type) {
  if (type == typeid(int64_t)) return "N";
  if (type == typeid(double)) return "X";
  if (type == typeid(std::vector<int64_t>)) return "N,N,..";
  if (type == typeid(std::vector<std::string>)) return "S,S,..";
  return "S";
}

bool is_list(const std::type_index& type) {
  return type == typeid(std::vector<int64_t>) || type == typeid(std::vector<std::string>);
}

}  // namespace

std::string option_text(int64_t value) { return std::to_string(value); }

std::string option_text(double value) {
  // The shortest text that reads back as the same double (0.1, not 0.10000000000000001):
  // child processes get exactly this value.
  char buf[32];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

std::string option_text(const std::string& value) { return value; }
std::string option_text(const std::vector<int64_t>& values) { return join(values); }
std::string option_text(const std::vector<std::string>& values) { return join(values); }

template <class T>
OptionTable& OptionTable::add(const std::string& flag, T* field, const std::string& help) {
  Row row{flag, help, std::type_index(typeid(T)), field, [field] { return option_text(*field); }, nullptr};
  row.declare = [](CLI::App& app, const std::vector<const Row*>& same) {
    std::vector<T*> fields;
    for (const Row* r : same) fields.push_back(static_cast<T*>(r->field));
    auto set_all = [fields](const T& value) {
      for (T* f : fields) *f = value;
    };
    return app.add_option_function<T>(same.front()->flag, set_all, same.front()->help);
  };
  return add_row(std::move(row));
}

template OptionTable& OptionTable::add(const std::string&, int64_t*, const std::string&);
template OptionTable& OptionTable::add(const std::string&, double*, const std::string&);
template OptionTable& OptionTable::add(const std::string&, std::string*, const std::string&);
template OptionTable& OptionTable::add(const std::string&, std::vector<int64_t>*, const std::string&);
template OptionTable& OptionTable::add(const std::string&, std::vector<std::string>*, const std::string&);

OptionTable& OptionTable::add_switch(const std::string& flag, bool* field, const std::string& help) {
  Row row{flag, help, std::type_index(typeid(bool)), field, [] { return std::string(); }, nullptr};
  row.declare = [](CLI::App& app, const std::vector<const Row*>& same) {
    std::vector<bool*> fields;
    for (const Row* r : same) fields.push_back(static_cast<bool*>(r->field));
    auto set_all = [fields](int64_t count) {
      for (bool* f : fields) *f = count > 0;
    };
    return app.add_flag_function(same.front()->flag, set_all, same.front()->help);
  };
  return add_row(std::move(row));
}

OptionTable& OptionTable::add_row(Row row) {
  for (const Row& r : rows_) {
    // One flag, one type: a value is parsed once and copied into every field.
    if (r.flag == row.flag && r.type != row.type) {
      throw std::logic_error("option " + row.flag + " is bound to fields of different types");
    }
  }
  rows_.push_back(std::move(row));
  return *this;
}

OptionTable& OptionTable::append(const OptionTable& other) {
  for (const Row& r : other.rows_) add_row(r);
  return *this;
}

void OptionTable::declare(CLI::App& app) const {
  std::vector<std::string> declared;
  for (const Row& first : rows_) {
    if (std::find(declared.begin(), declared.end(), first.flag) != declared.end()) continue;
    declared.push_back(first.flag);
    std::vector<const Row*> same;
    for (const Row& r : rows_) {
      if (r.flag == first.flag) same.push_back(&r);
    }
    CLI::Option* option = first.declare(app, same);
    if (first.type == typeid(bool)) continue;
    option->type_name(value_name(first.type))->default_str(first.show());
    if (is_list(first.type)) {
      option->delimiter(',');  // "--batches 64,256"
    } else {
      option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one given wins
    }
  }
}

std::vector<std::string> OptionTable::to_args() const {
  std::vector<std::string> args, seen;
  for (const Row& r : rows_) {
    if (r.type == typeid(bool) || std::find(seen.begin(), seen.end(), r.flag) != seen.end()) continue;
    seen.push_back(r.flag);
    args.push_back(r.flag);
    args.push_back(r.show());
  }
  return args;
}

}  // namespace gcbench
