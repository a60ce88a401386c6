// The data a training run's settings name: WordNet or the user's files, its evaluation and dev data.
#pragma once

#include "retriever/config/train_config.h"
#include "retriever/data/task.h"

#include <string>

namespace gradcache::retriever {

/// Training examples and evaluation data a config names: WordNet (its train split, and its
/// test split ranked against the whole corpus) unless --train-file is given; then the
/// evaluation files if given. With --quick, a small deterministic subset.
/// `split` picks WordNet's evaluation split: "test" or "dev". With --eval-every, also the
/// dev data (TaskData::dev).
TaskData load_task(const TrainConfig& config, const std::string& split = "test");

}  // namespace gradcache::retriever
