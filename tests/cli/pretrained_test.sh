#!/usr/bin/env bash
# A pretrained sentence-transformers model end to end (--model-dir), on the tiny random BERT of
# tests/hf/fixtures: zero-shot eval; fine-tuning in every mode (cache, accumulate, full), bf16,
# --untie and --nproc 2; eval of the checkpoint gives train's own table; --resume continues;
# export --format sentence-transformers loads in Python's SentenceTransformer and encodes as
# `gradcache encode` does (from the run and from the export); the export, read back with
# --model-dir, gives the checkpoint's metrics (the round trip); mine --model-dir; bad input is
# refused with a message that names it. SKIPPED (77) without a Python (GRADCACHE_PYTHON) with
# sentence-transformers.
# Usage: pretrained_test.sh GRADCACHE_BINARY WORK_DIR
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"
source "$(dirname "$0")/tiny_task.sh"
model="$(cd "$(dirname "$0")/../hf/fixtures/tiny_bert" && pwd)"
if ! "$python" -c "import sentence_transformers, numpy" 2>/dev/null; then
  echo "SKIPPED: $python lacks sentence-transformers or numpy"
  exit 77
fi
export HF_HUB_OFFLINE=1

write_tiny_task "$work"
write_eval_set "$work"
printf 'long\t%s\nodd\tCAFÉ  au LAIT 中文 \x01\n' "$(printf 'the red cat lives here %.0s' $(seq 1 80))" >>"$work/corpus.tsv"
train=("$bin" train --model-dir "$model" --train-file "$work/train.tsv" --batch-size 16 --chunk-size 8)
metric() { "$python" -c "import json, sys; print('%.6f %.6f' % tuple(json.load(open(sys.argv[1]))[k] for k in ('recall@10', 'mrr@10')))" "$1"; }

# Zero-shot: the model as it is.
"$bin" eval --model-dir "$model" "${data[@]}" --json >"$work/zero.json" 2>"$work/zero.err"
expect_status 0 $? "eval --model-dir (zero-shot)"

# Fine-tuning (cache, dropout on), evaluated by train; eval --checkpoint gives the same figures.
"${train[@]}" --steps 6 "${eval_data[@]}" --output "$work/run" >"$work/run.out" 2>"$work/run.err"
expect_status 0 $? "train --model-dir"
grep -q "pretrained model $model: bert" "$work/run.err" || fail "train did not say which model it loaded"
[ -s "$work/run/tokenizer.json" ] || fail "the run holds no tokenizer.json"
"$bin" eval --checkpoint "$work/run" "${data[@]}" --json --eval-bm25 false >"$work/run.json" 2>"$work/run_eval.err"
expect_status 0 $? "eval --checkpoint of a --model-dir run"
trained=$(awk '$1 == "trained" {printf "%.4f %.4f", $3, $5}' "$work/run.out")
[ "$trained" = "$(metric "$work/run.json" | awk '{printf "%.4f %.4f", $1, $2}')" ] ||
  fail "eval --checkpoint ($(metric "$work/run.json")) disagrees with train's table ($trained)"
[ "$(metric "$work/run.json")" != "$(metric "$work/zero.json")" ] || fail "fine-tuning changed nothing"
zero=$(awk '$1 == "zero-shot" {printf "%.4f %.4f", $3, $5}' "$work/run.out")
[ "$zero" = "$(metric "$work/zero.json" | awk '{printf "%.4f %.4f", $1, $2}')" ] ||
  fail "train's zero-shot row ($zero) disagrees with eval --model-dir ($(metric "$work/zero.json"))"

# Every mode, bf16, --untie, two processes: each trains and writes its checkpoint.
for flags in "--mode accumulate --sub-batch-size 4" "--mode full" "--precision bf16" "--untie" "--nproc 2" \
             "--loss streaming --tile 8" "--query-prompt query: --passage-prompt passage:"; do
  name=$(echo "$flags" | tr -c 'a-z0-9\n' '_' | tr -d '\n')
  # shellcheck disable=SC2086
  "${train[@]}" --steps 2 --eval false $flags --output "$work/m_$name" >"$work/m_$name.out" 2>"$work/m_$name.err"
  expect_status 0 $? "train --model-dir $flags"
  [ -s "$work/m_$name/checkpoint.pt" ] || fail "train --model-dir $flags wrote no checkpoint"
