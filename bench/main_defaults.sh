#!/usr/bin/env bash
# How the main job's defaults were chosen: candidate models trained on the built-in WordNet
# task with every core (--nproc 2), each into a fresh directory, evaluated on the test split.
# Appends one line per candidate (R@1, R@10, R@100, MRR@10, nDCG@10; steps; training time) to
# docs/figures/main_defaults.log. About 15 minutes on an idle 2-core machine (the times in the log are
# only comparable between runs made under the same load).
#
#   bash bench/main_defaults.sh [NAME...]     # default: every candidate below
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${GRADCACHE:-build/tools/gradcache}"
[ -x "$bin" ] || { echo "main_defaults.sh: no gradcache binary at '$bin'; run bash scripts/build.sh" >&2; exit 1; }
declare -A candidates=(
  # 32 wide, 1 layer (docs/paper_table.md's model), 6 epochs
  [d32_l1_e6]="--dim 32 --layers 1 --heads 2 --ffn-dim 64 --batch-size 1024 --chunk-size 128 --lr 3e-3 --epochs 6"
  # 64 wide, 1 layer, 4 epochs: the defaults since issue 16
  [d64_l1_e4]="--dim 64 --layers 1 --heads 4 --ffn-dim 128 --batch-size 1024 --chunk-size 128 --lr 3e-3 --epochs 4"
)
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(d32_l1_e6 d64_l1_e4)
out=$(mktemp -d /tmp/main_defaults.XXXXXX)
for name in "${names[@]}"; do
  flags=${candidates[$name]:?"unknown candidate $name"}
  start=$(date +%s)
  # shellcheck disable=SC2086
  "$bin" train --output "$out/$name" --nproc 2 --eval-baseline false --eval-bm25 false $flags >"$out/$name.log" 2>&1
  echo "$(date -u +%Y-%m-%dT%H:%MZ) load $(cut -d' ' -f1 /proc/loadavg) $name ($flags): wall $(( $(date +%s) - start )) s;" \
    "$(grep -E '^trained ' "$out/$name.log");" "$(grep -E 'steps of .* in ' "$out/$name.log")" | tee -a docs/figures/main_defaults.log
done
rm -rf "$out"
