// File names that directories written by this program (exports, embeddings) give for their
// parts: checked on reading, so that a lying export.json or manifest.json cannot send the
// reader to a file outside its directory ("../../x", "/etc/passwd").
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gradcache {
namespace retriever {

/// Whether `name` is a file name alone: not empty, no '/', no NUL, not "." or "..".
inline bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

/// `name` as a JSON string, for a message about a name that is not plain: a NUL or a control
/// character inside it is shown (\u0000) instead of cutting the message short.
inline std::string quoted_file_name(const std::string& name) {
  return nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace retriever
}  // namespace gradcache
