#!/usr/bin/env bash
# The paper's main table (Gao et al. 2021, Table 1) at small scale, on the default WordNet task:
# Sequential vs Accumulation vs Cache at equal memory (every forward pass is a chunk of 32).
#
#   bash bench/paper_table.sh [--out DIR] [--quick] [--docs DIR] [--seeds "1 2 3"] [--lr-scale F]
#                             [--max-epochs E] [--patience P] [--fixed-epochs N] [--jobs J]
#
# Budget (issue 16): every setting trains until its dev R@10 stops improving. Each run has at
# most E epochs (default 12; the learning-rate schedule spans all E), is evaluated on WordNet's
# dev split (6,001 definitions against all passages) once per epoch, keeps the best model as
# best.pt, and stops after P evaluations without improvement (default 3). The test split is
# then scored with best.pt (`gradcache eval --checkpoint RUN/best.pt`), written to
# RUN/best_test.json. --fixed-epochs N: the old budget instead, N epochs for every setting, no
# dev evaluation, the final model tested (the 4-epoch table of docs/paper_table.md:
# --fixed-epochs 4 --jobs 1). --jobs J: J runs at a time (default 2, one per core; each run
# uses one thread, so results do not depend on J, only times do).
#
# Full version: 81 min 13 s on this 2-core machine (12 runs, two at a time); writes
# docs/paper_table.md (the table between its markers; the text around it is kept),
# docs/figures/paper_table.json and docs/figures/paper_table.png, and each run's output under DIR
# (default runs/paper_table-DATE). --quick: a ~35 s smoke test (tiny model, a data subset,
# a few steps), everything, docs included, in a temporary directory. --docs DIR: write the
# table there instead of docs/; --seeds: other seeds; --lr-scale F: every setting's learning
# rate times F (a sensitivity check of the rule below; use it with --docs).
#
# What it runs, for seeds 1, 2, 3, with the same model, epoch cap, warm-up, temperature and
# tokenizer (trained once, first, on the training texts):
#   sequential   --mode full       --batch-size 32   --chunk-size 32   (no cache, batch 32)
#   accumulation --mode accumulate --batch-size 512  --sub-batch-size 32   (16 sub-batches of 32,
#                                                                       each sees only its own negatives)
#   cache-512    --mode cache      --batch-size 512  --chunk-size 32
#   cache-2048   --mode cache      --batch-size 2048 --chunk-size 32
# Learning rate: LR_512 (2e-3) at 512 examples per update, scaled with the square root of the
# examples per update: 5e-4 at 32, 4e-3 at 2048 (see docs/paper_table.md).
# The test split: 5,977 definitions against all 102,859 passages.
#
# The binary: $GRADCACHE, default build/tools/gradcache (this script builds nothing).
set -euo pipefail
cd "$(dirname "$0")/.."

out=""
quick=0
docs_arg=""
seeds_arg=""
lr_scale=1
max_epochs=12
patience=3
fixed_epochs=0
jobs=2
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --quick) quick=1; shift ;;
    --docs) docs_arg="${2:?--docs needs a directory}"; shift 2 ;;
    --seeds) seeds_arg="${2:?--seeds needs a list such as \"1 2 3\"}"; shift 2 ;;
    --lr-scale) lr_scale="${2:?--lr-scale needs a number}"; shift 2 ;;
    --max-epochs) max_epochs="${2:?--max-epochs needs a number}"; shift 2 ;;
    --patience) patience="${2:?--patience needs a number}"; shift 2 ;;
    --fixed-epochs) fixed_epochs="${2:?--fixed-epochs needs a number}"; shift 2 ;;
    --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "paper_table.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$max_epochs" "$patience" "$fixed_epochs" "$jobs"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "paper_table.sh: '$n' is not a whole number" >&2; exit 2; }
done
[ "$jobs" -ge 1 ] && [ "$max_epochs" -ge 1 ] || { echo "paper_table.sh: --jobs and --max-epochs must be at least 1" >&2; exit 2; }

bin="${GRADCACHE:-build/tools/gradcache}"
if [ ! -x "$bin" ]; then
  echo "paper_table.sh: no gradcache binary at '$bin'; build it (bash scripts/build.sh) or set GRADCACHE" >&2
  exit 1
fi

# The model, the same for every setting.
MODEL=(--dim 32 --layers 1 --heads 2 --ffn-dim 64 --vocab-size 4000)
QUICK=()
SEEDS=(1 2 3)
LR_512=2e-3
docs=docs
if [ "$quick" = 1 ]; then
  MODEL=(--dim 32 --layers 1 --heads 2 --ffn-dim 64)
  QUICK=(--quick)
  SEEDS=(1 2)
  tmp="$(mktemp -d /tmp/paper_table.XXXXXX)"
  out="${out:-$tmp/runs}"
  docs="$tmp/docs"
  mkdir -p "$docs"
fi
[ -n "$docs_arg" ] && docs="$docs_arg" && mkdir -p "$docs"
[ -n "$seeds_arg" ] && read -r -a SEEDS <<<"$seeds_arg"
out="${out:-runs/paper_table-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
common=(--threads 1 --blas-threads 1 --eval-baseline false --eval-bm25 false --log-every 10 --save-every 0 --overwrite)

