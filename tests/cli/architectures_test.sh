#!/usr/bin/env bash
# Every built-in architecture through the program (--model-dir): the sentence-transformers
# directories of tests/hf/architectures.py (tiny random models made by transformers, with a
# tokenizer; decoders pad on the left and pool the last token) are trained (cache, dropout on),
# evaluated, exported, encoded and mined with; each export loads in Python's SentenceTransformer and encodes
# as `gradcache encode` did. One decoder and one encoder also train in the other modes and
# precisions, untied and on two processes; both train LoRA adapters, exported as PEFT's directory
# and merged. eval says which architecture, tokenizer and pooling
# it read. SKIPPED (77) without the references (the hf.architectures fixture) or sentence-transformers.
# Usage: architectures_test.sh GRADCACHE_BINARY WORK_DIR ARCHITECTURES_DIR
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"
models=$3
if [ -e "$models/unavailable.txt" ] || [ ! -d "$models/bert/st" ]; then
  echo "SKIPPED: no architecture references in $models ($(cat "$models/unavailable.txt" 2>/dev/null))"
  exit 77
fi
if ! "$python" -c "import sentence_transformers, numpy" 2>/dev/null; then
  echo "SKIPPED: $python lacks sentence-transformers or numpy"
  exit 77
fi
export HF_HUB_OFFLINE=1

# A task in the tiny tokenizers' words (w4 .. w95): query "wA wB" -> passage "wB wA wC".
for i in $(seq 0 47); do
  printf 'w%d w%d\tw%d w%d w%d\n' $((4 + i)) $((52 + i % 40)) $((52 + i % 40)) $((4 + i)) $((4 + (i * 7) % 90))
done >"$work/train.tsv"
write_eval_set "$work"

names=()
for dir in "$models"/*/st; do
  name=$(basename "$(dirname "$dir")")
  names+=("$name")
  train=("$bin" train --model-dir "$dir" --train-file "$work/train.tsv" --batch-size 16 --chunk-size 4 --lr 1e-3)
  "${train[@]}" --steps 3 "${eval_data[@]}" --output "$work/run_$name" >"$work/$name.out" 2>"$work/$name.err"
  expect_status 0 $? "train --model-dir ($name)"
  type=$(sed -n 's/.*"model_type": *"\([^"]*\)".*/\1/p' "$dir/config.json")
  grep -q "pretrained model $dir: $type, " "$work/$name.err" || fail "train did not describe the $name model as $type"
  "$bin" export --run "$work/run_$name" --output "$work/st_$name" 2>"$work/export_$name.err"
  expect_status 0 $? "export ($name)"
  "$bin" encode --run "$work/run_$name" --corpus "$work/corpus.tsv" --output "$work/emb_$name" 2>"$work/encode_$name.err"
  expect_status 0 $? "encode --run ($name)"
  "$bin" mine --model-dir "$dir" --train-file "$work/train.tsv" --negatives 2 --depth 2:20 \
    --output "$work/mined_$name.jsonl" >/dev/null 2>"$work/mine_$name.err"
  expect_status 0 $? "mine --model-dir ($name)"
  [ "$(wc -l <"$work/mined_$name.jsonl")" -eq 48 ] || fail "mine --model-dir ($name) wrote $(wc -l <"$work/mined_$name.jsonl") queries, expected 48"
done
[ "${#names[@]}" -ge 7 ] || fail "only ${#names[@]} architectures in $models"

# eval --model-dir names what it read.
"$bin" eval --model-dir "$models/qwen3/st" "${data[@]}" --eval-bm25 false >"$work/eval.out" 2>"$work/eval.err"
expect_status 0 $? "eval --model-dir (qwen3)"
grep -q "pretrained model $models/qwen3/st: qwen3, a WordPiece tokenizer padding on the left, lasttoken pooling, 2 Dense, normalised, 24 dimensions" \
  "$work/eval.err" || fail "eval --model-dir did not describe the model: $(grep 'pretrained model' "$work/eval.err")"

# The other modes and precisions, on a decoder and on an encoder.
for name in qwen3 xlm-roberta; do
  for flags in "--mode full" "--mode accumulate --sub-batch-size 4" "--precision bf16" "--untie" "--nproc 2" \
               "--loss streaming --tile 8"; do
    tag=$(echo "$name $flags" | tr -c 'a-z0-9\n' '_' | tr -d '\n')
    # shellcheck disable=SC2086
    "$bin" train --model-dir "$models/$name/st" --train-file "$work/train.tsv" --batch-size 16 --chunk-size 4 --steps 2 \
      --eval false $flags --output "$work/m_$tag" >"$work/m_$tag.out" 2>"$work/m_$tag.err"
    expect_status 0 $? "train --model-dir $name $flags"
    [ -s "$work/m_$tag/checkpoint.pt" ] || fail "train --model-dir $name $flags wrote no checkpoint"
  done
