#!/usr/bin/env bash
# Matryoshka representations (Kusupati et al., 2022) at small scale, on the default WordNet task:
# one encoder trained with --matryoshka 64,32,16 and evaluated at each prefix, against three
# encoders trained at 64, 32 and 16 dimensions alone, with the same budget.
#
#   bash bench/matryoshka.sh [--out DIR] [--quick] [--docs DIR]
#
# Full version: four runs one after another (about 15 min on an idle 2-core machine: the
# budget below was chosen for that), plus the tokenizer; writes docs/matryoshka.md and
# docs/figures/matryoshka.json, and each run's output under DIR (default runs/matryoshka-DATE).
# --quick: a smoke test of the script (a tiny budget and the --quick data subset, under a
# minute), everything, docs included, in a temporary directory unless --docs is given.
#
# What it runs, with the same tokenizer (trained once, first, on the training texts), layers,
# heads, feed-forward width, epochs, batch, chunk, learning rate and seed:
#   matryoshka   --dim 64 --matryoshka 64,32,16   (evaluated at 64, 32 and 16 dimensions)
#   dim-64       --dim 64
#   dim-32       --dim 32
#   dim-16       --dim 16
# Each run is evaluated once, after training (--eval-baseline false), on the WordNet test split;
# R@10 and MRR@10 come from each run's summary.json ("trained", and "matryoshka" per prefix).
#
# The binary: $GRADCACHE, default build/tools/gradcache (this script builds nothing).
set -euo pipefail
cd "$(dirname "$0")/.."

out=""
quick=0
docs_arg=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --quick) quick=1; shift ;;
    --docs) docs_arg="${2:?--docs needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "matryoshka.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

bin="${GRADCACHE:-build/tools/gradcache}"
if [ ! -x "$bin" ]; then
  echo "matryoshka.sh: no gradcache binary at '$bin'; build it (bash scripts/build.sh) or set GRADCACHE" >&2
  exit 1
fi

# The model (but its width) and the budget, the same for every run.
MODEL=(--layers 1 --heads 2 --ffn-dim 128 --vocab-size 4000)
BUDGET=(--epochs 3 --batch-size 512 --chunk-size 64 --lr 2e-3 --seed 1)
DIMS="64,32,16"
docs=docs
if [ "$quick" = 1 ]; then
  MODEL=(--quick --layers 1 --heads 2 --ffn-dim 32 --vocab-size 500)
  BUDGET=(--steps 4 --batch-size 64 --chunk-size 32 --lr 3e-3 --seed 1)
  tmp="$(mktemp -d /tmp/matryoshka.XXXXXX)"
  out="${out:-$tmp/runs}"
  docs="$tmp/docs"
fi
[ -n "$docs_arg" ] && docs="$docs_arg"
mkdir -p "$docs"
out="${out:-runs/matryoshka-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
common=(--threads 1 --blas-threads 1 --eval-baseline false --eval-bm25 false --log-every 10 --save-every 0 --overwrite)

start=$(date +%s)
echo "matryoshka: binary $bin, output $out, docs $docs"
tok_run="$out/tokenizer"
"$bin" train "${MODEL[@]}" --dim 16 "${common[@]}" --steps 1 --eval false --output "$tok_run" >"$out/tokenizer.log" 2>&1 ||
  { echo "matryoshka: training the tokenizer failed; see $out/tokenizer.log" >&2; exit 1; }
tokenizer="$tok_run/tokenizer.model"

# name and the flags of its width
runs=(
  "matryoshka --dim 64 --matryoshka $DIMS"
  "dim-64 --dim 64"
  "dim-32 --dim 32"
  "dim-16 --dim 16"
)
for r in "${runs[@]}"; do
  read -r name flags <<<"$r"
  dir="$out/$name"
  echo "matryoshka: $(date +%H:%M:%S) $name ($flags)"
  # shellcheck disable=SC2086  # $flags: the run's own flags, split on purpose
  "$bin" train "${MODEL[@]}" "${common[@]}" "${BUDGET[@]}" $flags --tokenizer "$tokenizer" --output "$dir" \
    >"$dir.log" 2>&1 || { echo "matryoshka: $name failed; see $dir.log" >&2; exit 1; }
  grep -E "^trained( @[0-9]+)?:|^[0-9]+ steps of" "$dir.log" | sed 's/^/    /' || true
done
total=$(( $(date +%s) - start ))

cmd="bash bench/matryoshka.sh"
[ "$quick" = 1 ] && cmd="$cmd --quick"
python3 bench/matryoshka.py --runs "$out" --docs "$docs" --total-seconds "$total" --command "$cmd" \
  --model "${MODEL[*]}" --budget "${BUDGET[*]} --threads 1 --blas-threads 1" --dims "$DIMS"
echo "matryoshka: wrote $docs/matryoshka.md and $docs/figures/matryoshka.json ($total s)"
if [ "$quick" = 1 ]; then
  cat "$docs/matryoshka.md"
  rm -rf "$tmp"  # the scratch directory (and the docs in it unless --docs said elsewhere)
fi
exit 0
