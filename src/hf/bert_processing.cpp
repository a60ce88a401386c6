// BertProcessing and RobertaProcessing, as `tokenizers` (processors/{bert,roberta}.rs) run them
// for one sequence: cls A sep ([CLS] A [SEP]; <s> A </s>), the tokens and ids given as
// ["[CLS]", 101] pairs. RoBERTa's differ only in offsets (trim_offsets, add_prefix_space) and in a
// pair's middle separators, neither of which changes the ids of one text.
#include <algorithm>

#include "hf/components.h"
#include "hf/json_fields.h"

namespace gradcache::hf::detail {
namespace {

struct NamedId {
  std::string token;
  int64_t id;
};

NamedId read_named_id(const Json& config, const char* key, const Source& source) {
  const Json& value = require_field(config, key, source);
  const Source where = source.at(key);
  if (!value.is_array() || value.size() != 2 || !value[0].is_string())
    fail(where, "expected [token, id], as [\"[CLS]\", 101], found " + describe_json(value));
  return {value[0].get<std::string>(), static_cast<int64_t>(as_count(value[1], where.at("1"), UINT32_MAX))};
}

/// RobertaProcessing's offset options (absent for BertProcessing).
struct RobertaOptions {
  bool trim_offsets = true;
  bool add_prefix_space = true;
};

class ClsSepProcessing final : public PostProcessor {
 public:
  ClsSepProcessing(NamedId cls, NamedId sep, std::optional<RobertaOptions> roberta)
      : cls_(std::move(cls)), sep_(std::move(sep)), roberta_(roberta) {}

  std::vector<int64_t> process(const std::vector<int64_t>& ids) const override {
    std::vector<int64_t> out;
    out.reserve(ids.size() + 2);
    out.push_back(cls_.id);
    out.insert(out.end(), ids.begin(), ids.end());
    out.push_back(sep_.id);
    return out;
  }

  size_t added_tokens() const override { return 2; }
  int64_t before_id() const override { return cls_.id; }
  int64_t after_id() const override { return sep_.id; }
  int64_t max_id() const override { return std::max(cls_.id, sep_.id); }

  OrderedJson to_json() const override {
    OrderedJson j{{"type", roberta_ ? "RobertaProcessing" : "BertProcessing"},
                  {"sep", OrderedJson::array({sep_.token, sep_.id})},
                  {"cls", OrderedJson::array({cls_.token, cls_.id})}};
    if (roberta_) {
      j["trim_offsets"] = roberta_->trim_offsets;
      j["add_prefix_space"] = roberta_->add_prefix_space;
    }
    return j;
  }

 private:
  NamedId cls_;
  NamedId sep_;
  std::optional<RobertaOptions> roberta_;
};

}  // namespace

std::unique_ptr<PostProcessor> bert_processing_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  NamedId sep = read_named_id(config, "sep", source);
  NamedId cls = read_named_id(config, "cls", source);
  return std::make_unique<ClsSepProcessing>(std::move(cls), std::move(sep), std::nullopt);
}

std::unique_ptr<PostProcessor> roberta_processing_from_json(const Json& config, const Source& source) {
  expect_object(config, source);
  NamedId sep = read_named_id(config, "sep", source);
  NamedId cls = read_named_id(config, "cls", source);
  RobertaOptions options;
  options.trim_offsets = read_bool(config, "trim_offsets", source, true);
  options.add_prefix_space = read_bool(config, "add_prefix_space", source, true);
  return std::make_unique<ClsSepProcessing>(std::move(cls), std::move(sep), options);
}

}  // namespace gradcache::hf::detail
