#!/usr/bin/env bash
# The training speed of two builds of the program side by side: the main job's settings (batch
# 1024, chunks of 64, cache) for a few steps, runs alternating A B A B so that the shared
# machine's drifts hit both alike; each run's training time as the program reports it.
#
#   bash bench/train_speed_ab.sh OLD_PROGRAM NEW_PROGRAM [ROUNDS] > docs/NAME.log
#   (STEPS=24 by default)
set -euo pipefail
a=$1 b=$2 rounds=${3:-2} steps=${STEPS:-24}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "# $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1 /proc/loadavg); A = $a, B = $b; $steps steps each"
for round in $(seq "$rounds"); do
  for which in A B; do
    program=$a
    [ "$which" = B ] && program=$b
    "$program" train --output "$dir/$which$round" --steps "$steps" --eval false >"$dir/$which$round.log" 2>&1
    # "16 steps of 1024 pairs (mode cache, chunks of 64) in 33 s; peak memory ..."
    awk -v w="$which" -v r="$round" '/ steps of [0-9]+ pairs .* in [0-9.]+ s/ {
      for (i = 1; i <= NF; i++) { if ($i == "in") t = $(i + 1); if ($i == "steps") n = $(i - 1); if ($i == "pairs") p = $(i - 1) }
      printf "%s round %s: %s steps x %s pairs in %s s: %.0f pairs/s\n", w, r, n, p, t, n * p / t }' "$dir/$which$round.log"
  done
done
