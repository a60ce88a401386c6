// A Sequence of post-processors, as `tokenizers` (processors/sequence.rs) runs it: each in turn
// on the ids the one before gave (Llama-3 and Qwen: ByteLevel, then a TemplateProcessing that
// adds the special tokens); the special tokens added are the sum of theirs.
#include <algorithm>

#include "hf/components.h"
#include "hf/json_fields.h"

namespace gradcache::hf::detail {
namespace {

class PostProcessorSequence final : public PostProcessor {
 public:
  explicit PostProcessorSequence(std::vector<std::unique_ptr<PostProcessor>> processors)
      : processors_(std::move(processors)) {}

  std::vector<int64_t> process(const std::vector<int64_t>& ids) const override {
    std::vector<int64_t> out = ids;
    for (const auto& processor : processors_) out = processor->process(out);
    return out;
  }

  size_t added_tokens() const override {
    size_t added = 0;
    for (const auto& processor : processors_) added += processor->added_tokens();
    return added;
  }

  // The outermost special tokens: the last processor that adds one on that side.
  int64_t before_id() const override {
    for (auto it = processors_.rbegin(); it != processors_.rend(); ++it)
      if ((*it)->before_id() >= 0) return (*it)->before_id();
    return -1;
  }
  int64_t after_id() const override {
    for (auto it = processors_.rbegin(); it != processors_.rend(); ++it)
      if ((*it)->after_id() >= 0) return (*it)->after_id();
    return -1;
  }

  int64_t max_id() const override {
    int64_t id = -1;
    for (const auto& processor : processors_) id = std::max(id, processor->max_id());
    return id;
  }

  OrderedJson to_json() const override {
    OrderedJson list = OrderedJson::array();
    for (const auto& processor : processors_) list.push_back(processor->to_json());
    return OrderedJson{{"type", "Sequence"}, {"processors", std::move(list)}};
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> processors_;
};

}  // namespace

std::unique_ptr<PostProcessor> post_processor_sequence_from_json(const Json& config, const Source& source) {
  return std::make_unique<PostProcessorSequence>(make_post_processors(config, "processors", source));
}

}  // namespace gradcache::hf::detail
