// The settings that say which pretrained model a command reads (--model-dir, the prompt flags,
// --query-max-len, --passage-max-len), declared once for eval, encode and mine: any settings
// struct with a member `PretrainedSource pretrained` (run/saved_encoder.h).
#pragma once

#include "retriever/config/settings_table.h"
#include "retriever/run/saved_encoder.h"

namespace gradcache::retriever {

template <class Config>
void add_pretrained_source_settings(SettingsTable<Config>& t) {
  using P = PretrainedSource;
  auto setting = [](const char* key, auto P::*member, const char* flag, const char* help) {
    return nested_field(key, &Config::pretrained, member, flag, help).in_group("Pretrained model");
  };
  t.add(setting("model_dir", &P::dir, "--model-dir",
                "A Hugging Face / sentence-transformers model directory to use as it is (zero-shot)")
            .hint("DIR"));
  t.add(setting("adapter", &P::adapter, "--adapter",
                "With --model-dir: a PEFT LoRA adapter directory (adapter_config.json, adapter_model.safetensors) "
                "to apply to the model")
            .hint("DIR"));
  t.add(setting("query_prompt", &P::query_prompt, "--query-prompt",
                "With --model-dir: text put before each query (default: the model's prompt named \"query\")"));
  t.add(setting("passage_prompt", &P::passage_prompt, "--passage-prompt",
                "With --model-dir: text put before each passage (default: the model's \"document\" prompt)"));
  t.add(setting("model_prompts", &P::model_prompts, "--model-prompts",
                "With --model-dir: use the model's own prompts when none is given (false: none)"));
  t.add(setting("specb", &P::specb, "--specb",
                "With --model-dir: SGPT's bracket markers, each query's tokens between \"[\" and \"]\" and each "
                "passage's between \"{\" and \"}\" (as the model was trained with them)")
            .as_switch());
  t.add(setting("query_max_len", &P::query_max_len, "--query-max-len",
                "With --model-dir: query tokens kept (0: the model's max_seq_length)")
            .checked(at_least(0)));
  t.add(setting("passage_max_len", &P::passage_max_len, "--passage-max-len",
                "With --model-dir: passage tokens kept (0: the model's max_seq_length)")
            .checked(at_least(0)));
  t.add_check([](const Config& c) {
    const P& p = c.pretrained;
    const bool tuned = !p.adapter.empty() || !p.query_prompt.empty() || !p.passage_prompt.empty() || !p.model_prompts || p.specb ||
                       p.query_max_len > 0 || p.passage_max_len > 0;
    return tuned && p.dir.empty() ? "--adapter, --query-prompt, --passage-prompt, --model-prompts, --specb, --query-max-len and "
                                    "--passage-max-len go with --model-dir (a run keeps its own)"
                                  : "";
  });
}

}  // namespace gradcache::retriever
