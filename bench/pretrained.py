#!/usr/bin/env python3
"""Tabulates bench/pretrained.sh's runs: docs/figures/pretrained.json and the table in docs/pretrained.md.

Each row's R@1/10/100, MRR@10 and nDCG@10 on the WordNet test split (`gradcache eval --json`),
with the seconds its training (and mining) took from the script's *.seconds files; the BM25 row
from the zero-shot evaluation; the from-scratch main job's row from docs/figures/main_job.log when it is
there (the README's main job, for comparison).
"""
import argparse
import json
import os
import re
import sys

from doc_block import write_block

ROWS = [
    ("zero-shot", "zero-shot (no training)"),
    ("cache", "cache: batch {big} in chunks of {chunk}"),
    ("accumulate", "accumulation: batch {big} as sub-batches of {chunk}"),
    ("small", "small plain batch of {small}"),
    ("cache-mined", "cache + 1 negative mined by the zero-shot model"),
]
METRICS = ["recall@1", "recall@10", "recall@100", "mrr@10", "ndcg@10"]
BEGIN, END = "<!-- pretrained table: begin (bench/pretrained.py) -->", "<!-- pretrained table: end -->"


def seconds(runs, name):
    path = os.path.join(runs, name + ".seconds")
    return round(float(open(path).read()), 1) if os.path.exists(path) else None


def run_config(runs, name):
    path = os.path.join(runs, name, "config.json")
    return json.load(open(path)) if os.path.exists(path) else {}


def main_job_row(log="docs/figures/main_job.log"):
    """The from-scratch main job's 'trained' row (README), if its log is there."""
    if not os.path.exists(log):
        return None
    for line in open(log):
        fields = line.split()
        if len(fields) == 7 and fields[0] == "trained" and all(re.fullmatch(r"[0-9.]+", f) for f in fields[1:]):
            return dict(zip(METRICS, map(float, fields[1:6])))
    return None


def table(result):
    lines = ["| model | R@1 | R@10 | R@100 | MRR@10 | nDCG@10 | steps | training (s) |", "|---|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        m = row["metrics"]
        secs = "" if row.get("train_s") is None else f"{row['train_s']:.0f}"
        if row.get("mine_s"):
            secs += f" (+{row['mine_s']:.0f} mining)"
        lines.append(f"| {row['label']} | " + " | ".join(f"{m[k]:.4f}" for k in METRICS) +
                     f" | {row.get('steps', '')} | {secs} |")
    for key, label in (("bm25", "BM25 (Xapian)"), ("from_scratch", "from scratch: the main job (docs/figures/main_job.log)")):
        m = result.get(key)
        if m:
            lines.append(f"| {label} | " + " | ".join(f"{m[k]:.4f}" for k in METRICS) + " | | |")
    lines += ["", f"{result['model_name']}; every trained row saw {result['pairs']:,} training pairs; "
              f"{result['queries']:,} test queries against {result['passages']:,} passages. "
              f"Produced by `{result['command']}` (docs/figures/pretrained.json)."]
    return "\n".join(lines)


def write_markdown(path, text):
    write_block(path, BEGIN, END, text, "Fine-tuning a pretrained model on the WordNet task")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", required=True)
    p.add_argument("--docs", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--pairs", type=int, required=True)
    p.add_argument("--command", required=True)
    a = p.parse_args()
    zero = json.load(open(os.path.join(a.runs, "zero-shot.json")))
    cache = run_config(a.runs, "cache")
    small = run_config(a.runs, "small")
    sizes = {"big": cache.get("batch_size"), "chunk": cache.get("chunk_size"), "small": small.get("batch_size")}
    result = {"command": a.command, "model": a.model, "model_name": os.path.basename(os.path.dirname(a.model.rstrip("/")))
              if a.model.rstrip("/").endswith("model") else os.path.basename(a.model.rstrip("/")),
              "pairs": a.pairs, "queries": zero["queries"], "passages": None, "rows": []}
    for name, label in ROWS:
        test = zero if name == "zero-shot" else json.load(open(os.path.join(a.runs, name, "test.json")))
        config = run_config(a.runs, name)
        row = {"name": name, "label": label.format(**sizes), "metrics": {k: test[k] for k in METRICS}}
        if name != "zero-shot":
            row.update(steps=config.get("steps"), batch_size=config.get("batch_size"), mode=config.get("mode"),
                       lr=config.get("lr"), train_s=seconds(a.runs, name))
            if name == "cache-mined":
                row["mine_s"] = seconds(a.runs, "mine")
        result["rows"].append(row)
    log = os.path.join(a.runs, "zero-shot.log")
    if os.path.exists(log):
        found = re.search(r"encoding (\d+) passages", open(log).read())
        result["passages"] = int(found.group(1)) if found else None
    if isinstance(zero.get("bm25"), dict):
        result["bm25"] = {k: zero["bm25"][k] for k in METRICS}
    scratch = main_job_row()
    if scratch:
        result["from_scratch"] = scratch
    os.makedirs(os.path.join(a.docs, "figures"), exist_ok=True)
    json.dump(result, open(os.path.join(a.docs, "figures", "pretrained.json"), "w"), indent=2)
    text = table(result)
    write_markdown(os.path.join(a.docs, "pretrained.md"), text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
