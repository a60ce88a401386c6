// "--name value" flags for the examples (the CLI in tools/ has a real parser).
#pragma once

#include <iostream>
#include <string>

inline long long flag(int argc, char** argv, const std::string& name, long long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] != "--" + name) continue;
    try {
      size_t used = 0;
      const long long value = std::stoll(argv[i + 1], &used);
      if (used == std::string(argv[i + 1]).size() && value > 0) return value;
    } catch (const std::exception&) {
    }
    std::cerr << "--" << name << " takes a positive integer, got '" << argv[i + 1] << "'\n";
    std::exit(2);
  }
  return fallback;
}
