#!/usr/bin/env bash
# gradcache export and encode end to end, on a tiny run: the exported TorchScript model, loaded
# in Python with torch.jit.load and fed ids tokenized with the sentencepiece module as
# retriever/model/tokenizer.cpp does, reproduces the .npy shards of `gradcache encode` (from the run
# and from the export, fp32 within 1e-6, fp16 within its precision); `train --model` continues
# from the export with the run's quality; bad input is refused and an interrupted encode leaves
# no output. SKIPPED (77) without a Python (GRADCACHE_PYTHON) with torch, numpy and sentencepiece.
# Usage: encode_export_test.sh GRADCACHE_BINARY WORK_DIR
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"
source "$(dirname "$0")/tiny_task.sh"
if ! "$python" -c "import torch, numpy, sentencepiece" 2>/dev/null; then
  echo "SKIPPED: $python lacks torch, numpy or sentencepiece"
  exit 77
fi

# A tiny run with evaluation data: passages d1..d96, their queries, and a few harder texts.
write_tiny_task "$work"
write_eval_set "$work"
printf 'long\t%s\n' "$(printf 'the red cat lives here %.0s' $(seq 1 20))" >>"$work/corpus.tsv"
printf 'titled\tCAFÉ  au LAIT\tA Title\nodd\t\x01\x02\n' >>"$work/corpus.tsv"
unset "tiny_flags[${#tiny_flags[@]}-1]" "tiny_flags[${#tiny_flags[@]}-2]"  # --eval false
"$bin" train --quick "${tiny_flags[@]}" "${eval_data[@]}" --output "$work/run" >"$work/run.out" 2>"$work/run.err"
expect_status 0 $? "quick train"

# Export, then encode from the run (5 shards of at most 25 rows) and from the export (fp16).
"$bin" export --run "$work/run" --output "$work/export" 2>"$work/export.err"
expect_status 0 $? "export"
for f in model.pt tokenizer.model export.json; do [ -s "$work/export/$f" ] || fail "export wrote no $f"; done
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --shard-size 25 --batch-size 8 \
  --output "$work/emb" 2>"$work/encode.err"
expect_status 0 $? "encode --run"
[ "$(ls "$work/emb"/embeddings_*.npy | wc -l)" = 4 ] || fail "expected 4 shards of 25 rows for 99 texts"
"$bin" encode --model "$work/export" --corpus "$work/corpus.tsv" --dtype fp16 --output "$work/emb16" \
  2>"$work/encode16.err"
expect_status 0 $? "encode --model --dtype fp16"

# Python: the exported model on the sentencepiece ids equals the shards.
cat >"$work/check.py" <<'PY'
import json, sys
import numpy, sentencepiece, torch
work = sys.argv[1]
export = json.load(open(f"{work}/export/export.json"))
sp = sentencepiece.SentencePieceProcessor(model_file=f"{work}/export/tokenizer.model")
model = torch.jit.load(f"{work}/export/{export['models']['passage']}")
model.eval()
texts = {}
for line in open(f"{work}/corpus.tsv", encoding="utf-8"):
    fields = [f.strip() for f in line.rstrip("\n").split("\t")]
    texts[fields[0]] = (fields[2] + " " + fields[1]) if len(fields) == 3 and fields[2] else fields[1]

def tokenize(text, max_len):  # retriever/model/tokenizer.cpp: no BOS/EOS, [1] when nothing, cut to max_len
    ids = sp.encode(text) if text else []
    return (ids or [1])[:max_len]

def check(directory, tolerance):
    manifest = json.load(open(f"{directory}/manifest.json"))
    total = 0
    for shard in manifest["shards"]:
        stored = numpy.load(f"{directory}/{shard['embeddings']}").astype(numpy.float32)
        ids = open(f"{directory}/{shard['ids']}", encoding="utf-8").read().split("\n")[:-1]
        tokens = [tokenize(texts[i], export["passage_max_len"]) for i in ids]
        width = max(map(len, tokens))
        input_ids = torch.tensor([t + [0] * (width - len(t)) for t in tokens])
        with torch.no_grad():
            mine = model(input_ids, (input_ids != 0).long()).numpy()
        error = float(numpy.abs(mine - stored).max())
        assert stored.shape == (shard["rows"], manifest["dim"]), stored.shape
        assert error <= tolerance, f"{directory}/{shard['embeddings']}: max difference {error} > {tolerance}"
        total += len(ids)
    assert total == manifest["rows"] == len(texts), (total, manifest["rows"], len(texts))
    print(f"{directory}: {total} rows, {len(manifest['shards'])} shards agree within {tolerance}")

check(f"{work}/emb", 1e-6)
check(f"{work}/emb16", 2e-3)
PY
"$python" "$work/check.py" "$work" >"$work/python.out" 2>"$work/python.err" || fail "Python check: $(tail -3 "$work/python.err")"
cat "$work/python.out"

# Training continues from the export: its untrained evaluation is the run's trained one.
"$bin" train --quick "${tiny_flags[@]}" "${eval_data[@]}" --model "$work/export/model.pt" \
  --tokenizer "$work/export/tokenizer.model" --output "$work/again" >"$work/again.out" 2>"$work/again.err"