done

# --resume: a run stopped at step 4 continues to 6 (the data order and the model's state restored).
"${train[@]}" --steps 6 --save-every 2 --eval false --output "$work/resumed" >/dev/null 2>"$work/resumed1.err"
expect_status 0 $? "train for --resume"
"${train[@]}" --steps 6 --save-every 2 --eval false --output "$work/resumed" --resume >"$work/resume.out" \
  2>"$work/resume.err"
expect_status 0 $? "train --resume of a finished --model-dir run"

# Export as a sentence-transformers directory; encode from the run and from the export.
"$bin" export --run "$work/run" --output "$work/st" 2>"$work/export.err"
expect_status 0 $? "export (a --model-dir run: sentence-transformers)"
for f in config.json model.safetensors modules.json tokenizer.json 1_Pooling/config.json sentence_bert_config.json; do
  [ -s "$work/st/$f" ] || fail "the export has no $f"
done
"$bin" export --run "$work/run" --format torchscript --output "$work/ts" 2>"$work/export_ts.err"
expect_status 1 $? "export --format torchscript of a --model-dir run"
grep -q "export it with --format sentence-transformers" "$work/export_ts.err" || fail "export --format torchscript: no advice"
[ ! -e "$work/ts" ] || fail "a refused export left $work/ts"
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --shard-size 40 --output "$work/emb_run" 2>"$work/enc1.err"
expect_status 0 $? "encode --run (a --model-dir run)"
# (--passage-max-len beyond the model's positions: the manifest records what was used, issue 41)
"$bin" encode --model-dir "$work/st" --corpus "$work/corpus.tsv" --passage-max-len 1000000000 --output "$work/emb_st" \
  2>"$work/enc2.err"
expect_status 0 $? "encode --model-dir (the export)"
"$python" -c "import json, sys; sys.exit(not 0 < json.load(open(sys.argv[1]))['max_len'] <= 64)" "$work/emb_st/manifest.json" ||
  fail "encode --passage-max-len 1e9 recorded a max_len the model cannot use: $(cat "$work/emb_st/manifest.json")"

# An untied run: one directory per side; both at once is refused.
untied="$work/m___untie"
"$bin" export --run "$untied" --side passage --output "$work/st_passage" 2>"$work/export_side.err"
expect_status 0 $? "export --side passage of an untied run"
[ -s "$work/st_passage/model.safetensors" ] || fail "export --side passage wrote no model.safetensors"
"$bin" export --run "$untied" --output "$work/st_both" 2>"$work/export_both.err"
expect_status 1 $? "export of both sides of an untied run into one directory"
grep -q -- "--side query and --side passage" "$work/export_both.err" || fail "untied export: no advice"

# A run's prompts go into its export (checked from Python below).
"$bin" export --run "$work/m___query_prompt_query____passage_prompt_passage_" --output "$work/st_prompt" \
  2>"$work/export_prompt.err"
expect_status 0 $? "export of a run with prompts"

# Python: SentenceTransformer(export) encodes the corpus as both encode runs did.
cat >"$work/check.py" <<'PY'
import json, sys
import numpy
from sentence_transformers import SentenceTransformer
work = sys.argv[1]
model = SentenceTransformer(f"{work}/st", device="cpu")
texts = {}
for line in open(f"{work}/corpus.tsv", encoding="utf-8"):
    key, text = line.rstrip("\n").split("\t", 1)
    texts[key] = text.strip()
