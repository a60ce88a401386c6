#!/usr/bin/env bash
# README command 1: set up, build, and run the main job: train the default retriever on the
# built-in WordNet data (defaults: a contrastive batch of 1024 in chunks of 64, --mode cache),
# then evaluate it on the test split next to the untrained model. Extra arguments go to
# `gradcache train` (e.g. --quick for a run of seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/tools/gradcache train \
  --output "runs/wordnet-$(date +%Y%m%d-%H%M%S)" "$@"
