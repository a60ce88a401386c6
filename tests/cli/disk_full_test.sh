#!/usr/bin/env bash
# Fault injection: the disk fills up while `gradcache train` writes (a small tmpfs, so this
# needs root), in turn during the checkpoint, the tokenizer model, the metrics lines and the
# summary. Each time the run must end with status 1 and a message that names the file and
# says the disk is full, leave no temporary or torn file behind, and keep what was there
# before (the last checkpoint, the earlier metrics lines), so that --resume carries on.
# Without root (or where mounting is not allowed) it exits 77, which ctest reports as SKIPPED.
#
#   bash tests/cli/disk_full_test.sh path/to/gradcache WORK_DIR
set -u
bin=$1
work=$2
rm -rf "$work"
mkdir -p "$work/disk"
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=16m tmpfs "$work/disk" 2>/dev/null; then
  echo "SKIPPED: mounting a small tmpfs needs root"
  exit 77
fi
trap 'umount "$work/disk"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run="$work/disk/run"

# Fills the tmpfs with a file of zeros but for $1 KiB (tmpfs allocates whole 4 KiB pages).
fill_disk_leaving() {
  rm -f "$work/disk/filler"
  local avail
  avail=$(df --output=avail -k "$work/disk" | tail -1)
  dd if=/dev/zero of="$work/disk/filler" bs=1k count=$((avail - $1)) 2>/dev/null
}
# LOG FILE STATUS [DIR]: status 1, a message naming FILE and the full disk, and no temporary
# file left in DIR (default: the run directory).
expect_disk_full_error() {
  local dir=${4:-$run}
  [ "$3" -eq 1 ] || fail "$2: status $3, expected 1: $(tail -3 "$1")"
  grep -q "$2.*No space left on device" "$1" || fail "$2: no message naming it and the full disk: $(tail -3 "$1")"
  if ls "$dir"/*.tmp-* >/dev/null 2>&1; then fail "$2: a temporary file is left: $(ls "$dir")"; fi
}
# Every metrics line is whole JSON and the steps run 1, 2, ..., $2 without a gap or repeat.
expect_metrics_steps() {
  python3 - "$1" "$2" <<'EOF' || fail "metrics.jsonl after $3: see above"
import json, sys
path, last = sys.argv[1], int(sys.argv[2])
text = open(path).read()
assert text.endswith("\n"), f"{path} ends with a torn line: {text[-80:]!r}"
steps = [json.loads(line)["step"] for line in text.splitlines()]
assert steps == list(range(1, last + 1)), f"{path}: steps {steps}, expected 1..{last}"
EOF
}

source "$(dirname "$0")/tiny_task.sh"
write_tiny_task "$work"

# 1. The checkpoint. The disk is full but for the tokenizer's size and 16 KiB: the new
# tokenizer, config and metrics fit, the checkpoint (which holds the tokenizer too) does not.
"$bin" train "${tiny_flags[@]}" --steps 2 --output "$run" >"$work/first.log" 2>&1 ||
  fail "the first run failed: $(tail -3 "$work/first.log")"
checkpoint_before=$(md5sum <"$run/checkpoint.pt")
run_before=$(cd "$run" && md5sum config.json tokenizer.model metrics.jsonl)
room=$(( $(stat -c %s "$run/tokenizer.model") / 1024 + 16 ))
[ $(( $(stat -c %s "$run/checkpoint.pt") / 1024 )) -gt $((room + 8)) ] || fail "the checkpoint would fit in $room KiB"
fill_disk_leaving $room
"$bin" train "${tiny_flags[@]}" --steps 2 --overwrite --output "$run" >"$work/full.log" 2>&1
expect_disk_full_error "$work/full.log" checkpoint.pt.tmp $?
grep -q "disk full" "$work/full.log" || fail "no message about the full disk: $(tail -3 "$work/full.log")"
[ "$(md5sum <"$run/checkpoint.pt")" = "$checkpoint_before" ] || fail "the checkpoint that was there before changed"
# The failed --overwrite had claimed the directory: its config, tokenizer and metrics go, the old ones come back.
[ "$(cd "$run" && md5sum config.json tokenizer.model metrics.jsonl)" = "$run_before" ] ||
  fail "the old run's config, tokenizer or metrics were not put back"
if ls -d "$run"/.replaced-* >/dev/null 2>&1; then fail "the old run's files are still aside"; fi
echo "disk full while saving a checkpoint: status 1, a clear message, no temporary file, the previous run intact"

# 2. The tokenizer model, the first file a new run writes: over an earlier run, and into a
# new directory (where no tokenizer.model must appear at all).
tokenizer_before=$(md5sum <"$run/tokenizer.model")
fill_disk_leaving 0
"$bin" train "${tiny_flags[@]}" --steps 2 --overwrite --output "$run" >"$work/tokenizer.log" 2>&1
expect_disk_full_error "$work/tokenizer.log" tokenizer.model.tmp $?
[ "$(md5sum <"$run/tokenizer.model")" = "$tokenizer_before" ] || fail "the tokenizer that was there before changed"
[ "$(md5sum <"$run/checkpoint.pt")" = "$checkpoint_before" ] || fail "the checkpoint changed (tokenizer case)"
"$bin" train "${tiny_flags[@]}" --steps 2 --output "$work/disk/new" >"$work/tokenizer_new.log" 2>&1
expect_disk_full_error "$work/tokenizer_new.log" tokenizer.model.tmp $? "$work/disk/new"
[ -z "$(ls -A "$work/disk/new")" ] || fail "a new run on a full disk left files: $(ls "$work/disk/new")"
echo "disk full while saving the tokenizer: status 1, a clear message, no temporary file, the previous files intact"

# 3. The metrics lines. A run stopped by SIGINT (checkpoint at step k, metrics lines 1..k) is
# resumed with one page free (config.json is replaced first: it needs it for a moment): the
# lines fill the last page of metrics.jsonl and the free one, then one does not fit.
rm -rf "$run" "$work/disk/new" "$work/disk/filler"
steps=120  # more than two pages of lines (~150 bytes each) after step k
train=("$bin" train "${tiny_flags[@]}" --steps $steps --log-every 1 --output "$run")
"${train[@]}" >"$work/sig.log" 2>&1 &
pid=$!
for _ in $(seq 1000); do
  [ "$(cat "$run/metrics.jsonl" 2>/dev/null | wc -l)" -ge 3 ] && break
  sleep 0.01
done
kill -INT "$pid"
wait "$pid"
[ $? -eq 130 ] || fail "the run to resume did not stop on SIGINT: $(tail -3 "$work/sig.log")"
stopped_at=$(wc -l <"$run/metrics.jsonl")
metrics_before=$(cat "$run/metrics.jsonl")
checkpoint_before=$(md5sum <"$run/checkpoint.pt")
fill_disk_leaving 4
"${train[@]}" --resume >"$work/metrics.log" 2>&1
expect_disk_full_error "$work/metrics.log" metrics.jsonl $?
written=$(wc -l <"$run/metrics.jsonl")
[ "$written" -lt $steps ] || fail "the metrics of all $steps steps fit on the full disk"
expect_metrics_steps "$run/metrics.jsonl" "$written" "the failed write"
[ "$(head -n "$stopped_at" "$run/metrics.jsonl")" = "$metrics_before" ] || fail "the earlier metrics lines changed"
[ "$(md5sum <"$run/checkpoint.pt")" = "$checkpoint_before" ] || fail "the checkpoint changed (metrics case)"
rm -f "$work/disk/filler"
"${train[@]}" --resume >"$work/resume.log" 2>&1 || fail "--resume after the full disk: $(tail -3 "$work/resume.log")"
expect_metrics_steps "$run/metrics.jsonl" $steps "the resumed run"
echo "disk full while appending metrics (stopped at step $stopped_at, $written lines written): status 1, a clear" \
  "message, no torn line, the earlier lines and the checkpoint intact; --resume then finished the run"

# 4. The summary, written last: its temporary file, summary.json.tmp-PID, leads to /dev/full,
# where every write fails with ENOSPC (the tmpfs cannot fill up there alone: the checkpoint
# just before it replaces one of its own size). --resume of the finished run saves its
# checkpoint, then the summary. The shell makes the link with its own pid, then becomes the program.
summary_before=$(md5sum <"$run/summary.json")
bash -c 'ln -s /dev/full "$0/summary.json.tmp-$$" && exec "$@"' "$run" "${train[@]}" --resume >"$work/summary.log" 2>&1
expect_disk_full_error "$work/summary.log" summary.json.tmp $?
[ "$(md5sum <"$run/summary.json")" = "$summary_before" ] || fail "the summary that was there before changed"
echo "disk full while saving the summary: status 1, a clear message, no temporary file, the previous summary intact"