for directory in ("emb_run", "emb_st"):
    manifest = json.load(open(f"{work}/{directory}/manifest.json"))
    rows = 0
    for shard in manifest["shards"]:
        stored = numpy.load(f"{work}/{directory}/{shard['embeddings']}")
        ids = open(f"{work}/{directory}/{shard['ids']}", encoding="utf-8").read().split("\n")[:-1]
        theirs = model.encode([texts[i] for i in ids], batch_size=7, convert_to_numpy=True)
        error = float(numpy.abs(theirs - stored).max())
        # fp32, 2 layers, batches padded differently: a few ulps of the unit-norm vectors.
        assert error <= 2e-6, f"{directory}/{shard['embeddings']}: max difference {error}"
        rows += len(ids)
    assert rows == len(texts) == manifest["rows"], (rows, len(texts), manifest["rows"])
    print(f"{directory}: {rows} rows equal SentenceTransformer.encode within 2e-6")
prompts = SentenceTransformer(f"{work}/st_prompt", device="cpu").prompts
assert prompts.get("query") == "query:" and prompts.get("document") == "passage:", prompts
PY
"$python" "$work/check.py" "$work" >"$work/python.out" 2>"$work/python.err" ||
  fail "Python check: $(tail -3 "$work/python.err")"

# The round trip: the export read back as a model directory scores as the checkpoint does.
"$bin" eval --model-dir "$work/st" "${data[@]}" --json --eval-bm25 false >"$work/st.json" 2>"$work/st_eval.err"
expect_status 0 $? "eval --model-dir of the export"
[ "$(metric "$work/st.json")" = "$(metric "$work/run.json")" ] ||
  fail "the export scores $(metric "$work/st.json"), its checkpoint $(metric "$work/run.json")"

# Mining with the pretrained model.
"$bin" mine --model-dir "$model" --train-file "$work/train.tsv" --corpus "$work/corpus.tsv" --negatives 1 \
  --output "$work/mined.jsonl" 2>"$work/mine.err"
expect_status 0 $? "mine --model-dir"
[ "$(wc -l <"$work/mined.jsonl")" -gt 0 ] || fail "mine --model-dir wrote nothing"

# Bad input: each refused (exit 1 or 2), naming what is wrong, with nothing written.
mkdir -p "$work/t5" && cp -r "$model"/. "$work/t5/"
sed -i 's/"model_type": "bert"/"model_type": "t5"/' "$work/t5/config.json"
head -c 1000 "$model/model.safetensors" >"$work/truncated.safetensors"
mkdir -p "$work/truncated" && cp -r "$model"/. "$work/truncated/" && cp "$work/truncated.safetensors" "$work/truncated/model.safetensors"
check_refused() {  # what, expected text, command...
  local what=$1 text=$2; shift 2
  "$@" >"$work/bad.out" 2>"$work/bad.err"
  local status=$?
  [ "$status" = 1 ] || [ "$status" = 2 ] || fail "$what: exit status $status, expected 1 or 2"
  grep -qF -- "$text" "$work/bad.err" || fail "$what: the message does not say '$text': $(head -3 "$work/bad.err")"
  grep -q "frame #" "$work/bad.err" && fail "$what: a LibTorch backtrace reached the user"
  return 0
}
check_refused "a missing directory" "$work/nowhere" "$bin" eval --model-dir "$work/nowhere" "${data[@]}"
check_refused "model_type t5" "t5" "${train[@]/"$model"/"$work/t5"}" --steps 1 --output "$work/bad_run"
check_refused "a truncated safetensors" "model.safetensors" "${train[@]/"$model"/"$work/truncated"}" --steps 1 --output "$work/bad_run"
check_refused "--dim with --model-dir" "--dim" "${train[@]}" --dim 32 --steps 1 --output "$work/bad_run"
check_refused "--model-dir and --checkpoint" "give one of --checkpoint" "$bin" eval --model-dir "$model" --checkpoint "$work/run" "${data[@]}"
check_refused "--query-prompt without --model-dir" "go with --model-dir" "$bin" eval --checkpoint "$work/run" --query-prompt "q: " "${data[@]}"
[ ! -e "$work/bad_run/checkpoint.pt" ] || fail "a refused run wrote a checkpoint"
echo "pretrained: zero-shot, 8 trainings, resume, export, encode (= SentenceTransformer.encode), round trip, mine, 6 refusals"
