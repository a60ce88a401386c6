#!/usr/bin/env bash
# The search options of the gradcache program: eval --index (recall against the exact search),
# the bm25 row of eval and train (and --eval-bm25 false), --bm25-index reuse, and clear errors.
# Usage: search_cli_test.sh GRADCACHE_BINARY WORK_DIR
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"

# train: the end-of-run table has a bm25 row, and summary.json its metrics.
"$bin" train --quick --steps 2 --eval-baseline false --output "$work/run" >"$work/train.out" 2>"$work/train.err"
expect_status 0 $? "quick train"
grep -q "^bm25 " "$work/train.out" || fail "train: no bm25 row in the table"
grep -q '"bm25": {' "$work/run/summary.json" || fail "train: no bm25 metrics in summary.json"
"$bin" train --quick --steps 2 --eval-baseline false --eval-bm25 false --output "$work/nobm25" \
  >"$work/nobm25.out" 2>"$work/nobm25.err"
expect_status 0 $? "train --eval-bm25 false"
grep -q "^bm25 " "$work/nobm25.out" && fail "train --eval-bm25 false printed a bm25 row"
grep -q '"bm25": null' "$work/nobm25/summary.json" || fail "train --eval-bm25 false: summary.json has bm25 metrics"

# eval: the model's row, then bm25; exact search reports no recall against itself.
"$bin" eval --checkpoint "$work/run" --quick >"$work/eval.out" 2>"$work/eval.err"
expect_status 0 $? "eval"
grep -q "^step 2 " "$work/eval.out" || fail "eval: no row for the model"
grep -q "^bm25 " "$work/eval.out" || fail "eval: no bm25 row"
grep -q "recall vs exact" "$work/eval.out" && fail "eval with the exact index reported recall vs exact"
"$bin" eval --checkpoint "$work/run" --quick --eval-bm25 false --json >"$work/nobm25.json" 2>"$work/nobm25_eval.err"
expect_status 0 $? "eval --eval-bm25 false"
grep -q '"bm25"' "$work/nobm25.json" && fail "eval --eval-bm25 false: bm25 in --json"

# Approximate indexes: recall against the exact search, in the table and in --json.
"$bin" eval --checkpoint "$work/run" --quick --index hnsw --ef-search 64 >"$work/hnsw.out" 2>"$work/hnsw.err"
expect_status 0 $? "eval --index hnsw"
grep -Eq "^index hnsw M 32, efConstruction 100, efSearch 64; recall vs exact search: @10 [01]\.[0-9]{4}, @100 [01]\.[0-9]{4}$" \
  "$work/hnsw.out" || fail "eval --index hnsw: no recall vs exact line"
"$bin" eval --checkpoint "$work/run" --quick --index ivfpq --nlist 32 --nprobe 4 --pq-bits 6 --json \
  >"$work/ivfpq.json" 2>"$work/ivfpq.err"
expect_status 0 $? "eval --index ivfpq"
grep -q "WARNING" "$work/ivfpq.err" && fail "eval --index ivfpq: FAISS warned (too few training points by default?)"
grep -q '"recall_vs_exact@100"' "$work/ivfpq.json" || fail "eval --index ivfpq --json: no recall_vs_exact@100"
grep -q '"bm25": {' "$work/ivfpq.json" || fail "eval --json: no bm25 object"

# Bad parameters: exit status 1 and a message naming the flag.
"$bin" eval --checkpoint "$work/run" --quick --index annoy >/dev/null 2>"$work/badindex.err"
expect_status 1 $? "eval --index annoy"
grep -q -- "--index must be exact, flat, blocked, hnsw or ivfpq" "$work/badindex.err" || fail "no message for --index annoy"
"$bin" eval --checkpoint "$work/run" --quick --index ivfpq --nlist 1000000 >/dev/null 2>"$work/nlist.err"
expect_status 1 $? "eval --nlist 1000000"
grep -q -- "--nlist 1000000 exceeds the" "$work/nlist.err" || fail "no message for --nlist above the corpus size"
"$bin" eval --checkpoint "$work/run" --quick --index ivfpq --pq-m 7 >/dev/null 2>"$work/pqm.err"
expect_status 1 $? "eval --pq-m 7"
grep -q -- "--pq-m 7 must divide the embedding size" "$work/pqm.err" || fail "no message for --pq-m 7"

# --bm25-index: built once, then reused for the same corpus.
"$bin" eval --checkpoint "$work/run" --quick --bm25-index "$work/bm25" >/dev/null 2>"$work/bm25a.err"
expect_status 0 $? "eval --bm25-index (build)"
grep -q "BM25: indexed" "$work/bm25a.err" || fail "--bm25-index: not built the first time"
"$bin" eval --checkpoint "$work/run" --quick --bm25-index "$work/bm25" >/dev/null 2>"$work/bm25b.err"
expect_status 0 $? "eval --bm25-index (reuse)"
grep -q "BM25: reused the index" "$work/bm25b.err" || fail "--bm25-index: not reused the second time"
# Issue 41, item 9: a regular file as --bm25-index is named as one ("the directory holds..." before).
echo "not an index" >"$work/bm25_file"
"$bin" eval --checkpoint "$work/run" --quick --bm25-index "$work/bm25_file" >/dev/null 2>"$work/bm25file.err"
expect_status 1 $? "eval --bm25-index FILE"
grep -q "bm25_file is a file, not a directory" "$work/bm25file.err" || fail "no message for a file as --bm25-index"
[ "$(cat "$work/bm25_file")" = "not an index" ] || fail "--bm25-index FILE was changed"
echo "search CLI checks passed"
