#!/usr/bin/env bash
# The paper's main table (Gao et al. 2021, Table 1) at small scale, on the default WordNet task:
# Sequential vs Accumulation vs Cache at equal memory (every forward pass is a chunk of 32).
#
#   bash bench/paper_table.sh [--out DIR] [--quick] [--docs DIR] [--seeds "1 2 3"] [--lr-scale F]
#
# Full version: 41 min 23 s measured on this shared 2-core machine (12 runs of ~3.3 min one
# after another, plus the tokenizer); writes
# docs/paper_table.md (the table between its markers; the text around it is kept),
# docs/paper_table.json and docs/paper_table.png, and each run's output under DIR
# (default runs/paper_table-DATE). --quick: a ~30 s smoke test (tiny model, a data subset,
# a few steps), everything, docs included, in a temporary directory. --docs DIR: write the
# table there instead of docs/; --seeds: other seeds; --lr-scale F: every setting's learning
# rate times F (a sensitivity check of the rule below; use it with --docs).
#
# What it runs, for seeds 1, 2, 3, with the same model, epochs, warm-up, temperature and
# tokenizer (trained once, first, on the training texts):
#   sequential   --mode full       --batch-size 32   --chunk-size 32   (no cache, batch 32)
#   accumulation --mode accumulate --batch-size 512  --sub-batch-size 32   (16 sub-batches of 32,
#                                                                       each sees only its own negatives)
#   cache-512    --mode cache      --batch-size 512  --chunk-size 32
#   cache-2048   --mode cache      --batch-size 2048 --chunk-size 32
# Learning rate: LR_512 (2e-3, the CLI default) at 512 examples per update, scaled with the
# square root of the examples per update: 5e-4 at 32, 4e-3 at 2048 (see docs/paper_table.md).
# Each run is evaluated once, after training (--eval-baseline false), on the test split:
# 5,977 definitions against all 102,859 passages.
#
# The binary: $GRADCACHE, default build/tools/gradcache (this script builds nothing).
set -euo pipefail
cd "$(dirname "$0")/.."

out=""
quick=0
docs_arg=""
seeds_arg=""
lr_scale=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --quick) quick=1; shift ;;
    --docs) docs_arg="${2:?--docs needs a directory}"; shift 2 ;;
    --seeds) seeds_arg="${2:?--seeds needs a list such as \"1 2 3\"}"; shift 2 ;;
    --lr-scale) lr_scale="${2:?--lr-scale needs a number}"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "paper_table.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

bin="${GRADCACHE:-build/tools/gradcache}"
if [ ! -x "$bin" ]; then
  echo "paper_table.sh: no gradcache binary at '$bin'; build it (bash scripts/build.sh) or set GRADCACHE" >&2
  exit 1
fi

# The model and budget, the same for every setting.
MODEL=(--dim 32 --layers 1 --heads 2 --ffn-dim 64 --vocab-size 4000)
EPOCHS=(--epochs 4)
SEEDS=(1 2 3)
LR_512=2e-3
SIZES="32:32 512:32 512:32 2048:32"
docs=docs
if [ "$quick" = 1 ]; then
  MODEL=(--quick --dim 32 --layers 1 --heads 2 --ffn-dim 64)
  EPOCHS=(--steps 0)  # replaced per setting below: the same examples for every setting
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
common=(--threads 1 --blas-threads 1 --eval-baseline false --log-every 10 --save-every 0 --overwrite)

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
"$bin" train "${MODEL[@]}" "${common[@]}" --steps 1 --eval false --output "$tok_run" >"$out/tokenizer.log" 2>&1 ||
  { echo "paper_table: training the tokenizer failed; see $out/tokenizer.log" >&2; exit 1; }
tokenizer="$tok_run/tokenizer.model"

for seed in "${SEEDS[@]}"; do
  for s in "${settings[@]}"; do
    read -r name mode batch chunk <<<"$s"
    lr=$(lr_for "$batch")
    budget=("${EPOCHS[@]}")
    if [ "$quick" = 1 ]; then budget=(--steps $((2048 / batch))); fi  # 2,048 examples each
    dir="$out/$name-seed$seed"
    echo "paper_table: $(date +%H:%M:%S) $name seed $seed (mode $mode, batch $batch, chunk $chunk, lr $lr)"
    "$bin" train "${MODEL[@]}" "${common[@]}" "${budget[@]}" --tokenizer "$tokenizer" \
      --mode "$mode" --batch-size "$batch" --chunk-size "$chunk" --sub-batch-size "$chunk" --lr "$lr" --seed "$seed" \
      --output "$dir" >"$dir.log" 2>&1 || { echo "paper_table: $name seed $seed failed; see $dir.log" >&2; exit 1; }
    grep -E "^trained:|^[0-9]+ steps of" "$dir.log" | sed 's/^/    /' || true
  done
done
total=$(( $(date +%s) - start ))

cmd="bash bench/paper_table.sh"
[ "$quick" = 1 ] && cmd="$cmd --quick"
[ -n "$seeds_arg" ] && cmd="$cmd --seeds '$seeds_arg'"
[ "$lr_scale" != 1 ] && cmd="$cmd --lr-scale $lr_scale"
python3 bench/paper_table.py --runs "$out" --docs "$docs" --total-seconds "$total" --command "$cmd" \
  --settings "${settings[@]}"
if command -v gnuplot >/dev/null; then
  gnuplot "$docs/paper_table.gp"
  rm -f "$docs/paper_table.gp" "$docs/paper_table.dat"
else
  echo "paper_table: gnuplot not found; no plot" >&2
fi
echo "paper_table: done in $((total / 60)) min $((total % 60)) s; $docs/paper_table.md"
