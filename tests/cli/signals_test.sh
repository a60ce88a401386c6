#!/usr/bin/env bash
# Issue 27: a signal stops each long phase of each command promptly: exit 128 + the signal
# (143 for SIGTERM, 130 for SIGINT), nothing printed on stdout, no output left. Each check runs
# a command on data large enough that the phase lasts seconds, waits for the line the command
# logs as the phase begins, sends the signal 0.3 s later and checks
#   - the exit status, and that it came within SIGNAL_BOUND seconds (default 5; each delay is
#     printed: docs/figures/signal_delays.log is this script's output);
#   - that the next phase had not begun when the signal came (else the check tested nothing);
#   - that the command wrote nothing.
#
#   bash tests/cli/signals_test.sh GRADCACHE_BINARY WORK_DIR
#
# Commands and phases: train (the tokenizer's training, also with 2 processes; the evaluation
# after training), eval and mine (encoding, dense search, BM25 indexing and search), export
# (loading, checking the written encoder) and plot (reading, gnuplot's drawing).
# Covered by other scripts: train's training loop (cli_test.sh: SIGINT saves a checkpoint and
# --resume finishes; nproc_test.sh and cli_test.sh with 2 processes), eval's encoding
# (cli_test.sh) and encode's (encode_export_test.sh).
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"
bound=${SIGNAL_BOUND:-5}
# The commands' temporary files (BM25 indexes, the tokenizer's scratch file) go here, to be
# checked at the end: a stopped command must leave none.
export TMPDIR="$work/tmp"
mkdir -p "$TMPDIR"

# 40,000 passages and 20,000 queries (the first passages' texts), over 20 words: encoding takes
# seconds, an exact search of all queries too, and each BM25 query matches most passages.
awk 'BEGIN { srand(7); split("cat dog tree river stone house light music paper glass water fire cloud horse bread apple chair table window garden", w, " ");
             for (i = 1; i <= 40000; i++) { s = "passage " i; for (j = 0; j < 8; j++) s = s " " w[int(rand() * 20) + 1]; print "d" i "\t" s } }' \
  >"$work/corpus.tsv"
awk -F'\t' -v queries="$work/queries.tsv" -v qrels="$work/qrels.txt" -v pairs="$work/pairs.tsv" 'NR <= 20000 {
  print "q" NR "\t" $2 >queries; print "q" NR " 0 d" NR " 1" >qrels; print $2 "\t" $2 >pairs }' "$work/corpus.tsv"
"$bin" train --quick --steps 2 --eval false --output "$work/run" >/dev/null 2>"$work/run.err" || fail "the quick run failed"

# start NAME COMMAND...: runs COMMAND in the background, stdout to NAME.out, stderr to NAME.err.
start() {
  name=$1
  shift
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  pid=$!
}
# await CONDITION: until the shell condition holds (at most 3 minutes), or the command ends.
await() {
  local _
  for _ in $(seq 3600); do
    eval "$1" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  eval "$1" || { kill -KILL "$pid" 2>/dev/null; fail "$name never came to the phase it was to be stopped in ($1)"; }
}
# stop SIGNAL PHASE [NEXT]: 0.3 s into PHASE, SIGNAL to the command; checks the status, the delay,
# that NEXT (a line of the next phase) is not in NAME.err, and that stdout is empty.
stop() {
  local signal=$1 phase=$2 next=${3:-} sent status took
  sleep 0.3
  sent=$(date +%s.%N)
  kill -"$signal" "$pid"
  wait "$pid"
  status=$?
  took=$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$sent" "$(date +%s.%N)")
  expect_status $((128 + $(kill -l "$signal"))) "$status" "$name stopped by SIG$signal during $phase"
  if [ -n "$next" ] && grep -q -- "$next" "$work/$name.err"; then
    fail "$name: the phase after $phase ('$next') had begun when SIG$signal came; the data are too small to test it"
  fi
  [ -s "$work/$name.out" ] && fail "$name stopped by SIG$signal during $phase printed on stdout"
  python3 -c "import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))" "$took" "$bound" ||
    fail "$name took $took s to stop after SIG$signal during $phase (bound: $bound s)"
  echo "${name%%_*} stopped $took s after SIG$signal during $phase"
}
logged() { echo "grep -q -- '$1' '$work/$name.err'"; }