done

# SGPT's recipe (the seeds' example: BLOOM, weightedmean, --specb). Zero-shot and through a run
# (an lr so small that the weights stay the pretrained ones), each side encodes as
# sentence-transformers does on SGPT's bracketed tokenization (tests/hf/architectures.py
# specb_batch); without --specb it does not. --specb is refused without bracket tokens, without
# --model-dir, and by export to sentence-transformers (which cannot express it).
"$python" - "$models/sgpt/sgpt_expected.safetensors" "$work/sgpt_texts.tsv" <<'PY' || fail "cannot read the SGPT texts"
import json, sys
from safetensors import safe_open
texts = json.loads(safe_open(sys.argv[1], "pt").metadata()["texts"])
open(sys.argv[2], "w", encoding="utf-8").write("".join(f"t{i}\t{text}\n" for i, text in enumerate(texts)))
PY
sgpt=(--model-dir "$models/sgpt/st" --specb)
"$bin" train "${sgpt[@]}" --train-file "$work/train.tsv" --batch-size 16 --chunk-size 4 --steps 1 --lr 1e-30 \
  --eval false --output "$work/run_specb" >"$work/sgpt.out" 2>"$work/sgpt.err"
expect_status 0 $? "train --specb"
for side in query passage; do
  "$bin" encode "${sgpt[@]}" --side $side --corpus "$work/sgpt_texts.tsv" --batch-size 5 --output "$work/sgpt_$side" \
    2>>"$work/sgpt.err"
  expect_status 0 $? "encode --model-dir --specb --side $side"
  "$bin" encode --run "$work/run_specb" --side $side --corpus "$work/sgpt_texts.tsv" --output "$work/sgpt_run_$side" \
    2>>"$work/sgpt.err"
  expect_status 0 $? "encode --run (a --specb run) --side $side"
done
"$bin" encode --model-dir "$models/sgpt/st" --corpus "$work/sgpt_texts.tsv" --output "$work/sgpt_plain" 2>>"$work/sgpt.err"
expect_status 0 $? "encode --model-dir (sgpt, no --specb)"
"$python" - "$models/sgpt/sgpt_expected.safetensors" "$work" <<'PY' >>"$work/sgpt.out" 2>&1 || fail "SGPT check: $(tail -3 "$work/sgpt.out")"
import json, sys
import numpy
from safetensors.numpy import load_file
expected, work = load_file(sys.argv[1]), sys.argv[2]
def worst(directory, key):
    manifest = json.load(open(f"{directory}/manifest.json"))
    error = 0.0
    for shard in manifest["shards"]:
        rows = [int(i[1:]) for i in open(f"{directory}/{shard['ids']}", encoding="utf-8").read().split()]
        error = max(error, float(numpy.abs(numpy.load(f"{directory}/{shard['embeddings']}") - expected[key][rows]).max()))
    return error
for side, key in (("query", "query_embeddings"), ("passage", "document_embeddings")):
    for directory in (f"{work}/sgpt_{side}", f"{work}/sgpt_run_{side}"):
        # fp32, 2 layers, unnormalised vectors of norm ~1-5, batches padded otherwise: a few ulps
        assert worst(directory, key) <= 2e-6, f"{directory}: max difference {worst(directory, key)}"
assert worst(f"{work}/sgpt_plain", "document_embeddings") > 1e-2, "without --specb the brackets are still there"
print("sgpt: --specb encodes as SGPT's tokenization in sentence-transformers")
PY
# The seeds' whole recipe: --specb with --train-params bias (their --freezenonbias, BitFit) on BLOOM
# (SGPT's fixture); the log says what trains (test_trainable.cpp checks that the rest stays put).
"$bin" train "${sgpt[@]}" --train-params bias --train-file "$work/train.tsv" --batch-size 16 --chunk-size 4 --steps 2 \
  --eval false --output "$work/run_bitfit" >"$work/bitfit.out" 2>"$work/bitfit.err"
