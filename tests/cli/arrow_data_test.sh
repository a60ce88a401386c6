#!/usr/bin/env bash
# Parquet, Arrow files and datasets' save_to_disk directories as --train-file (arrow_data.py
# writes them with pyarrow and datasets from the tiny task): each trains exactly the batches of
# the same pairs in JSONL (the same loss at every step, to the last digit); --columns picks the
# columns; a resumed run refuses a shard that changed; bad files are refused naming the file,
# the row or the columns found, or skipped and counted with --on-bad-line skip. Several data
# sets (--train-file A,B with --mix): each batch from one, as the rule says, counted per data set,
# the same with 2 processes; bad mixes refused.
# Usage: arrow_data_test.sh GRADCACHE_BINARY WORK_DIR
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"
source "$(dirname "$0")/tiny_task.sh"

# The data are written by the project's Python when the build's has no pyarrow (LibTorch 1.13's build).
"$python" -c "import pyarrow, datasets" 2>/dev/null || python=$(cd "$(dirname "$0")/../.." && pwd)/.venv/bin/python
"$python" -c "import pyarrow, datasets" 2>/dev/null || { echo "SKIPPED: $python has no pyarrow/datasets"; exit 77; }
write_tiny_task "$work"
"$python" "$(dirname "$0")/arrow_data.py" "$work" >"$work/write.out" 2>&1 || fail "arrow_data.py"

[ "${tiny_flags[0]}" = --train-file ] || fail "tiny_task.sh's flags no longer start with --train-file"
flags=("${tiny_flags[@]:2}" --log-every 1 --steps 6)  # the tiny run's flags but its data

losses() {  # run directory: every step's loss, as metrics.jsonl has it
  "$python" -c 'import json,sys; print(" ".join(repr(json.loads(l)["loss"]) for l in open(sys.argv[1]) if "loss" in json.loads(l)))' \
    "$1/metrics.jsonl"
}

"$bin" train "${flags[@]}" --train-file "$work/pairs.jsonl" --output "$work/jsonl" >"$work/jsonl.out" 2>&1
expect_status 0 $? "train on pairs.jsonl"
reference=$(losses "$work/jsonl")
[ -n "$reference" ] || fail "no losses in $work/jsonl/metrics.jsonl"

check_same() {  # name, data, extra flags...: trains the reference's batches
  local name=$1 data=$2
  shift 2
  "$bin" train "${flags[@]}" --train-file "$data" "$@" --output "$work/$name" >"$work/$name.out" 2>&1
  expect_status 0 $? "train on $data"
  [ "$(losses "$work/$name")" = "$reference" ] ||
    fail "$name: losses $(losses "$work/$name"), expected those of the JSONL run: $reference"
  grep -q "indexed in $data" "$work/$name.out" || fail "$name: the log does not say where the pairs are read from"
}
check_same parquet "$work/st.parquet"
check_same feather "$work/tevatron.arrow"
check_same hf "$work/hf_dataset"
check_same shards "$work/shards"
check_same named "$work/named.parquet" --columns q,p

# Refused before training, naming the file and what to do; nothing written.
refused() {  # name, expected message, train flags...
  local name=$1 message=$2
  shift 2
  "$bin" train "${flags[@]}" "$@" --output "$work/$name" >"$work/$name.out" 2>"$work/$name.err"
  expect_status 1 $? "$name"
  grep -qF -- "$message" "$work/$name.err" || fail "$name: no message with '$message'"
  [ -e "$work/$name/metrics.jsonl" ] && fail "$name: trained"
  return 0
}
refused extra_int "the columns found: q (string), p (string), extra (int64)" --train-file "$work/named.parquet"
grep -q -- "--columns QUERY,POSITIVE" "$work/extra_int.err" || fail "extra_int: the message does not name --columns"
refused missing_column "no column named 'nope'" --train-file "$work/named.parquet" --columns q,nope
refused columns_jsonl "--columns names the columns of Parquet or Arrow training data" \
  --train-file "$work/pairs.jsonl" --columns a,b
refused truncated "truncated.parquet: not a readable Parquet file" --train-file "$work/bad/truncated.parquet"
refused not_parquet "text.parquet: not a Parquet file (it does not begin with PAR1)" --train-file "$work/bad/text.parquet"
refused numbers "the query column x holds int64, not text" --train-file "$work/bad/numbers.parquet"
refused lost_shard "data-00001-of-00002.arrow: a shard of" --train-file "$work/bad/lost_shard"
refused null_positive "holes.parquet: row 3 (columns anchor, positive): \"positives\"[0] must be a string" \
  --train-file "$work/bad/holes.parquet"