expect_status 0 $? "train --model exported"
"$python" - "$work" <<'PY' || fail "train from the export did not start where the run ended"
import json, sys
work = sys.argv[1]
run, again = (json.load(open(f"{work}/{d}/summary.json")) for d in ("run", "again"))
before, after = run["trained"]["mrr@10"], again["untrained"]["mrr@10"]
print(f"run: untrained MRR@10 {run['untrained']['mrr@10']:.4f}, trained {before:.4f}; from the export: untrained {after:.4f}, trained {again['trained']['mrr@10']:.4f}")
assert abs(before - after) <= 1e-3, (before, after)
assert again["final_loss"] == again["final_loss"], "loss is NaN"
PY

# A tokenizer that does not match the model: one line naming both, no checkpoint written.
"$bin" train --quick --steps 1 --eval false --output "$work/largertok" >/dev/null 2>"$work/largertok.err"
expect_status 0 $? "training a larger tokenizer"
"$bin" train --quick "${tiny_flags[@]}" --eval false --model "$work/export/model.pt" \
  --tokenizer "$work/largertok/tokenizer.model" --output "$work/mismatch" >/dev/null 2>"$work/mismatch.err"
expect_status 1 $? "train --model with another model's tokenizer"
grep -q "largertok/tokenizer.model has [0-9]* pieces, but the model .*export/model.pt fails on token id" \
  "$work/mismatch.err" || fail "no message naming the mismatched tokenizer and model"
grep -q "Traceback" "$work/mismatch.err" && fail "the tokenizer mismatch printed a TorchScript traceback"
[ -e "$work/mismatch/checkpoint.pt" ] && fail "a refused run wrote a checkpoint"

# Bad input: one-line errors, exit 1 (2 for usage), nothing written.
"$bin" encode --run "$work/nowhere" --corpus "$work/corpus.tsv" --output "$work/x" 2>"$work/norun.err"
expect_status 1 $? "encode a missing run"
grep -q "no checkpoint at" "$work/norun.err" || fail "no message for a missing run"
"$bin" encode --run "$work/run" --corpus "$work/missing.tsv" --output "$work/x" 2>"$work/nocorpus.err"
expect_status 1 $? "encode a missing corpus"
grep -q "missing.tsv: cannot open" "$work/nocorpus.err" || fail "no message for a missing corpus"
[ -e "$work/x" ] && fail "a failed encode wrote --output"
"$bin" encode --corpus "$work/corpus.tsv" --output "$work/x" 2>"$work/nomodel.err"
expect_status 1 $? "encode without --run or --model"
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --output "$work/emb" 2>"$work/exists.err"
expect_status 1 $? "encode over an existing output"
grep -q -- "--overwrite" "$work/exists.err" || fail "no message suggesting --overwrite"
"$bin" export --run "$work/run" --output "$work/export" 2>"$work/exists2.err"
expect_status 1 $? "export over an existing output"
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --output "$work/run" --overwrite 2>"$work/notours.err"
expect_status 1 $? "encode --overwrite over a run directory"
[ -s "$work/run/checkpoint.pt" ] || fail "encode --overwrite removed a run directory"
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --output "$work/emb" --overwrite --shard-size 50 \
  2>"$work/overwrite.err"
expect_status 0 $? "encode --overwrite"
[ "$(ls "$work/emb"/embeddings_*.npy | wc -l)" = 2 ] || fail "--overwrite did not replace the old shards"
# Issue 27: --overwrite replaces only what the program provably wrote (the stamp lists every
# file): not a directory with a manifest.json of {} and the user's notes, and not one of ours
# that a user added a file to. A killed encode's partial directory (of a pid that is gone) is
# cleared by the next run.
mkdir -p "$work/fake" && echo '{}' >"$work/fake/manifest.json" && echo "mine" >"$work/fake/notes.txt"
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --output "$work/fake" --overwrite 2>"$work/fake.err"
expect_status 1 $? "encode --overwrite over a directory with an empty manifest"
[ -s "$work/fake/notes.txt" ] || fail "encode --overwrite removed a user's notes"
grep -q "stamp" "$work/fake.err" || fail "no message saying why the directory is not replaced: $(cat "$work/fake.err")"
echo "mine" >"$work/emb/notes.txt"
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --output "$work/emb" --overwrite 2>"$work/added.err"
expect_status 1 $? "encode --overwrite over an output a user added a file to"
grep -q "holds notes.txt" "$work/added.err" || fail "no message naming the added file: $(cat "$work/added.err")"
rm "$work/emb/notes.txt"
mkdir -p "$work/emb.partial-999999999" && touch "$work/emb.partial-999999999/embeddings_0.npy"
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --output "$work/emb" --overwrite --shard-size 50 2>/dev/null
expect_status 0 $? "encode --overwrite of its own output"
[ -e "$work/emb.partial-999999999" ] && fail "a dead process's partial directory was left"

# An interrupted encode (SIGINT between batches of a large corpus) exits 130 and leaves no output.
for i in $(seq 1 400); do cat "$work/corpus.tsv"; done | awk -F'\t' -v OFS='\t' '{$1 = $1 "_" NR; print}' >"$work/big.tsv"
"$bin" encode --run "$work/run" --corpus "$work/big.tsv" --batch-size 2 --shard-size 1000 --output "$work/big" \
  2>"$work/big.err" &
pid=$!
sleep 2
kill -INT $pid
wait $pid
expect_status 130 $? "encode interrupted by SIGINT"
ls -d "$work"/big* | grep -v big.tsv | grep -v big.err && fail "the interrupted encode left a directory"
echo "encode/export checks passed"
