// An output file must not be one of the command's inputs: writing it would replace what the
// command reads (`mine --output pairs.jsonl --train-file pairs.jsonl --overwrite`, `train
// --metrics-out pairs.jsonl`). Compared by inode, so "./x", "../d/x" and symbolic links are the
// same file; refused even with --overwrite, which is for replacing earlier outputs.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gradcache {
namespace retriever {

/// Throws std::invalid_argument when `output` (given by `output_flag`) is the same file as one
/// of `inputs` (flag, path; empty paths are skipped), naming both.
inline void refuse_output_that_is_an_input(const std::string& output_flag, const std::string& output,
                                           const std::vector<std::pair<std::string, std::string>>& inputs) {
  for (const auto& [flag, input] : inputs) {
    std::error_code not_same;  // either missing: not the same file
    if (!input.empty() && std::filesystem::equivalent(output, input, not_same)) {
      throw std::invalid_argument(output_flag + " " + output + " is the command's " + flag + " " + input +
                                  "; writing it would replace what is read: choose another file");
    }
  }
}

}  // namespace retriever
}  // namespace gradcache
