"""The tiny task's pairs (DIR/train.tsv) in every layout `gradcache train --train-file` reads
from Arrow's family, written by Python's own writers (pyarrow, datasets), for arrow_data_test.sh:

  pairs.jsonl           the reference: {"query", "positives"} lines
  st.parquet            sentence-transformers' columns (anchor, positive, and a score column),
                        row groups of 10 rows
  tevatron.arrow        an Arrow IPC file (Feather v2): query, query_id, positive_passages as
                        Tevatron's list<struct<docid, title, text>>
  hf_dataset/           datasets' save_to_disk of {query, positives: list<string>}, 2 shards
  shards/               the pairs as two .parquet shards (anchor, positive)
  named.parquet         columns q, p, extra (an int): only --columns q,p reads it
  bad/...               files the program must refuse (see arrow_data_test.sh)

Usage: arrow_data.py DIR
"""
import json
import os
import sys

import datasets
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

out = sys.argv[1]
pairs = [line.rstrip("\n").split("\t") for line in open(os.path.join(out, "train.tsv"), encoding="utf-8")]
queries = [q for q, _ in pairs]
positives = [p for _, p in pairs]

with open(os.path.join(out, "pairs.jsonl"), "w", encoding="utf-8") as f:
    for q, p in pairs:
        f.write(json.dumps({"query": q, "positives": [p]}) + "\n")

pq.write_table(pa.table({"anchor": queries, "positive": positives, "score": [1.0] * len(pairs)}),
               os.path.join(out, "st.parquet"), row_group_size=10)

passages = [[{"docid": f"d{i}", "title": "", "text": p}] for i, p in enumerate(positives)]
feather.write_feather(pa.table({"query_id": [f"q{i}" for i in range(len(pairs))], "query": queries,
                                "positive_passages": passages}), os.path.join(out, "tevatron.arrow"))

datasets.Dataset.from_dict({"query": queries, "positives": [[p] for p in positives]}).save_to_disk(
    os.path.join(out, "hf_dataset"), num_shards=2)

os.makedirs(os.path.join(out, "shards"), exist_ok=True)
half = len(pairs) // 2
for name, rows in (("part-00000.parquet", slice(0, half)), ("part-00001.parquet", slice(half, None))):
    pq.write_table(pa.table({"anchor": queries[rows], "positive": positives[rows]}), os.path.join(out, "shards", name))

pq.write_table(pa.table({"q": queries, "p": positives, "extra": list(range(len(pairs)))}),
               os.path.join(out, "named.parquet"))

bad = os.path.join(out, "bad")
os.makedirs(bad, exist_ok=True)
# Truncated: the first half of a Parquet file, its footer gone.
data = open(os.path.join(out, "st.parquet"), "rb").read()
open(os.path.join(bad, "truncated.parquet"), "wb").write(data[: len(data) // 2])
# Not Parquet at all, under a Parquet name.
open(os.path.join(bad, "text.parquet"), "w").write("query\tpositive\n")
# No text columns: the message must list what is there.
pq.write_table(pa.table({"x": [1, 2], "y": [3.5, 4.5]}), os.path.join(bad, "numbers.parquet"))
# A null positive on row 3, a blank query on row 5, of 20 rows (the 18 others make a batch).
anchors, positives_ = queries[:20], positives[:20]
anchors[4] = " "
positives_[2] = None
pq.write_table(pa.table({"anchor": anchors, "positive": positives_}), os.path.join(bad, "holes.parquet"))
# A save_to_disk directory whose state.json names a shard that is gone.
datasets.Dataset.from_dict({"query": queries[:4], "positives": [[p] for p in positives[:4]]}).save_to_disk(
    os.path.join(bad, "lost_shard"), num_shards=2)
os.remove(os.path.join(bad, "lost_shard", "data-00001-of-00002.arrow"))
