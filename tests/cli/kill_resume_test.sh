#!/usr/bin/env bash
# Fault injection: `gradcache train --save-every 1` is killed (SIGKILL: no handler, no last
# checkpoint) at random moments and resumed each time, until it finishes. Its final training
# state must be bit-identical to that of the same run never interrupted: the model's tensors,
# the AdamW state, the generators and the progress (compare_checkpoints), and the metrics must
# hold each step once, with the reference's loss.
#
#   bash tests/cli/kill_resume_test.sh path/to/gradcache path/to/compare_checkpoints WORK_DIR
#
# The moments are drawn from a seed printed first; KILL_RESUME_SEED=N draws the same ones
# (where a kill lands within a step still varies with the machine's speed).
# KILL_RESUME_MODEL_DIR=DIR does it all with a pretrained model (train --model-dir DIR);
# KILL_RESUME_FLAGS="--mode full" (or "--mode accumulate", "--precision bf16") with other settings.
# KILL_RESUME_MIX=1: the tiny task as two data sets (TSV and JSONL) mixed by --mix 2,1.
set -u
bin=$1
compare=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL (seed $seed): $*"; exit 1; }
seed=${KILL_RESUME_SEED:-$(( $(od -An -N2 -tu2 /dev/urandom) ))}
RANDOM=$seed
echo "seed $seed (KILL_RESUME_SEED=$seed repeats these kills)"
kills=4
steps=30
source "$(dirname "$0")/tiny_task.sh"
write_tiny_task "$work"
# KILL_RESUME_MODEL_DIR=DIR: the same with a pretrained model (--model-dir DIR) in place of the
# built-in encoder and its tokenizer.
if [ -n "${KILL_RESUME_MODEL_DIR:-}" ]; then
  tiny_flags=(--model-dir "$KILL_RESUME_MODEL_DIR" --train-file "$work/train.tsv" --batch-size 16 --chunk-size 8 --eval false)
fi
if [ -n "${KILL_RESUME_MIX:-}" ]; then
  head -n 56 "$work/train.tsv" >"$work/first.tsv"
  tail -n +57 "$work/train.tsv" | python3 -c 'import json, sys
for line in sys.stdin:
    q, p = line.rstrip("\n").split("\t")
    print(json.dumps({"query": q, "positives": [p]}))' >"$work/second.jsonl"
  [ "${tiny_flags[0]}" = --train-file ] || fail "tiny_task.sh's flags no longer start with --train-file"
  tiny_flags=(--train-file "$work/first.tsv,$work/second.jsonl" --mix 2,1 "${tiny_flags[@]:2}")
fi
# shellcheck disable=SC2206  # KILL_RESUME_FLAGS is a list of words
train=("$bin" train "${tiny_flags[@]}" ${KILL_RESUME_FLAGS:-} --steps $steps --log-every 1)

start_ms=$(date +%s%3N)
"${train[@]}" --output "$work/reference" >"$work/reference.log" 2>&1 ||
  fail "the reference run failed: $(tail -3 "$work/reference.log")"
# The set-up's share of the run: its time less the steps' (the last metrics line's elapsed_s).
setup_ms=$(python3 -c 'import json, sys; print(max(1, int(sys.argv[1]) - int(1000 * json.loads(open(sys.argv[2]).readlines()[-1])["elapsed_s"])))' \
  $(( $(date +%s%3N) - start_ms )) "$work/reference/metrics.jsonl")

