#!/usr/bin/env bash
# `gradcache mine` end to end on a tiny task: mine negatives with a trained run, check the file
# (Tevatron JSONL, no positive among the negatives, seeded), train on it with --negatives, and
# bad input (no run, an existing output, more negatives than the ranks hold, a bad --depth).
# Usage: mine_test.sh GRADCACHE_BINARY WORK_DIR
set -uo pipefail
source "$(dirname "$0")/cli_common.sh"
source "$(dirname "$0")/tiny_task.sh"

write_tiny_task "$work"
"$bin" train "${tiny_flags[@]}" --steps 20 --output "$work/run" >/dev/null 2>"$work/train.err"
expect_status 0 $? "training the tiny run"

mine=("$bin" mine --run "$work/run" --train-file "$work/train.tsv" --negatives 3 --depth 2:30)
"${mine[@]}" --output "$work/mined.jsonl" >/dev/null 2>"$work/mine.err"
expect_status 0 $? "mine"
grep -q "wrote $work/mined.jsonl: 96 queries" "$work/mine.err" || fail "mine does not say what it wrote"
python3 - "$work/mined.jsonl" <<'PY' || fail "the mined file (see above)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 96, len(lines)
for l in lines:
    assert set(l) == {"query_id", "query", "positive_passages", "negative_passages"}, l.keys()
    pos = {p["text"] for p in l["positive_passages"]}
    neg = [n["text"] for n in l["negative_passages"]]
    assert len(neg) == 3 and len(set(neg)) == 3, l
    assert not pos & set(neg), ("a positive became a negative", l)
    assert all(n["docid"] for n in l["negative_passages"]), l
PY
"${mine[@]}" --output "$work/again.jsonl" >/dev/null 2>"$work/again.err"
cmp -s "$work/mined.jsonl" "$work/again.jsonl" || fail "the same seed mined different negatives"
"${mine[@]}" --output "$work/seed7.jsonl" --seed 7 >/dev/null 2>"$work/seed7.err"
cmp -s "$work/mined.jsonl" "$work/seed7.jsonl" && fail "--seed 7 mined the same negatives as seed 42"

# --on-bad-line skip: mine reports each file's skipped lines as train and eval do (one notice
# per file, the same words); without it the bad line stops mine with its file:line.
{ cat "$work/train.tsv"; printf 'bad \xff query\tpassage\n'; } >"$work/train_bad.tsv"
"${mine[@]/$work\/train.tsv/$work/train_bad.tsv}" --output "$work/bad.jsonl" >/dev/null 2>"$work/bad.err"
expect_status 1 $? "mine on a file with a bad line"
grep -q "train_bad.tsv:97" "$work/bad.err" || fail "mine does not name the bad line"
"${mine[@]/$work\/train.tsv/$work/train_bad.tsv}" --on-bad-line skip --output "$work/skip.jsonl" >/dev/null 2>"$work/skip.err"
expect_status 0 $? "mine --on-bad-line skip"
grep -q "train_bad.tsv: skipped 1 of 97 lines (--on-bad-line skip); first: .*train_bad.tsv:97" "$work/skip.err" \
  || fail "mine --on-bad-line skip does not report the skipped line"

# Judged-relevant documents are never negatives: judge every negative mined above relevant and
# mine again with ids in the training file (JSONL query_id) and those judgements.
python3 - "$work" <<'PY' || fail "writing the judged task"
import json, sys
work = sys.argv[1]
with open(f"{work}/train.jsonl", "w") as out, open(f"{work}/qrels.txt", "w") as qrels:
    for line in open(f"{work}/mined.jsonl"):
        l = json.loads(line)
        out.write(json.dumps({"query_id": l["query_id"], "query": l["query"],
                              "positives": [p["text"] for p in l["positive_passages"]]}) + "\n")
        for n in l["negative_passages"]:
            qrels.write(f"{l['query_id']} 0 {n['docid']} 1\n")
