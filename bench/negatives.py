#!/usr/bin/env python3
"""Tabulates bench/negatives.sh's runs: docs/figures/negatives.json and the table in docs/negatives.md.

Each arm's R@10 and MRR@10 on the WordNet test split (from `gradcache eval --json`, RUN/test.json),
mean and sample standard deviation over the seeds, with the time each arm took (mining and
training, seconds from the script's *.seconds files); the BM25 row from the in-batch runs'
evaluations; the search timings of docs/figures/search.json when present.
"""
import argparse
import json
import os
import statistics
import sys

from doc_block import write_block

ARMS = [
    ("in-batch", "in-batch negatives only", None),
    ("bm25", "+ 1 BM25 negative", "mine-bm25"),
    ("dense", "+ 1 dense-mined negative (one round, from the in-batch run)", "mine-dense"),
]
BEGIN, END = "<!-- negatives table: begin (bench/negatives.py) -->", "<!-- negatives table: end -->"


def seconds(runs, name):
    path = os.path.join(runs, name + ".seconds")
    return float(open(path).read()) if os.path.exists(path) else None


def mean_std(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def arm_result(runs, arm, mine, seeds):
    rows = []
    for seed in seeds:
        test = json.load(open(os.path.join(runs, f"{arm}-seed{seed}", "test.json")))
        train_s = seconds(runs, f"{arm}-seed{seed}")
        mine_s = seconds(runs, f"{mine}-seed{seed}") if mine else 0.0
        rows.append({"seed": seed, "recall@10": test["recall@10"], "mrr@10": test["mrr@10"],
                     "train_s": train_s, "mine_s": mine_s})
    out = {"runs": rows}
    for key in ("recall@10", "mrr@10", "train_s", "mine_s"):
        out[key + "_mean"], out[key + "_std"] = mean_std([r[key] for r in rows])
    return out


def fmt(m, s, digits=4):
    return "n/a" if m is None else f"{m:.{digits}f} ± {s:.{digits}f}"


def table(result):
    lines = ["| negatives | R@10 | MRR@10 | mining (s) | training (s) |", "|---|---|---|---|---|"]
    for arm, label, _ in ARMS:
        r = result["arms"][arm]
        lines.append(f"| {label} | {fmt(r['recall@10_mean'], r['recall@10_std'])} | "
                     f"{fmt(r['mrr@10_mean'], r['mrr@10_std'])} | {fmt(r['mine_s_mean'], r['mine_s_std'], 0)} | "
                     f"{fmt(r['train_s_mean'], r['train_s_std'], 0)} |")
    bm25 = result.get("bm25")
    if bm25:
        lines.append(f"| bm25 (no training) | {bm25['recall@10']:.4f} | {bm25['mrr@10']:.4f} | | |")
    n = len(result["seeds"])
    lines.append("")
    lines.append(f"Mean ± sample standard deviation over {n} seed{'s' if n > 1 else ''} "
                 f"({', '.join(map(str, result['seeds']))}); produced by `{result['command']}`.")
    return "\n".join(lines)


def search_table(search):
    """The search timings of docs/figures/search.json (gradcache-search-bench) as a table."""
    exact = search["exact"]
    rows = [("FAISS flat (the default exact search)", exact["faiss_flat"], None),
            ("exact_top_k (hand-written, blocked)", exact["blocked_exact_top_k"], None),
            ("HNSW", search["hnsw"], search["hnsw"]), ("IVF-PQ", search["ivfpq"], search["ivfpq"])]
    lines = [f"Search of the {search['queries']:,} test queries against {search['passages']:,} passages, top "
             f"{search['k']}, {search['threads']} thread, best of {search['repeats_best_of']} "
             f"(`{search['program']}`, docs/figures/search.json):", "",
             "| search | index | build (s) | search (s) | recall vs exact @10 / @100 |", "|---|---|---|---|---|"]
    for name, r, approx in rows:
        recall = f"{approx['recall_vs_exact@10']:.3f} / {approx['recall_vs_exact@100']:.3f}" if approx else "exact"
        lines.append(f"| {name} | {r['index']} | {r['build_s']:.2f} | {r['search_s']:.2f} | {recall} |")
    b = search["bm25"]
    lines.append(f"| BM25 | {b['index']} | {b['build_s']:.2f} | {b['search_s']:.2f} | (R@10 "
                 f"{b['metrics']['recall@10']:.4f}) |")
    return "\n".join(lines)


def write_markdown(path, text):
    write_block(path, BEGIN, END, text, "Hard negatives on the WordNet task")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", required=True)
    p.add_argument("--docs", required=True)
    p.add_argument("--seeds", nargs="+", required=True)
    p.add_argument("--command", required=True)
    a = p.parse_args()
    result = {"command": a.command, "seeds": [int(s) for s in a.seeds], "arms": {}}
    for arm, label, mine in ARMS:
        result["arms"][arm] = arm_result(a.runs, arm, mine, a.seeds)
        result["arms"][arm]["label"] = label
    first = json.load(open(os.path.join(a.runs, f"in-batch-seed{a.seeds[0]}", "test.json")))
    if isinstance(first.get("bm25"), dict):
        result["bm25"] = first["bm25"]
    os.makedirs(os.path.join(a.docs, "figures"), exist_ok=True)
    json.dump(result, open(os.path.join(a.docs, "figures", "negatives.json"), "w"), indent=2)
    text = table(result)
    search_path = os.path.join(a.docs, "figures", "search.json")
    if os.path.exists(search_path):
        text += "\n\n" + search_table(json.load(open(search_path)))
    write_markdown(os.path.join(a.docs, "negatives.md"), text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