expect_status 0 $? "train --specb --train-params bias"
grep -q "parameters train (--train-params bias)" "$work/bitfit.err" || fail "bias-only: $(tail -3 "$work/bitfit.err")"
"$bin" export --run "$work/run_specb" --output "$work/st_specb" 2>"$work/sgpt_export.err"
expect_status 1 $? "export of a --specb run"
grep -q "trained with --specb" "$work/sgpt_export.err" || fail "export did not say why: $(cat "$work/sgpt_export.err")"
[ ! -e "$work/st_specb" ] || fail "a refused export left $work/st_specb"
"$bin" encode --model-dir "$models/bloom/st" --specb --corpus "$work/sgpt_texts.tsv" --output "$work/x" 2>"$work/x.err"
expect_status 1 $? "--specb with a tokenizer without brackets"
grep -q 'has no token for "\["' "$work/x.err" || fail "--specb without brackets: $(cat "$work/x.err")"
"$bin" train --specb --train-file "$work/train.tsv" --steps 1 --output "$work/x" 2>"$work/x.err"
expect_status 1 $? "train --specb without --model-dir"
grep -q "give --model-dir, or drop --specb" "$work/x.err" || fail "train --specb alone: $(cat "$work/x.err")"

# LoRA (issue 39) on a decoder and an encoder: the adapters alone train (LoRA dropout on); export
# writes PEFT's directory by default and, with --merge, a plain sentence-transformers one; the
# adapter loaded back with --adapter encodes as the run does; both load in Python below.
lora_names=()
for name in qwen3 bert; do
  "$bin" train --model-dir "$models/$name/st" --train-file "$work/train.tsv" --batch-size 16 --chunk-size 4 --lr 1e-2 \
    --lora-rank 4 --lora-alpha 8 --lora-dropout 0.1 --steps 3 --eval false --output "$work/run_lora_$name" \
    >"$work/lora_$name.out" 2>"$work/lora_$name.err"
  expect_status 0 $? "train --lora-rank ($name)"
  grep -q "LoRA adapters of rank 4 on " "$work/lora_$name.err" || fail "LoRA ($name): the log does not say so: $(tail -3 "$work/lora_$name.err")"
  grep -q "parameters train (LoRA adapters only)" "$work/lora_$name.err" || fail "LoRA ($name): $(tail -3 "$work/lora_$name.err")"
  "$bin" export --run "$work/run_lora_$name" --output "$work/peft_$name" 2>"$work/export_peft_$name.err"
  expect_status 0 $? "export of a LoRA run ($name)"
  [ -f "$work/peft_$name/adapter_config.json" ] && [ -f "$work/peft_$name/adapter_model.safetensors" ] ||
    fail "export of a LoRA run wrote no PEFT directory: $(ls "$work/peft_$name")"
  "$bin" export --run "$work/run_lora_$name" --merge --output "$work/st_lora_$name" 2>"$work/export_merged_$name.err"
  expect_status 0 $? "export --merge ($name)"
  "$bin" encode --run "$work/run_lora_$name" --corpus "$work/corpus.tsv" --output "$work/emb_lora_$name" 2>/dev/null
  expect_status 0 $? "encode --run of a LoRA run ($name)"
  "$bin" encode --model-dir "$models/$name/st" --adapter "$work/peft_$name" --corpus "$work/corpus.tsv" \
    --output "$work/emb_adapter_$name" 2>/dev/null
  expect_status 0 $? "encode --model-dir --adapter ($name)"
  cmp -s "$work/emb_lora_$name/$(ls "$work/emb_lora_$name" | grep -m1 npy)" \
    "$work/emb_adapter_$name/$(ls "$work/emb_adapter_$name" | grep -m1 npy)" ||
    fail "LoRA ($name): --adapter of the exported directory does not encode as the run"
  lora_names+=("lora_$name")
done
# Training continues from the exported adapter (--adapter), on a base held in bf16.
"$bin" train --model-dir "$models/qwen3/st" --adapter "$work/peft_qwen3" --base-precision bf16 --train-file "$work/train.tsv" \
  --batch-size 16 --chunk-size 4 --steps 2 --eval false --output "$work/run_adapter" >/dev/null 2>"$work/adapter.err"
expect_status 0 $? "train --adapter --base-precision bf16"
grep -q "LoRA adapters of rank 4 on " "$work/adapter.err" || fail "train --adapter: $(tail -3 "$work/adapter.err")"
grep -q "frozen ones held in bf16 (--base-precision)" "$work/adapter.err" || fail "--base-precision bf16: $(tail -3 "$work/adapter.err")"
"$bin" train --model-dir "$models/qwen3/st" --adapter "$work/peft_qwen3" --lora-rank 8 --train-file "$work/train.tsv" \
  --steps 1 --output "$work/x" 2>"$work/x.err"
expect_status 1 $? "--adapter with --lora-rank"
grep -q "adapter_config.json gives the rank" "$work/x.err" || fail "--adapter with --lora-rank: $(cat "$work/x.err")"
"$bin" train --model-dir "$models/qwen3/st" --base-precision bf16 --train-file "$work/train.tsv" \
  --steps 1 --output "$work/x" 2>"$work/x.err"