PY
"$bin" mine --run "$work/run" --train-file "$work/train.jsonl" --qrels "$work/qrels.txt" --negatives 3 --depth 2:30 \
  --output "$work/judged.jsonl" >/dev/null 2>"$work/judged.err"
expect_status 0 $? "mine --qrels"
python3 - "$work/mined.jsonl" "$work/judged.jsonl" <<'PY' || fail "a judged-relevant document became a negative"
import json, sys
before = [json.loads(l) for l in open(sys.argv[1])]
after = [json.loads(l) for l in open(sys.argv[2])]
for b, a in zip(before, after):
    assert b["query_id"] == a["query_id"]
    assert not {n["docid"] for n in b["negative_passages"]} & {n["docid"] for n in a["negative_passages"]}, a
PY

# The corpus's vectors from gradcache encode give the same negatives; vectors of another corpus
# or of another model (dimension) are refused, naming --embeddings.
python3 - "$work" <<'PY' || fail "writing the corpus file"
import sys
work, seen = sys.argv[1], {}
for line in open(f"{work}/train.tsv"):
    seen.setdefault(line.rstrip("\n").split("\t")[1], len(seen))
with open(f"{work}/corpus.tsv", "w") as out:
    out.writelines(f"d{i}\t{text}\n" for text, i in seen.items())
PY
"$bin" encode --run "$work/run" --corpus "$work/corpus.tsv" --output "$work/emb" >/dev/null 2>"$work/encode.err"
expect_status 0 $? "encode the corpus"
"${mine[@]}" --corpus "$work/corpus.tsv" --embeddings "$work/emb" --output "$work/fromemb.jsonl" \
  >/dev/null 2>"$work/fromemb.err"
expect_status 0 $? "mine --embeddings"
cmp -s "$work/mined.jsonl" "$work/fromemb.jsonl" || fail "mining from encoded vectors chose other negatives"
head -50 "$work/corpus.tsv" >"$work/half.tsv"
"$bin" encode --run "$work/run" --corpus "$work/half.tsv" --output "$work/halfemb" >/dev/null 2>"$work/encode2.err"
"${mine[@]}" --corpus "$work/corpus.tsv" --embeddings "$work/halfemb" --output "$work/x.jsonl" \
  >/dev/null 2>"$work/otheremb.err"
expect_status 1 $? "mine --embeddings of another corpus"
grep -q -- "--embeddings .*halfemb holds 50 vectors whose ids are not the corpus's 96" "$work/otheremb.err" ||
  fail "no message for the embeddings of another corpus"
"$bin" train --train-file "$work/train.tsv" --vocab-size 40 --dim 8 --heads 2 --layers 1 --ffn-dim 16 --batch-size 16 \
  --eval false --steps 1 --output "$work/run8" >/dev/null 2>"$work/run8.err"
expect_status 0 $? "training an 8-wide run"
"$bin" mine --run "$work/run8" --train-file "$work/train.tsv" --corpus "$work/corpus.tsv" --embeddings "$work/emb" \
  --output "$work/x.jsonl" >/dev/null 2>"$work/dim.err"
expect_status 1 $? "mine --embeddings of another dimension"
grep -q "has dimension 16 but the model's queries have 8" "$work/dim.err" || fail "no message for another dimension"
# Issue 27: vectors of another model of the same width were taken; the manifest names the model.
"$bin" train "${tiny_flags[@]}" --steps 1 --output "$work/run_b" >/dev/null 2>"$work/run_b.err"
expect_status 0 $? "training a second tiny run"
"$bin" mine --run "$work/run_b" --train-file "$work/train.tsv" --corpus "$work/corpus.tsv" --embeddings "$work/emb" \
  --negatives 3 --depth 2:30 --output "$work/x.jsonl" >/dev/null 2>"$work/othermodel.err"
expect_status 1 $? "mine --embeddings made by another model"
grep -q "were made by .*run/checkpoint.pt.*not by this passage encoder.*run_b/checkpoint.pt" "$work/othermodel.err" ||
  fail "no message naming both models: $(cat "$work/othermodel.err")"