# Each kill: after a random number of further metrics lines (up to half of those left), then
# 0..49 ms more, which lands anywhere in a step: its computation, its metrics line or its
# checkpoint write; or, drawing 0 lines, 0..setup_ms after the start: in the set-up (loading,
# the tokenizer, the data, the model) or the first step. Without a checkpoint yet, the run
# starts afresh, as a user would.
run="$work/killed"
# The runs' scratch files (a tokenizer being trained) go here; a killed run's is left behind,
# and the next run removes it.
export TMPDIR="$work/tmp"
mkdir -p "$TMPDIR"
lines_written() { cat "$run/metrics.jsonl" 2>/dev/null | wc -l; }
resume_flag() { [ -f "$run/checkpoint.pt" ] && echo --resume; }
for i in $(seq $kills); do
  before=$(lines_written)
  [ -f "$run/checkpoint.pt" ] || before=0  # a fresh start empties the metrics
  wait_lines=$(( RANDOM % ((steps - before) / 2 > 0 ? (steps - before) / 2 : 1) ))
  extra_ms=$(( wait_lines > 0 ? RANDOM % 50 : (RANDOM * 32768 + RANDOM) % setup_ms ))
  "${train[@]}" --save-every 1 --output "$run" $(resume_flag) >"$work/killed_$i.log" 2>&1 &
  pid=$!
  # Until the lines appear (the count may fall first: a resume drops lines past its checkpoint).
  while kill -0 "$pid" 2>/dev/null && [ "$wait_lines" -gt 0 ] && [ "$(lines_written)" -lt $((before + wait_lines)) ]; do
    sleep 0.005
  done
  sleep "$(printf '%d.%03d' $((extra_ms / 1000)) $((extra_ms % 1000)))"
  if kill -KILL "$pid" 2>/dev/null; then what="killed"; else what="had already finished when killed"; fi
  wait "$pid" 2>/dev/null
  echo "run $i: $what $wait_lines lines and $extra_ms ms after its start at line $before; now $(lines_written) lines"
done
"${train[@]}" --save-every 1 --output "$run" $(resume_flag) >"$work/final.log" 2>&1 ||
  fail "the last --resume failed: $(tail -3 "$work/final.log")"
[ -z "$(ls -A "$TMPDIR")" ] || fail "the killed runs left scratch files: $(ls -A "$TMPDIR")"
unset TMPDIR

"$compare" "$work/reference/checkpoint.pt" "$run/checkpoint.pt" || fail "the resumed run is not the reference's"
python3 - "$work/reference/metrics.jsonl" "$run/metrics.jsonl" <<'EOF' || fail "the metrics differ (see above)"
import json, sys
reference, resumed = ([json.loads(line) for line in open(path)] for path in sys.argv[1:])
steps = [m["step"] for m in resumed]
assert steps == list(range(1, len(reference) + 1)), f"resumed run's metrics steps: {steps}"
for a, b in zip(reference, resumed):
    assert a["loss"] == b["loss"] and a["lr"] == b["lr"] and a.get("dataset") == b.get("dataset"), \
        f"step {a['step']}: {a} vs {b}"
EOF
echo "killed $kills times and resumed: the final model, optimizer and generator states are bit-identical" \
  "to the uninterrupted run's, and the metrics hold each step once with its loss"

# Issue 27, item 6: a `train --overwrite` of another run (other settings) killed after it has
# claimed the directory and before its first checkpoint. The old run is kept whole aside, a
# --resume or a new run names where and how to get it back, and once moved back it resumes as
# the reference it is (bit-identical checkpoint, same metrics).
# The directory's handling depends neither on the model nor on the mode: checked once.
[ -n "${KILL_RESUME_MODEL_DIR:-}${KILL_RESUME_FLAGS:-}" ] && exit 0
over="$work/overwritten"
cp -r "$work/reference" "$over"
"$bin" train "${tiny_flags[@]}" --steps 100000 --log-every 1 --lr 0.5 --overwrite --output "$over" \
  >"$work/overwrite.log" 2>&1 &