# --on-bad-line skip: the two bad rows of 20 counted and named, the rest trained.
"$bin" train "${flags[@]}" --train-file "$work/bad/holes.parquet" --on-bad-line skip \
  --output "$work/skip" >"$work/skip.out" 2>&1
expect_status 0 $? "--on-bad-line skip on holes.parquet"
grep -q "holes.parquet: skipped 2 of 20 lines" "$work/skip.out" || fail "--on-bad-line skip: no count of the rows skipped"

# A resumed run reads the same shards or refuses: one shard rewritten with other rows.
"$bin" train "${flags[@]}" --train-file "$work/hf_dataset" --output "$work/resumed" >"$work/resumed.out" 2>&1
expect_status 0 $? "train on hf_dataset"
"$python" - "$work/hf_dataset/data-00001-of-00002.arrow" <<'PY' || fail "rewriting a shard"
import sys, pyarrow as pa
path = sys.argv[1]
table = pa.ipc.open_stream(open(path, "rb").read()).read_all()
table = table.set_column(0, "query", pa.array([q + " changed" for q in table.column("query").to_pylist()]))
with pa.ipc.new_stream(path, table.schema) as writer:
    writer.write_table(table)
PY
"$bin" train "${flags[@]}" --train-file "$work/hf_dataset" --output "$work/resumed" --resume \
  >"$work/resume.out" 2>"$work/resume.err"
expect_status 1 $? "--resume on a changed shard"
grep -q "shard data-00001-of-00002.arrow .*/data-00001-of-00002.arrow: was" "$work/resume.err" || fail "--resume: the message does not name the changed shard"
grep -q "data-00000-of-00002.arrow" "$work/resume.err" && fail "--resume: the message names a shard that did not change"
# Several data sets: the JSONL and the Parquet copy of the 96 pairs, 6 batches each an epoch.
mixed=("${tiny_flags[@]:2}" --log-every 1 --steps 12 --train-file "$work/pairs.jsonl,$work/st.parquet")
datasets() {  # run directory: each step's data set, from metrics.jsonl
  "$python" -c 'import json,sys; print(" ".join(json.loads(l).get("dataset", "-") for l in open(sys.argv[1]) if "loss" in json.loads(l)))' \
    "$1/metrics.jsonl"
}
"$bin" train "${mixed[@]}" --mix round-robin --output "$work/round_robin" >"$work/round_robin.out" 2>&1
expect_status 0 $? "train --mix round-robin"
[ "$(datasets "$work/round_robin")" = "pairs st pairs st pairs st pairs st pairs st pairs st" ] ||
  fail "--mix round-robin: batches from $(datasets "$work/round_robin")"
"$python" -c 'import json,sys; s = json.load(open(sys.argv[1])); assert s["batches_per_dataset"] == {"pairs": 6, "st": 6}, s' \
  "$work/round_robin/summary.json" || fail "--mix round-robin: summary.json's batches_per_dataset"
grep -q "from 2 data sets: pairs, 96 indexed in" "$work/round_robin.out" || fail "--mix: the log does not name the data sets"
"$bin" train "${mixed[@]}" --output "$work/proportional" >"$work/proportional.out" 2>&1
expect_status 0 $? "train on two data sets (--mix proportional)"
order=$(datasets "$work/proportional")
[ "$(tr ' ' '\n' <<<"$order" | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')" = "6 6 " ] ||
  fail "--mix proportional: 6 batches of each expected an epoch, got $order"
[ "$order" != "$(datasets "$work/round_robin")" ] || fail "--mix proportional drew the round-robin order"
# Two processes draw the same batches (each its share of every batch).
"$bin" train "${mixed[@]}" --nproc 2 --output "$work/mixed_nproc" >"$work/mixed_nproc.out" 2>&1
expect_status 0 $? "train --nproc 2 on two data sets"
[ "$(datasets "$work/mixed_nproc")" = "$order" ] || fail "--nproc 2 drew other data sets: $(datasets "$work/mixed_nproc")"
refused mix_weights "--mix 3,1,1: 3 weights for 2 --train-file data sets" --train-file "$work/pairs.jsonl,$work/st.parquet" \
  --mix 3,1,1
refused mix_one "--mix round-robin mixes several data sets" --train-file "$work/pairs.jsonl" --mix round-robin
head -n 5 "$work/pairs.jsonl" >"$work/few.jsonl"
refused mix_small "the data set few has 5 examples, fewer than a batch" --train-file "$work/pairs.jsonl,$work/few.jsonl"
echo "arrow data: all checks passed"