# name mode batch chunk
settings=(
  "sequential full 32 32"
  "accumulation accumulate 512 32"
  "cache-512 cache 512 32"
  "cache-2048 cache 2048 32"
)
lr_for() { python3 -c "import math; print('%.3g' % ($lr_scale * $LR_512 * math.sqrt($1 / 512)))"; }

start=$(date +%s)
echo "paper_table: binary $bin, output $out, docs $docs"

# One tokenizer for every run: trained by a one-step run on the training texts.
tok_run="$out/tokenizer"
"$bin" train "${MODEL[@]}" "${QUICK[@]}" "${common[@]}" --steps 1 --eval false --output "$tok_run" >"$out/tokenizer.log" 2>&1 ||
  { echo "paper_table: training the tokenizer failed; see $out/tokenizer.log" >&2; exit 1; }
tokenizer="$tok_run/tokenizer.model"
# Training pairs, from the log's "training on N examples": the steps of an epoch at each batch.
pairs=$(sed -n 's/^training on \([0-9]*\) examples.*/\1/p' "$out/tokenizer.log" | head -1)
[ -n "$pairs" ] || { echo "paper_table: no 'training on N examples' line in $out/tokenizer.log" >&2; exit 1; }

# One run: train with the budget, then (with model selection) test best.pt.
run_one() {
  local name=$1 mode=$2 batch=$3 chunk=$4 seed=$5
  local lr dir per_epoch budget
  lr=$(lr_for "$batch")
  dir="$out/$name-seed$seed"
  per_epoch=$((pairs / batch))
  if [ "$quick" = 1 ]; then
    budget=(--steps $((2048 / batch)) --eval-every $(( (2048 / batch + 1) / 2 )) --patience "$patience")
  elif [ "$fixed_epochs" -gt 0 ]; then
    budget=(--epochs "$fixed_epochs")
  else
    budget=(--epochs "$max_epochs" --eval-every "$per_epoch" --patience "$patience")
  fi
  echo "paper_table: $(date +%H:%M:%S) start $name seed $seed (mode $mode, batch $batch, chunk $chunk, lr $lr)"
  "$bin" train "${MODEL[@]}" "${QUICK[@]}" "${common[@]}" "${budget[@]}" --tokenizer "$tokenizer" \
    --mode "$mode" --batch-size "$batch" --chunk-size "$chunk" --sub-batch-size "$chunk" --lr "$lr" --seed "$seed" \
    --output "$dir" >"$dir.log" 2>&1 || { echo "paper_table: $name seed $seed failed; see $dir.log" >&2; return 1; }
  if [ "$fixed_epochs" = 0 ] || [ "$quick" = 1 ]; then
    "$bin" eval --checkpoint "$dir/best.pt" "${QUICK[@]}" --threads 1 --eval-bm25 false --json \
      >"$dir/best_test.json" 2>>"$dir.log" ||
      { echo "paper_table: testing $dir/best.pt failed; see $dir.log" >&2; return 1; }
  fi
  echo "paper_table: $(date +%H:%M:%S) done $name seed $seed: $(grep -E "^best dev|^[0-9]+ steps of" "$dir.log" | tr '\n' ' ')"
}

# Up to $jobs runs at a time; the first failure stops the table.
failed=0
for seed in "${SEEDS[@]}"; do
  for s in "${settings[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || failed=1; done
    [ "$failed" = 0 ] || break 2
    # shellcheck disable=SC2086
    run_one $s "$seed" &
  done
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
[ "$failed" = 0 ] || { echo "paper_table: a run failed; no table written" >&2; exit 1; }
total=$(( $(date +%s) - start ))

cmd="bash bench/paper_table.sh"
[ "$quick" = 1 ] && cmd="$cmd --quick"
[ -n "$seeds_arg" ] && cmd="$cmd --seeds '$seeds_arg'"
[ "$lr_scale" != 1 ] && cmd="$cmd --lr-scale $lr_scale"
if [ "$fixed_epochs" -gt 0 ]; then cmd="$cmd --fixed-epochs $fixed_epochs"; else
  [ "$max_epochs" != 12 ] && cmd="$cmd --max-epochs $max_epochs"
  [ "$patience" != 3 ] && cmd="$cmd --patience $patience"
fi
[ "$jobs" != 2 ] && cmd="$cmd --jobs $jobs"
python3 bench/paper_table.py --runs "$out" --docs "$docs" --total-seconds "$total" --command "$cmd" \
  --jobs "$jobs" --settings "${settings[@]}"
if command -v gnuplot >/dev/null; then
  gnuplot "$docs/figures/paper_table.gp"
  rm -f "$docs/figures/paper_table.gp" "$docs/figures/paper_table.dat"
else
  echo "paper_table: gnuplot not found; no plot" >&2
fi
echo "paper_table: done in $((total / 60)) min $((total % 60)) s; $docs/paper_table.md"
