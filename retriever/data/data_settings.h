// Where a training run's pairs and evaluation data come from (--train-file, --wordnet-dir,
// --eval-*, --on-bad-line; declared in train_settings(), config/train_config.cpp).
#pragma once

#include "retriever/data/text_data.h"

#include <string>

namespace gradcache::retriever {

/// Where the training pairs and the evaluation data come from.
struct DataSettings {
  std::string train_file;  ///< JSONL (Tevatron layout) or TSV; "" = WordNet
  std::string wordnet_dir = "/usr/share/wordnet";
  std::string eval_corpus, eval_queries, eval_qrels;  ///< evaluation data for user training data
  OnBadLine on_bad_line = OnBadLine::Error;
};

}  // namespace gradcache::retriever
