// PLACEHOLDER: replaced by its implementation in this change.
#include "hf/components.h"
namespace gradcache::hf::detail {
std::unique_ptr<PreTokenizer> split_from_json(const Json&, const Source& source) { fail(source, "split_from_json: not built yet"); }
std::unique_ptr<PreTokenizer> whitespace_from_json(const Json&, const Source& source) { fail(source, "whitespace_from_json: not built yet"); }
std::unique_ptr<PreTokenizer> whitespace_split_from_json(const Json&, const Source& source) { fail(source, "whitespace_split_from_json: not built yet"); }
std::unique_ptr<PreTokenizer> punctuation_from_json(const Json&, const Source& source) { fail(source, "punctuation_from_json: not built yet"); }
std::unique_ptr<PreTokenizer> digits_from_json(const Json&, const Source& source) { fail(source, "digits_from_json: not built yet"); }
std::unique_ptr<PreTokenizer> pre_tokenizer_sequence_from_json(const Json&, const Source& source) { fail(source, "pre_tokenizer_sequence_from_json: not built yet"); }
}  // namespace gradcache::hf::detail