[ -e "$work/x.jsonl" ] && fail "a refused mine wrote its output"
# Issue 41, item 3: the same run trained again (--overwrite: same path, same step, new weights)
# made the old vectors look like its own; the manifest's weight digest tells them apart.
"$bin" encode --run "$work/run_b" --corpus "$work/corpus.tsv" --output "$work/emb_b" >/dev/null 2>"$work/emb_b.err"
expect_status 0 $? "encoding with the second run"
"$bin" train "${tiny_flags[@]}" --steps 1 --seed 7 --overwrite --output "$work/run_b" >/dev/null 2>"$work/run_b2.err"
expect_status 0 $? "training the second run again"
"$bin" mine --run "$work/run_b" --train-file "$work/train.tsv" --corpus "$work/corpus.tsv" --embeddings "$work/emb_b" \
  --negatives 3 --depth 2:30 --output "$work/x.jsonl" >/dev/null 2>"$work/stale.err"
expect_status 1 $? "mine --embeddings of the run before it was trained again"
grep -q "were made by .*weights_crc32.*not by this passage encoder" "$work/stale.err" ||
  fail "no message for the vectors of the earlier model: $(cat "$work/stale.err")"
[ -e "$work/x.jsonl" ] && fail "a refused mine wrote its output"

# BM25 (no margin: it has no dense scores) and an exported model mine the same way.
"$bin" mine --bm25 --train-file "$work/train.tsv" --negatives 3 --depth 2:30 --output "$work/bm25.jsonl" \
  >/dev/null 2>"$work/bm25.err"
expect_status 0 $? "mine --bm25"
grep -q "(bm25; dropped" "$work/bm25.err" || fail "mine --bm25 does not say it used BM25"
"$bin" export --run "$work/run" --output "$work/export" >/dev/null 2>"$work/export.err"
expect_status 0 $? "export"
"$bin" mine --model "$work/export" --train-file "$work/train.tsv" --negatives 3 --depth 2:30 \
  --output "$work/exported.jsonl" >/dev/null 2>"$work/exported.err"
expect_status 0 $? "mine --model EXPORT"
cmp -s "$work/mined.jsonl" "$work/exported.jsonl" || fail "the export mined other negatives than its run"
"$bin" mine --run "$work/run" --train-file "$work/train.tsv" --negatives 2 --depth 1:30 --margin 0.9 --index hnsw \
  --output "$work/margin.jsonl" >/dev/null 2>"$work/margin.err"
expect_status 0 $? "mine --margin 0.9 --index hnsw"
grep -q "searching with hnsw" "$work/margin.err" || fail "mine --index hnsw did not use HNSW"

"$bin" train "${tiny_flags[@]:2}" --train-file "$work/mined.jsonl" --negatives 2 --steps 5 --output "$work/run2" \
  >/dev/null 2>"$work/train2.err"
expect_status 0 $? "training on the mined file with --negatives 2"

# Bad input: a one-line error naming the flag or file; nothing written, nothing overwritten.
cp "$work/mined.jsonl" "$work/kept.jsonl"
"${mine[@]}" --output "$work/mined.jsonl" >/dev/null 2>"$work/exists.err"
expect_status 1 $? "mine over an existing output"
grep -q -- "--overwrite" "$work/exists.err" || fail "no --overwrite hint"
cmp -s "$work/mined.jsonl" "$work/kept.jsonl" || fail "an existing output was changed without --overwrite"
# Issue 27: a directory as --output said "cannot rename ...: Is a directory" after the work.
mkdir -p "$work/outdir"
"${mine[@]}" --output "$work/outdir" --overwrite >/dev/null 2>"$work/outdir.err"
expect_status 1 $? "mine --output DIR"
grep -q "is a directory; give the path of the JSONL file" "$work/outdir.err" || fail "no message for --output DIR: $(cat "$work/outdir.err")"
"$bin" mine --run "$work/run" --train-file "$work/train.tsv" --negatives 50 --depth 2:30 \
  --output "$work/short.jsonl" >/dev/null 2>"$work/short.err"
