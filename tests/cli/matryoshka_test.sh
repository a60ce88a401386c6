#!/usr/bin/env bash
# --matryoshka end to end on a tiny run: training refuses bad prefixes naming the flag (for a
# TorchScript --model too, whose width only running it tells), reports
# a row per prefix (stdout and summary.json); eval reports them too and evaluates one with
# --dim; encode and export --dim M write M-dimensional unit vectors, the exported model (loaded
# in Python) reproducing the encoded shards; M larger than the width is refused, nothing
# written. SKIPPED (77) without a Python (GRADCACHE_PYTHON) with torch and numpy.
# Usage: matryoshka_test.sh GRADCACHE_BINARY WORK_DIR
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"
source "$(dirname "$0")/tiny_task.sh"
if ! "$python" -c "import torch, numpy" 2>/dev/null; then
  echo "SKIPPED: $python lacks torch or numpy"
  exit 77
fi

write_tiny_task "$work"
write_eval_set "$work"
unset "tiny_flags[${#tiny_flags[@]}-1]" "tiny_flags[${#tiny_flags[@]}-2]"  # --eval false
eval_flags=("${eval_data[@]}" --eval-bm25 false)

# Bad settings: refused before anything is written, the message naming the flag.
expect_refused() {  # what, expected message part, train flags...
  local what=$1 part=$2
  shift 2
  "$bin" train --quick "${tiny_flags[@]}" "$@" --output "$work/bad" >"$work/bad.out" 2>"$work/bad.err"
  local status=$?
  [ "$status" = 1 ] || [ "$status" = 2 ] || fail "$what: exit status $status, expected 1 or 2"
  grep -qF -- "$part" "$work/bad.err" || fail "$what: no '$part' in the message: $(cat "$work/bad.err")"
  [ ! -e "$work/bad/checkpoint.pt" ] || fail "$what: a checkpoint was written"
}
expect_refused "a prefix wider than the model" "--matryoshka 32,8: dimension 32 is larger than the model's output width 16" \
  --matryoshka 32,8
expect_refused "a weight too many" "--matryoshka-weights gives 3 weights for the 2 dimensions" \
  --matryoshka 16,8 --matryoshka-weights 1,1,1
expect_refused "not a list" "--matryoshka takes positive integers separated by commas" --matryoshka 16,eight

# A run with prefixes 16, 8 and 4: a row each in the table and in summary.json.
"$bin" train --quick "${tiny_flags[@]}" "${eval_flags[@]}" --matryoshka 16,8,4 --matryoshka-weights 1,1,2 \
  --output "$work/run" >"$work/run.out" 2>"$work/run.err"
expect_status 0 $? "train --matryoshka"
for row in "trained @16" "trained @8" "trained @4"; do
  grep -q "^$row " "$work/run.out" || fail "no '$row' row in the table"
done
"$python" -c "
import json, sys
s = json.load(open('$work/run/summary.json'))
assert [p['dim'] for p in s['matryoshka']] == [16, 8, 4], s['matryoshka']
assert json.load(open('$work/run/config.json'))['matryoshka'] == '16,8,4'
" || fail "summary.json or config.json lacks the prefixes"

# eval: every prefix, or one with --dim (its metrics those of the training's row).
"$bin" eval --checkpoint "$work/run" --corpus "$work/corpus.tsv" --queries "$work/queries.tsv" \
  --qrels "$work/qrels.txt" --eval-bm25 false --json >"$work/eval.out" 2>"$work/eval.err"
expect_status 0 $? "eval"
"$bin" eval --checkpoint "$work/run" --corpus "$work/corpus.tsv" --queries "$work/queries.tsv" \
  --qrels "$work/qrels.txt" --eval-bm25 false --json --dim 8 >"$work/eval8.out" 2>"$work/eval8.err"
expect_status 0 $? "eval --dim 8"
"$python" -c "
import json
every, eight = json.load(open('$work/eval.out')), json.load(open('$work/eval8.out'))
trained = {p['dim']: p for p in json.load(open('$work/run/summary.json'))['matryoshka']}
assert [p['dim'] for p in every['matryoshka']] == [16, 8, 4], every
assert eight['dim'] == 8 and 'matryoshka' not in eight, eight
assert abs(eight['recall@10'] - trained[8]['recall@10']) < 1e-9, (eight, trained[8])
assert abs(every['matryoshka'][2]['mrr@10'] - trained[4]['mrr@10']) < 1e-9
" || fail "eval's prefixes disagree with the training's"
"$bin" eval --checkpoint "$work/run" --corpus "$work/corpus.tsv" --queries "$work/queries.tsv" \
  --qrels "$work/qrels.txt" --dim 32 >"$work/eval32.out" 2>"$work/eval32.err"
