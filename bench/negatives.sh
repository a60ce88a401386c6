#!/usr/bin/env bash
# Hard negatives on the default WordNet task (issue 14): the same model and the same budget of
# steps, three ways, for seeds 1, 2, 3; then the BM25 baseline on the same test split.
#
#   bash bench/negatives.sh [--out DIR] [--quick] [--docs DIR] [--seeds "1 2 3"]
#
#   in-batch   train on WordNet's train split: every other query's positive is a negative
#   +bm25      + 1 hard negative per query mined with BM25 (gradcache mine --bm25)
#   +dense     + 1 hard negative per query mined with the in-batch run of the same seed (one round)
# Negatives are drawn from ranks 10:100 (mine's default), positives dropped by id and text; a
# query with no candidate there (BM25 finds fewer than 10 documents for some) gets a random one
# (--on-short random).
# Every run: the same tokenizer (trained once, first), model, batch, learning rate and number of
# optimizer steps; evaluated afterwards with `gradcache eval` on the test split (5,977
# definitions against all 102,859 passages). Writes docs/figures/negatives.json and the table in
# docs/negatives.md (between its markers; the text around it is kept). Runs already finished
# under --out are reused, so an interrupted run of the script can be continued with --out.
# --quick: a smoke test of the script (tiny model, few steps, a subset), docs in a temporary
# directory. The binary: $GRADCACHE, default build/tools/gradcache (this script builds nothing).
set -euo pipefail
cd "$(dirname "$0")/.."

out="" quick=0 docs=docs seeds_arg=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --quick) quick=1; shift ;;
    --docs) docs="${2:?--docs needs a directory}"; shift 2 ;;
    --seeds) seeds_arg="${2:?--seeds needs a list such as \"1 2 3\"}"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "negatives.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bin="${GRADCACHE:-build/tools/gradcache}"
[ -x "$bin" ] || { echo "negatives.sh: no gradcache binary at '$bin'; build it (bash scripts/build.sh)" >&2; exit 1; }

MODEL=(--dim 32 --layers 1 --heads 2 --ffn-dim 64 --vocab-size 4000)
BUDGET=(--batch-size 512 --chunk-size 128 --steps 400)
SEEDS=(1 2 3)
MINE_LIMIT=()
if [ "$quick" = 1 ]; then
  MODEL=(--dim 16 --layers 1 --heads 2 --ffn-dim 32 --vocab-size 2000)
  BUDGET=(--batch-size 64 --chunk-size 64 --steps 4)
  SEEDS=(1)
  tmp="$(mktemp -d /tmp/negatives.XXXXXX)"
  out="${out:-$tmp/runs}"
  docs="$tmp/docs"
fi
[ -n "$seeds_arg" ] && read -r -a SEEDS <<<"$seeds_arg"
out="${out:-runs/negatives-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out" "$docs"
common=(--threads 1 --blas-threads 1 --eval false --log-every 50 --overwrite)
eval_flags=(--threads 1 --json)
[ "$quick" = 1 ] && eval_flags+=(--quick)
study=negatives
source bench/study_steps.sh

step tokenizer "$out/tokenizer/tokenizer.model" \
  "$bin" train "${MODEL[@]}" "${common[@]}" --steps 1 --output "$out/tokenizer"
tok="$out/tokenizer/tokenizer.model"
train() { "$bin" train "${MODEL[@]}" "${BUDGET[@]}" "${common[@]}" --tokenizer "$tok" "$@"; }
evaluate() { "$bin" eval --checkpoint "$1" "${eval_flags[@]}" "${@:2}" >"$1/test.json"; }

for seed in "${SEEDS[@]}"; do
  base="$out/in-batch-seed$seed"
  step "in-batch-seed$seed" "$base/checkpoint.pt" train --seed "$seed" --output "$base"
  step "eval-in-batch-seed$seed" "$base/test.json" evaluate "$base"
  for source in bm25 dense; do
    mined="$out/mined-$source-seed$seed.jsonl"
    if [ "$source" = dense ]; then how=(--run "$base"); else how=(--bm25); fi
    [ "$quick" = 1 ] && how+=(--limit 256)
    step "mine-$source-seed$seed" "$mined" "$bin" mine "${how[@]}" --negatives 1 --on-short random --seed "$seed" --threads 1 \
      --output "$mined" --overwrite
    run="$out/$source-seed$seed"
    step "$source-seed$seed" "$run/checkpoint.pt" train --seed "$seed" --train-file "$mined" --negatives 1 \
      --output "$run"
    step "eval-$source-seed$seed" "$run/test.json" evaluate "$run" --eval-bm25 false
  done
done

python3 bench/negatives.py --runs "$out" --docs "$docs" --seeds "${SEEDS[@]}" \
  --command "bash bench/negatives.sh$([ "$quick" = 1 ] && echo " --quick")"
echo "negatives: done; $docs/negatives.md"