expect_status 1 $? "more negatives than the ranks hold"
grep -q "fewer candidates in ranks 2:30" "$work/short.err" || fail "no message for --negatives 50"
[ -e "$work/short.jsonl" ] && fail "a refused mining wrote its output"
# More negatives than the corpus holds: refused before any retrieval (it once drew 64 x 1e9 times
# per query at 100% CPU, deaf to SIGTERM), naming the flag and the most it can be.
timeout 60 "$bin" mine --run "$work/run" --train-file "$work/train.tsv" --negatives 1000000000 --on-short random \
  --output "$work/huge.jsonl" >/dev/null 2>"$work/huge.err"
expect_status 1 $? "--negatives 1000000000"
grep -q -- "--negatives 1000000000: the corpus holds [0-9]* documents.*give at most" "$work/huge.err" ||
  fail "no message for --negatives 1000000000: $(cat "$work/huge.err")"
# Issue 41, item 1: an --output that is an input (here through ./) replaced the training data
# with --overwrite; it is refused, and the file is as it was.
cp "$work/train.tsv" "$work/train.before"
"${mine[@]}" --overwrite --output "$work/./train.tsv" >/dev/null 2>"$work/self.err"
expect_status 1 $? "mine --output of its own --train-file"
grep -q -- "--output .*train.tsv is the command's --train-file" "$work/self.err" ||
  fail "no message for an --output that is the --train-file: $(cat "$work/self.err")"
cmp -s "$work/train.tsv" "$work/train.before" || fail "mine replaced its own training file"
"$bin" mine --run "$work/run" --train-file "$work/train.tsv" --negatives 50 --depth 2:30 --on-short drop \
  --output "$work/drop.jsonl" >/dev/null 2>"$work/drop.err"
expect_status 1 $? "--on-short drop when every query falls short"
grep -q "every query fell short" "$work/drop.err" || fail "no message when --on-short drop leaves nothing"
"$bin" mine --run "$work/run" --train-file "$work/train.tsv" --negatives 50 --depth 2:30 --on-short random \
  --output "$work/random.jsonl" >/dev/null 2>"$work/random.err"
expect_status 0 $? "--on-short random"
grep -q "on-short random: [0-9]* negatives drawn at random, 0 queries left out" "$work/random.err" ||
  fail "--on-short random does not say what it drew"
python3 - "$work/random.jsonl" <<'PY' || fail "--on-short random (see above)"
import json, sys
for l in map(json.loads, open(sys.argv[1])):
    neg = [n["docid"] for n in l["negative_passages"]]
    assert len(neg) == 50 and len(set(neg)) == 50, l["query_id"]
    assert not {p["text"] for p in l["positive_passages"]} & {n["text"] for n in l["negative_passages"]}
PY
"$bin" mine --run "$work/nowhere" --train-file "$work/train.tsv" --output "$work/x.jsonl" >/dev/null 2>"$work/norun.err"
expect_status 1 $? "mine with a missing run"
grep -q "nowhere" "$work/norun.err" || fail "the missing run is not named"
"$bin" mine --run "$work/run" --depth 30 --output "$work/x.jsonl" >/dev/null 2>"$work/depth.err"
expect_status 1 $? "--depth 30"
grep -q -- "--depth 30: expected FIRST:LAST" "$work/depth.err" || fail "no message for --depth 30"
"$bin" mine --train-file "$work/train.tsv" --output "$work/x.jsonl" >/dev/null 2>"$work/nothing.err"
expect_status 1 $? "mine without --run"
grep -q "give exactly one of --run, --model" "$work/nothing.err" || fail "no message without --run"
"$bin" mine --bm25 --margin 0.5 --output "$work/x.jsonl" >/dev/null 2>"$work/bm25margin.err"
expect_status 1 $? "mine --bm25 --margin"
grep -q -- "--margin needs dense scores" "$work/bm25margin.err" || fail "no message for --bm25 --margin"
[ -e "$work/x.jsonl" ] && fail "a refused mining wrote its output"
echo "mine end-to-end: all checks passed"
