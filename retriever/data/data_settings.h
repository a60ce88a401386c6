// Where a training run's pairs and evaluation data come from (--train-file, --wordnet-dir,
// --columns, --mix, --eval-*, --on-bad-line; declared in train_settings(), config/train_config.cpp).
#pragma once

#include "retriever/data/text_data.h"

#include <string>

namespace gradcache::retriever {

/// Where the training pairs and the evaluation data come from.
struct DataSettings {
  std::string train_file;  ///< JSONL (Tevatron layout), TSV, Parquet or Arrow data (arrow_data.h), several
                           ///< comma-separated (training_files()); "" = WordNet
  std::string mix = "proportional";  ///< several data sets: proportional, round-robin or weights (dataset_mix.h)
  std::string columns;     ///< Parquet/Arrow: the query, positive and negative columns, comma-separated; "" = by name
  std::string wordnet_dir = "/usr/share/wordnet";
  std::string eval_corpus, eval_queries, eval_qrels;  ///< evaluation data for user training data
  OnBadLine on_bad_line = OnBadLine::Error;
};

}  // namespace gradcache::retriever
