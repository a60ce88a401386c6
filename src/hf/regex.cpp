// PLACEHOLDER: replaced by its implementation in this change.
#include "hf/regex.h"
namespace gradcache::hf::detail {
struct Regex::Compiled {};
Regex::Regex(const std::string& pattern, const Source& source) : pattern_(pattern), source_(source) { fail(source, "regex: not built yet"); }
Regex::~Regex() = default;
void Regex::find_all(std::u32string_view, std::vector<Match>&) const {}
std::string escape_regex(std::string_view literal) { return std::string(literal); }
}  // namespace gradcache::hf::detail