# train: the tokenizer's training (sentencepiece, ~11 s on the WordNet data; it cannot be
# interrupted, so it runs in a child process that the signal ends) and the set-up.
start train_tokenizer "$bin" train --steps 3 --eval false --output "$work/tokenizer_run"
await "$(logged "training a tokenizer")"
stop TERM "the tokenizer's training" "trained a"
[ -e "$work/tokenizer_run" ] && fail "train stopped during its set-up left $work/tokenizer_run"
grep -q "stopped by SIGTERM before training began; nothing of this run was written" "$work/train_tokenizer.err" ||
  fail "train stopped in its set-up did not say so"

# The same with two processes (--nproc 2): rank 0 trains the tokenizer while rank 1 waits for it;
# both stop, the launcher exits 143, and no error is printed (rank 1's wait failing as rank 0
# stopped is the same stop).
start train_tokenizer2 "$bin" train --nproc 2 --steps 3 --eval false --output "$work/tokenizer_run2"
await "$(logged "training a tokenizer")"
stop TERM "the tokenizer's training (--nproc 2)" "trained a"
[ -e "$work/tokenizer_run2" ] && fail "train --nproc 2 stopped during its set-up left $work/tokenizer_run2"
grep -q "error" "$work/train_tokenizer2.err" && fail "train --nproc 2 stopped by SIGTERM printed an error: $(cat "$work/train_tokenizer2.err")"

# train: the evaluation after training (20,000 passages one by one). The trained checkpoint is
# kept and summary.json says the run was interrupted.
start train_eval "$bin" train --quick --steps 2 --eval-baseline false --eval-batch-size 1 --eval-corpus "$work/corpus.tsv" \
  --eval-queries "$work/queries.tsv" --eval-qrels "$work/qrels.txt" --output "$work/evaluated_run"
await "[ -f '$work/evaluated_run/checkpoint.pt' ]"
stop TERM "its evaluation after training"
python3 -c "import json, sys; s = json.load(open(sys.argv[1])); sys.exit(not (s['interrupted'] and s['trained'] is None and s['steps'] == 2))" \
  "$work/evaluated_run/summary.json" || fail "the summary of the stopped evaluation: $(cat "$work/evaluated_run/summary.json")"

# eval: the dense search, the BM25 index's building, the BM25 search.
evaluate=("$bin" eval --checkpoint "$work/run" --corpus "$work/corpus.tsv" --queries "$work/queries.tsv"
          --qrels "$work/qrels.txt")
start eval_search "${evaluate[@]}"
await "$(logged "searching with")"
stop TERM "the dense search" "BM25: indexing"
start eval_bm25index "${evaluate[@]}"
await "$(logged "BM25: indexing")"
stop TERM "the BM25 indexing" "BM25: indexed"
start eval_bm25search "${evaluate[@]}"
await "$(logged "BM25: indexed")"
stop INT "the BM25 search"
grep -q "stopped by SIGINT before the evaluation finished" "$work/eval_bm25search.err" || fail "eval did not say SIGINT stopped it"

