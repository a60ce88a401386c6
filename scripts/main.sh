#!/usr/bin/env bash
# README command 1: set up, build, and run the main job: train the default retriever on the
# built-in WordNet data (defaults: a 1-layer, 64-wide encoder, 4 epochs, a contrastive batch of
# 1024 in chunks of 128, --mode cache; chosen by bench/main_defaults.sh),
# then evaluate it on the test split next to the untrained model. Extra arguments go to
# `gradcache train` (e.g. --quick for a run of seconds). Every core is used: --nproc auto (one
# rank per core; docs/figures/main_nproc.log: 201 s wall against 292 s with 1 process) unless the
# arguments give --nproc.
set -euo pipefail
cd "$(dirname "$0")/.."
# The program alone: the tests, benchmarks and examples (most of a cold build) are built by
# the test command (scripts/test.sh), not before the job.
TARGETS=gradcache_cli bash scripts/build.sh
nproc_flag=(--nproc auto)
for arg in "$@"; do
  case "$arg" in --nproc | --nproc=*) nproc_flag=() ;; esac
done
exec build/tools/gradcache train \
  --output "runs/wordnet-$(date +%Y%m%d-%H%M%S)" "${nproc_flag[@]}" "$@"