[ $? != 0 ] || fail "eval --dim 32 of a 16-wide model succeeded"
grep -qF -- "--dim 32 is larger than the embeddings' width 16" "$work/eval32.err" || fail "eval --dim 32: message"

# encode and export --dim 8: unit vectors of 8 dimensions; the export reproduces the encoding.
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --dim 8 --output "$work/emb8" 2>"$work/encode.err"
expect_status 0 $? "encode --dim 8"
"$bin" export --run "$work/run" --dim 8 --output "$work/export8" 2>"$work/export.err"
expect_status 0 $? "export --dim 8"
cat >"$work/check.py" <<'PY'
import json, sys
import numpy, torch
work = sys.argv[1]
manifest = json.load(open(f"{work}/emb8/manifest.json"))
export = json.load(open(f"{work}/export8/export.json"))
assert manifest["dim"] == 8 and manifest["prefix_dim"] == 8, manifest
assert export["dim"] == 8 and export["prefix_dim"] == 8, export
stored = numpy.concatenate([numpy.load(f"{work}/emb8/{s['embeddings']}") for s in manifest["shards"]])
norms = numpy.linalg.norm(stored, axis=1)
assert numpy.abs(norms - 1).max() < 1e-5, norms
model = torch.jit.load(f"{work}/export8/{export['models']['passage']}")
ids = torch.tensor([[5, 7, 9, 0], [11, 0, 0, 0]])
with torch.no_grad():
    out = model(ids, (ids != 0).long())
assert out.shape == (2, 8), out.shape
assert (out.norm(dim=1) - 1).abs().max() < 1e-5
print("prefix vectors of 8 dimensions, unit norm; the export returns [B, 8]")
PY
"$python" "$work/check.py" "$work" >"$work/check.out" 2>&1 || fail "Python check: $(tail -3 "$work/check.out")"

# The export's vectors are the encoder's: encode from the export equals encode from the run.
"$bin" encode --model "$work/export8" --corpus "$work/corpus.tsv" --output "$work/emb8x" 2>"$work/encodex.err"
expect_status 0 $? "encode --model (an export --dim 8)"
"$python" -c "
import json, numpy
a = [numpy.load('$work/emb8/' + s['embeddings']) for s in json.load(open('$work/emb8/manifest.json'))['shards']]
b = [numpy.load('$work/emb8x/' + s['embeddings']) for s in json.load(open('$work/emb8x/manifest.json'))['shards']]
assert numpy.abs(numpy.concatenate(a) - numpy.concatenate(b)).max() < 1e-5
" || fail "the export --dim 8 does not reproduce encode --dim 8"

# A TorchScript --model narrower than a prefix: refused before training, naming the flags.
expect_refused "a prefix wider than a --model" \
  "--matryoshka 16,8: dimension 16 is larger than the width 8 of the embeddings of --model $work/export8/model.pt" \
  --model "$work/export8/model.pt" --tokenizer "$work/export8/tokenizer.model" --matryoshka 16,8

# Too wide: refused, nothing written.
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --dim 17 --output "$work/emb17" 2>"$work/encode17.err"
[ $? != 0 ] || fail "encode --dim 17 of a 16-wide model succeeded"
grep -qF -- "--dim 17 is larger than the embeddings' width 16" "$work/encode17.err" || fail "encode --dim 17: message"
[ ! -e "$work/emb17" ] || fail "encode --dim 17 left $work/emb17"
"$bin" export --run "$work/run" --dim 17 --output "$work/export17" 2>"$work/export17.err"
[ $? != 0 ] || fail "export --dim 17 of a 16-wide model succeeded"
grep -qF -- "--dim 17 is larger than the embeddings' width 16" "$work/export17.err" || fail "export --dim 17: message"
[ ! -e "$work/export17" ] || fail "export --dim 17 left $work/export17"
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --dim -1 --output "$work/embneg" 2>"$work/encodeneg.err"
expect_status 1 $? "encode --dim -1"
grep -qF -- "--dim must be >= 0" "$work/encodeneg.err" || fail "encode --dim -1: message"
echo "PASS"
