// The items of a comma-separated flag value ("64,32,16", "q_proj,v_proj"), empty ones kept
// ("a,,b" and "a," hold an empty item) so that each caller can name what is missing.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace gradcache {
namespace retriever {

inline std::vector<std::string> comma_items(const std::string& text) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) items.push_back(item);
  if (text.back() == ',') items.emplace_back();
  return items;
}

}  // namespace retriever
}  // namespace gradcache