pid=$!
for _ in $(seq 3000); do  # until the new run's first line: its own metrics.jsonl, the old one aside
  ls -d "$over"/.replaced-* >/dev/null 2>&1 && [ "$(cat "$over/metrics.jsonl" 2>/dev/null | wc -l)" -ge 1 ] &&
    [ "$(cat "$over/metrics.jsonl" | wc -l)" -lt $steps ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.01
done
kill -KILL "$pid" 2>/dev/null || fail "the overwriting run ended by itself: $(tail -3 "$work/overwrite.log")"
wait "$pid" 2>/dev/null
aside=$(ls -d "$over"/.replaced-* 2>/dev/null | head -1)
[ -n "$aside" ] && [ -f "$aside/checkpoint.pt" ] || fail "the old run is not aside: $(ls -A "$over")"
[ -f "$over/checkpoint.pt" ] && fail "a checkpoint beside the killed run's files: $(ls -A "$over")"
"${train[@]}" --output "$over" --resume >"$work/resume_over.log" 2>&1
[ $? = 1 ] && grep -q "mv -f '$aside'" "$work/resume_over.log" ||
  fail "--resume after the killed --overwrite did not name the old run: $(tail -3 "$work/resume_over.log")"
"${train[@]}" --output "$over" >"$work/new_over.log" 2>&1
[ $? = 1 ] && grep -q "$aside" "$work/new_over.log" ||
  fail "a new run after the killed --overwrite did not name the old run: $(tail -3 "$work/new_over.log")"
# The printed command itself puts the old run back (issue 41, item 7: it left the killed run's
# files, e.g. a --model-dir run's tokenizer.json beside the old tokenizer.model, and --resume
# then refused the mix). A tokenizer.json stands for such a file here.
echo '{}' >"$over/tokenizer.json"
"${train[@]}" --output "$over" --resume >"$work/resume_over2.log" 2>&1
hint=$(grep -o "rm -f .* && rmdir '[^']*'" "$work/resume_over2.log" | head -1)
[ -n "$hint" ] || fail "no command to move the old run back: $(tail -3 "$work/resume_over2.log")"
bash -c "$hint" || fail "the printed command failed: $hint"
[ -e "$over/tokenizer.json" ] && fail "the printed command left the killed run's tokenizer.json"
"${train[@]}" --output "$over" --resume >"$work/restored.log" 2>&1 ||
  fail "the old run, moved back, does not resume: $(tail -3 "$work/restored.log")"
"$compare" "$work/reference/checkpoint.pt" "$over/checkpoint.pt" || fail "the old run's checkpoint changed"
cmp -s "$work/reference/metrics.jsonl" "$over/metrics.jsonl" || fail "the old run's metrics changed"
echo "a killed --overwrite: the old run kept aside whole, named by --resume and by a new run, and resumed" \
  "as it was once moved back"

# Issue 41, item 7: a new run SIGKILLed before its first checkpoint leaves its config.json,
# tokenizer and metrics (no handler runs). A new run into that directory, without --overwrite,
# takes it over: it succeeds, and the directory then holds its files only, as a run's does.
early="$work/early"
"$bin" train "${tiny_flags[@]}" --steps 100000 --save-every 100000 --log-every 1 --output "$early" \
  >"$work/early.log" 2>&1 &
pid=$!
for _ in $(seq 3000); do
  [ "$(cat "$early/metrics.jsonl" 2>/dev/null | wc -l)" -ge 1 ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.01
done
kill -KILL "$pid" 2>/dev/null || fail "the early run ended by itself: $(tail -3 "$work/early.log")"
wait "$pid" 2>/dev/null
[ -f "$early/config.json" ] && [ ! -f "$early/checkpoint.pt" ] || fail "not killed before its checkpoint: $(ls -A "$early")"
"${train[@]}" --output "$early" >"$work/after_early.log" 2>&1 ||
  fail "a new run over a run killed before its first checkpoint failed: $(tail -3 "$work/after_early.log")"
[ "$(ls -A "$early")" = "$(ls -A "$work/reference")" ] ||
  fail "after the killed run: $(ls -A "$early"), a run holds $(ls -A "$work/reference")"
python3 - "$work/reference/metrics.jsonl" "$early/metrics.jsonl" <<'PY' || fail "the new run's metrics are not a fresh run's"
import json, sys
reference, new = ([(m["step"], m["loss"]) for m in map(json.loads, open(path))] for path in sys.argv[1:])
assert new == reference, f"{new[:3]}... against {reference[:3]}..."
PY
echo "a run killed before its first checkpoint: the next run into its directory takes it over, leaving its own files only"