expect_status 1 $? "--base-precision bf16 with every weight training"
grep -q "but every weight trains" "$work/x.err" || fail "--base-precision bf16 alone: $(cat "$work/x.err")"
"$bin" export --run "$work/run_qwen3" --format peft --output "$work/x" 2>"$work/x.err"
expect_status 1 $? "export --format peft of a run without LoRA"
grep -q "trained no LoRA adapters" "$work/x.err" || fail "export --format peft without LoRA: $(cat "$work/x.err")"
"$bin" train --model-dir "$models/bert/st" --lora-rank 4 --lora-targets nothing_here --train-file "$work/train.tsv" \
  --steps 1 --output "$work/x" 2>"$work/x.err"
expect_status 1 $? "--lora-targets that match nothing"
grep -q "match no linear layer of this bert model; its linear layers are named dense, key, query, value" "$work/x.err" ||
  fail "--lora-targets matching nothing: $(cat "$work/x.err")"
"$bin" train --model-dir "$models/bert/st" --lora-rank 4 --train-params bias --train-file "$work/train.tsv" \
  --steps 1 --output "$work/x" 2>"$work/x.err"
expect_status 1 $? "--lora-rank with --train-params"
grep -q "with LoRA only the adapters train" "$work/x.err" || fail "--lora-rank with --train-params: $(cat "$work/x.err")"

# Python: the largest difference between a model's encode and the shards `gradcache encode` wrote
# to EMB (imported by the two checks below, which run from $work).
cat >"$work/emb_diff.py" <<'PY'
import json
import numpy
def max_difference(model, emb, texts):
    manifest = json.load(open(f"{emb}/manifest.json"))
    worst = 0.0
    for shard in manifest["shards"]:
        stored = numpy.load(f"{emb}/{shard['embeddings']}")
        ids = open(f"{emb}/{shard['ids']}", encoding="utf-8").read().split("\n")[:-1]
        theirs = model.encode([texts[i] for i in ids], batch_size=7, convert_to_numpy=True)
        worst = max(worst, float(numpy.abs(theirs - stored).max()))
    return worst
PY
# Each export loads in SentenceTransformer and encodes the corpus as `gradcache encode` did.
cat >"$work/check.py" <<'PY'
import sys
from sentence_transformers import SentenceTransformer
from emb_diff import max_difference
work, names = sys.argv[1], sys.argv[2:]
texts = dict(line.rstrip("\n").split("\t", 1) for line in open(f"{work}/corpus.tsv", encoding="utf-8"))
for name in names:
    model = SentenceTransformer(f"{work}/st_{name}", device="cpu")
    worst = max_difference(model, f"{work}/emb_{name}", texts)
    # fp32, 2-3 layers, batches padded otherwise: a few ulps of unit-norm vectors.
    assert worst <= 2e-6, f"{name}: max difference {worst}"
    print(f"{name}: the export encodes as gradcache encode (max difference {worst:.2e})")
PY
# The PEFT directories, loaded onto the base model by sentence-transformers (PEFT underneath).
cat >"$work/check_peft.py" <<'PY'
import sys
from sentence_transformers import SentenceTransformer
from emb_diff import max_difference
work, models, names = sys.argv[1], sys.argv[2], sys.argv[3:]
texts = dict(line.rstrip("\n").split("\t", 1) for line in open(f"{work}/corpus.tsv", encoding="utf-8"))
for name in names:
    model = SentenceTransformer(f"{models}/{name}/st", device="cpu")
    model.load_adapter(f"{work}/peft_{name}")
    worst = max_difference(model, f"{work}/emb_lora_{name}", texts)
    assert worst <= 2e-6, f"{name}: the PEFT adapter encodes differently (max difference {worst})"
    print(f"{name}: the PEFT adapter, loaded onto the base, encodes as gradcache encode (max difference {worst:.2e})")
PY
"$python" "$work/check_peft.py" "$work" "$models" qwen3 bert >"$work/peft.out" 2>"$work/peft.err" ||
  fail "PEFT check: $(tail -3 "$work/peft.err")"
cat "$work/peft.out"
"$python" "$work/check.py" "$work" "${names[@]}" "${lora_names[@]}" >"$work/python.out" 2>"$work/python.err" ||
  fail "Python check: $(tail -3 "$work/python.err")"
cat "$work/python.out"
cat "$work/sgpt.out"
echo "architectures: ${names[*]}: train, export, encode = SentenceTransformer.encode; 12 mode/precision runs; --specb; LoRA (qwen3, bert): PEFT directory and --merge"
