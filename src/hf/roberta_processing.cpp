// PLACEHOLDER: replaced by its implementation in this change.
#include "hf/components.h"
namespace gradcache::hf::detail {
std::unique_ptr<PostProcessor> roberta_processing_from_json(const Json&, const Source& source) { fail(source, "roberta_processing_from_json: not built yet"); }
}  // namespace gradcache::hf::detail