# mine: the encoding, the dense search, the BM25 index's building, the BM25 search. Nothing
# is written at any of them.
mine=("$bin" mine --train-file "$work/pairs.tsv" --corpus "$work/corpus.tsv" --negatives 3 --output "$work/mined.jsonl")
start mine_encoding "${mine[@]}" --run "$work/run" --batch-size 1
await "$(logged "encoding 20000 queries")"
stop TERM "the encoding" "searching with"
start mine_search "${mine[@]}" --run "$work/run"
await "$(logged "searching with")"
stop TERM "the dense search" "gradcache mine: wrote"
start mine_bm25index "${mine[@]}" --bm25
await "$(logged "BM25: indexing")"
stop TERM "the BM25 indexing" "BM25: indexed"
start mine_bm25search "${mine[@]}" --bm25
await "$(logged "BM25: indexed")"
stop INT "the BM25 search" "gradcache mine: wrote"
[ -e "$work/mined.jsonl" ] && fail "a stopped mine wrote its output"
ls "$work" | grep -q "mined.jsonl." && fail "a stopped mine left a temporary file: $(ls "$work")"

# export: loading the checkpoint (a 42M-parameter encoder, 0.5 GB with its optimizer state:
# ~2 s) and checking the written encoder (loading it back and running it, ~1.5 s). A new
# --output does not appear; an old one, with --overwrite, is left as it was.
"$bin" train --train-file "$work/pairs.tsv" --steps 1 --batch-size 16 --chunk-size 16 --dim 768 --layers 6 --heads 12 \
  --ffn-dim 3072 --vocab-size 64 --eval false --output "$work/big_run" >/dev/null 2>"$work/big_run.err" ||
  fail "the run to export failed: $(cat "$work/big_run.err")"
start export_loading "$bin" export --run "$work/big_run" --output "$work/export"
await "$(logged "gradcache export: loading")"
stop TERM "the loading of the checkpoint" "gradcache export: writing"
[ -e "$work/export" ] && fail "a stopped export left $work/export"
"$bin" export --run "$work/run" --output "$work/export" 2>"$work/export_old.err" || fail "export failed: $(cat "$work/export_old.err")"
before=$(cd "$work/export" && md5sum $(ls -A))
start export_checking "$bin" export --run "$work/big_run" --output "$work/export" --overwrite
await "$(logged "gradcache export: checking")"
stop INT "the check of the written encoder" "gradcache export: wrote"
grep -q "gradcache export: stopped by SIGINT before it finished; nothing was written" "$work/export_checking.err" ||
  fail "export did not say SIGINT stopped it: $(cat "$work/export_checking.err")"
[ "$(cd "$work/export" && md5sum $(ls -A))" = "$before" ] || fail "a stopped export --overwrite changed the old export"
ls "$work" | grep -q "^export\.\(partial\|old\)" && fail "a stopped export left a staging directory: $(ls "$work")"

# plot: reading a run's metrics (300,000 steps: ~1.5 s) and gnuplot's drawing (~5 s; the
# program kills gnuplot). No PNG appears, and gnuplot is not left running.
mkdir -p "$work/long_run"
awk 'BEGIN { for (i = 1; i <= 300000; i++) printf "{\"step\": %d, \"loss\": %.4f, \"lr\": 0.001}\n", i, 3 / (1 + i / 1000) }' \
  >"$work/long_run/metrics.jsonl"
start plot_reading "$bin" plot "$work/long_run" --output "$work/curves.png"
await "$(logged "gradcache plot: reading")"
stop TERM "the reading of the metrics" "gradcache plot: drawing"
start plot_drawing "$bin" plot "$work/long_run" --output "$work/curves.png"
await "$(logged "gradcache plot: drawing")"
await "pgrep -P $pid gnuplot >/dev/null"
gnuplot=$(pgrep -P "$pid" gnuplot)
stop TERM "gnuplot's drawing" "gradcache plot: wrote"
kill -0 "$gnuplot" 2>/dev/null && fail "a stopped plot left gnuplot running"
ls "$work" | grep -q "curves.png" && fail "a stopped plot left a file: $(ls "$work")"
[ -z "$(ls -A "$TMPDIR")" ] || fail "the stopped commands left temporary files: $(ls -A "$TMPDIR")"
echo "signals: every phase stopped within $bound s, with nothing written"
