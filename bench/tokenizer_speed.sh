#!/usr/bin/env bash
# Every tokenizer kind's speed against Python's `tokenizers`, one thread each (issue 36):
# docs/figures/tokenizer_speed.json and docs/figures/tokenizer_speed.log. Makes the tokenizers and their corpus first
# (tests/hf/tokenizer_kinds.py all, in a scratch directory), then bench/tokenizer_speed.py times
# both sides, interleaved, on the same texts.
#
#   bash bench/tokenizer_speed.sh [--quick] [tokenizer_speed.py's options]
#
# --quick: two kinds, few texts, one round, into a scratch directory (the ctest smoke test).
# $TOKENIZER_KINDS_DIR: tokenizers already made there (ctest's hf.tokenizer_kinds) are reused.
# The program: $GRADCACHE_TOKENIZER_SPEED_BENCH (build/bench/gradcache-tokenizer-speed-bench);
# this script builds nothing (bash scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${GRADCACHE_PYTHON:-.venv/bin/python}"
[ -x "$python" ] || { echo "tokenizer_speed.sh: no Python at '$python'; bash scripts/setup.sh makes .venv/" >&2; exit 1; }
bench=${GRADCACHE_TOKENIZER_SPEED_BENCH:-build/bench/gradcache-tokenizer-speed-bench}
scratch=${TOKENIZER_SPEED_SCRATCH:-${TMPDIR:-/tmp}/gradcache-tokenizer-speed}
out=docs/figures/tokenizer_speed.json
log=docs/figures/tokenizer_speed.log
options=(--doc docs/huggingface.md)
if [ "${1:-}" = --quick ]; then
  shift
  out=$scratch/tokenizer_speed.json
  log=$scratch/tokenizer_speed.log
  options=(--kinds bert roberta --short 200 --long 20 --rounds 1 --repeats 1)
fi
kinds=${TOKENIZER_KINDS_DIR:-$scratch/kinds}
mkdir -p "$scratch" "$(dirname "$out")"
if [ ! -f "$kinds/summary.json" ]; then
  "$python" tests/hf/tokenizer_kinds.py all "$kinds"
fi
"$python" bench/tokenizer_speed.py --dir "$kinds" --corpus "$kinds/corpus.txt" --bench "$bench" \
  --out "$out" "${options[@]}" "$@" 2>&1 | tee "$log"
echo "tokenizer_speed: wrote $out and $log"
