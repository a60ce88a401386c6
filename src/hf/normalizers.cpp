// PLACEHOLDER: replaced by its implementation in this change.
#include "hf/components.h"
namespace gradcache::hf::detail {
std::unique_ptr<Normalizer> unicode_normalizer_from_json(const Json&, const Source& source) { fail(source, "unicode_normalizer_from_json: not built yet"); }
std::unique_ptr<Normalizer> lowercase_from_json(const Json&, const Source& source) { fail(source, "lowercase_from_json: not built yet"); }
std::unique_ptr<Normalizer> strip_from_json(const Json&, const Source& source) { fail(source, "strip_from_json: not built yet"); }
std::unique_ptr<Normalizer> strip_accents_from_json(const Json&, const Source& source) { fail(source, "strip_accents_from_json: not built yet"); }
std::unique_ptr<Normalizer> replace_from_json(const Json&, const Source& source) { fail(source, "replace_from_json: not built yet"); }
std::unique_ptr<Normalizer> prepend_from_json(const Json&, const Source& source) { fail(source, "prepend_from_json: not built yet"); }
std::unique_ptr<Normalizer> normalizer_sequence_from_json(const Json&, const Source& source) { fail(source, "normalizer_sequence_from_json: not built yet"); }
}  // namespace gradcache::hf::detail
