#!/usr/bin/env bash
# Model selection and curves end to end: --eval-every writes dev lines and best.pt (which
# `gradcache eval` reads), --patience stops early, curves.png is a PNG (a notice, not a
# failure, without gnuplot), `gradcache plot` overlays runs, and bad flags are refused.
# Usage: model_selection_test.sh GRADCACHE_BINARY WORK_DIR
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"
is_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }

# Bad flags: exit 1, a message naming the flag, nothing written.
source "$(dirname "$0")/tiny_task.sh"
write_tiny_task "$work"
refused() {  # name, expected message, then train flags
  local name=$1 message=$2; shift 2
  "$bin" train --quick --output "$work/$name" "$@" >/dev/null 2>"$work/$name.err"
  [ $? = 1 ] || fail "train $*: exit status not 1"
  grep -q -- "$message" "$work/$name.err" || fail "train $*: no message '$message': $(cat "$work/$name.err")"
  [ -e "$work/$name" ] && fail "train $*: wrote $work/$name before refusing"
}
refused nodev "--eval-every needs dev data" "${tiny_flags[@]}" --eval-every 5
refused fraction "--dev-fraction must be in (0, 1)" "${tiny_flags[@]}" --eval-every 5 --dev-fraction 1.5
refused metric "--select-metric must be recall@1, recall@10" --eval-every 5 --select-metric map
refused patience "--patience is used only with --eval-every" --patience 2

# WordNet (--quick: its dev split's subset): dev lines, best.pt, summary, curves.png.
run="$work/wordnet"
"$bin" train --quick --steps 12 --eval-every 4 --eval false --output "$run" >"$work/wordnet.out" 2>"$work/wordnet.err" ||
  fail "the --eval-every run failed"
[ "$(grep -c '"dev"' "$run/metrics.jsonl")" = 3 ] || fail "expected 3 dev lines in metrics.jsonl"
best_step=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["selection"]["best_step"])' "$run/summary.json")
[ -f "$run/best.pt" ] || fail "no best.pt"
grep -q "best dev recall@10" "$work/wordnet.out" || fail "the report does not name the best model"
"$bin" eval --checkpoint "$run/best.pt" --quick --split dev --json >"$work/best.json" 2>"$work/best_eval.err" ||
  fail "gradcache eval cannot read best.pt"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["step"] == int(sys.argv[2])' "$work/best.json" \
  "$best_step" || fail "best.pt is not the model of step $best_step"
is_png "$run/curves.png" || fail "curves.png is not a PNG"

# User data with --dev-fraction, --patience: the model cannot improve (lr ~0), so it stops at
# the third evaluation.
run="$work/patience"
"$bin" train --quick "${tiny_flags[@]}" --steps 40 --lr 1e-12 --eval-every 2 --dev-fraction 0.2 --patience 2 \
  --output "$run" >/dev/null 2>"$work/patience.err" || fail "the --patience run failed"
grep -q "early stop at step 6" "$work/patience.err" || fail "no early stop line at step 6"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["stopped_early"] and s["steps"] == 6, s' \
  "$run/summary.json" || fail "summary.json does not say it stopped early at step 6"
is_png "$run/curves.png" || fail "curves.png of the stopped run is not a PNG"

# Without gnuplot: a notice, the run succeeds.
PATH=/nonexistent "$bin" train --quick "${tiny_flags[@]}" --steps 2 --output "$work/nognuplot" >/dev/null \
  2>"$work/nognuplot.err" || fail "a run without gnuplot failed"
grep -q "notice: no curves.png: gnuplot is not installed" "$work/nognuplot.err" || fail "no notice without gnuplot"

# gradcache plot: two runs in one figure; refuses to overwrite; names a missing run.
"$bin" plot "$work/wordnet" "$work/patience" --output "$work/both.png" 2>"$work/plot.err" || fail "plot failed"
is_png "$work/both.png" || fail "plot wrote no PNG"
"$bin" plot "$work/wordnet" --output "$work/both.png" 2>"$work/plot_again.err"
[ $? = 1 ] && grep -q "pass --overwrite" "$work/plot_again.err" || fail "plot overwrote without --overwrite"
"$bin" plot "$work/wordnet" --output "$work/both.png" --overwrite 2>/dev/null || fail "plot --overwrite failed"
"$bin" plot "$work/nowhere" --output "$work/x.png" 2>"$work/plot_missing.err"
[ $? = 1 ] && grep -q "nowhere: no metrics.jsonl" "$work/plot_missing.err" || fail "no message for a missing run"
[ -e "$work/x.png" ] && fail "a failed plot left a file"
# Issue 27: an output that is an input is refused before anything is written; a metrics file
# with a line that is not a record is named, with the line, instead of being drawn in part.
cp "$work/wordnet/metrics.jsonl" "$work/metrics_before.jsonl"
"$bin" plot "$work/wordnet" --output "$work/wordnet/metrics.jsonl" --overwrite 2>"$work/plot_self.err"
[ $? = 1 ] && grep -q "is the command's input" "$work/plot_self.err" || fail "plot accepted one of its inputs as --output"
cmp -s "$work/wordnet/metrics.jsonl" "$work/metrics_before.jsonl" || fail "plot replaced the run's metrics"
mkdir -p "$work/garbage"
{ head -2 "$work/metrics_before.jsonl"; echo "this is not json"; } >"$work/garbage/metrics.jsonl"
"$bin" plot "$work/garbage" --output "$work/garbage.png" 2>"$work/plot_garbage.err"
[ $? = 1 ] && grep -q "garbage/metrics.jsonl line 3: not JSON" "$work/plot_garbage.err" ||
  fail "no message naming the bad line of a metrics file: $(cat "$work/plot_garbage.err")"
[ -e "$work/garbage.png" ] && fail "a failed plot left a file"
echo "model selection and curves: all checks passed"
