#!/usr/bin/env bash
# --similarity mlp end to end: a --quick run trains Phi through the dual cache and its table has
# the dense row and the re-ranked row (also in summary.json); `gradcache eval` of its checkpoint
# prints both rows (and "reranked" in --json); combinations it cannot run are refused.
# Usage: similarity_cli_test.sh GRADCACHE_BINARY WORK_DIR
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"

run="$work/phi"
"$bin" train --quick --steps 8 --similarity mlp --phi-tile 48 --rerank-k 50 --output "$run" >"$work/train.out" \
  2>"$work/train.err" || fail "train --quick --similarity mlp failed"
grep -Eq '^trained +[0-9]' "$work/train.out" || fail "no dense 'trained' row in the table"
grep -Eq '^trained, top 50 re-ranked by Phi +[0-9]' "$work/train.out" || fail "no re-ranked row in the table"
grep -q "re-ranked by Phi (top 50)" "$work/train.err" || fail "the evaluation line does not give the re-ranked figures"
"$python" - "$run/summary.json" <<'PY' || fail "summary.json lacks trained_reranked / rerank_k"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["rerank_k"] == 50 and 0 <= s["trained_reranked"]["recall@10"] <= 1, s
# Re-ranking moves documents within the dense top 50 only: recall@100 cannot grow.
assert s["trained_reranked"]["recall@100"] <= s["trained"]["recall@100"] + 1e-12, s
PY

"$bin" eval --checkpoint "$run" --quick --eval-bm25 false >"$work/eval.out" 2>"$work/eval.err" ||
  fail "eval of the --similarity mlp checkpoint failed"
grep -Eq '^step 8 +[0-9]' "$work/eval.out" || fail "eval: no dense row"
grep -Eq '^step 8, top 100 re-ranked by Phi +[0-9]' "$work/eval.out" || fail "eval: no re-ranked row"
"$bin" eval --checkpoint "$run" --quick --eval-bm25 false --rerank-k 20 --json >"$work/eval.json" \
  2>"$work/eval_json.err" || fail "eval --json failed"
"$python" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["reranked"]["k"] == 20, j' \
  "$work/eval.json" || fail "eval --json lacks reranked"
"$bin" eval --checkpoint "$run" --quick --eval-bm25 false --rerank-k 0 >"$work/eval0.out" 2>"$work/eval0.err" ||
  fail "eval --rerank-k 0 failed"
grep -q "re-ranked" "$work/eval0.out" && fail "eval --rerank-k 0 still re-ranks"

# Refused, naming the flags, before anything is written.
refused() {  # name, status, expected message, then train flags
  local name=$1 status=$2 message=$3; shift 3
  "$bin" train --quick --output "$work/$name" "$@" >/dev/null 2>"$work/$name.err"
  expect_status "$status" $? "train $*"
  grep -q -- "$message" "$work/$name.err" || fail "train $*: no message '$message': $(cat "$work/$name.err")"
  [ -e "$work/$name" ] && fail "train $*: wrote $work/$name before refusing"
}
refused nproc 2 "--similarity mlp trains in one process" --similarity mlp --nproc 2
refused hidden 1 "--phi-hidden is used only with --similarity mlp" --phi-hidden 32
# An unknown choice is refused as the settings are read: a usage error (2), as an unknown flag.
refused kind 2 "--similarity must be dot or mlp" --similarity cosine
refused matryoshka 1 "--matryoshka trains prefixes for the dot product" --similarity mlp --matryoshka 64,32
refused streaming 1 "is a loss over the dot product" --similarity mlp --loss streaming
echo "similarity_cli_test: ok"
