// The tokenizer's and the encoder's rows of train's settings table (--tokenizer, --vocab-size,
// --model-dir, --model, --dim, ..., the prompts, --train-params, --freeze-embeddings).
#pragma once

#include "retriever/config/settings_table.h"
#include "retriever/config/train_config.h"

namespace gradcache {
namespace retriever {

void add_model_settings(SettingsTable<TrainConfig>& t);

}  // namespace retriever
}  // namespace gradcache
