#!/usr/bin/env python3
"""Collects bench/matryoshka.sh's runs into docs/figures/matryoshka.json and docs/matryoshka.md.

Reads RUNS/{matryoshka,dim-64,dim-32,dim-16}/summary.json: the Matryoshka run's metrics at
each prefix ("matryoshka") and each single-width run's ("trained"). Standard library only.
"""
import argparse
import datetime
import json
import os


def write_atomic(path, text):
    """Writes `text` to a temporary name beside `path`, then renames: never a half-written file."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def metrics(m):
    return {"recall@10": m["recall@10"], "mrr@10": m["mrr@10"], "queries": m["queries"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--docs", required=True)
    ap.add_argument("--total-seconds", type=float, required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--budget", required=True)
    ap.add_argument("--dims", required=True)
    a = ap.parse_args()

    def summary(name):
        with open(os.path.join(a.runs, name, "summary.json")) as f:
            return json.load(f)

    mat = summary("matryoshka")
    prefixes = {p["dim"]: p for p in mat["matryoshka"]}
    rows = []
    for dim in [int(d) for d in a.dims.split(",")]:
        alone = summary(f"dim-{dim}")
        rows.append({"dim": dim, "matryoshka": metrics(prefixes[dim]), "alone": metrics(alone["trained"]),
                     "matryoshka_wall_s": mat["wall_s"], "alone_wall_s": alone["wall_s"]})
    result = {
        "command": a.command,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "eval": mat["eval"],
        "model": a.model,
        "budget": a.budget,
        "matryoshka_dims": a.dims,
        "steps": mat["steps"],
        "total_seconds": a.total_seconds,
        "rows": rows,
    }
    os.makedirs(os.path.join(a.docs, "figures"), exist_ok=True)
    write_atomic(os.path.join(a.docs, "figures", "matryoshka.json"), json.dumps(result, indent=2) + "\n")
    lines = [
        "# Matryoshka representations: one encoder, every prefix",
        "",
        f"`{a.command}` on {result['date']} ({a.total_seconds:.0f} s in all), evaluated on {result['eval']} "
        f"({rows[0]['alone']['queries']} queries).",
        "",
        f"Every run: `{a.model} {a.budget}`, the same tokenizer; {result['steps']} steps each. "
        f"The Matryoshka run adds `--dim {max(int(d) for d in a.dims.split(','))} --matryoshka {a.dims}` "
        "(weights 1 each) and is evaluated at each prefix (the first m dimensions, re-normalised); "
        "each other run is trained at that width alone (`--dim m`).",
        "",
        "| dim | Matryoshka R@10 | alone R@10 | Matryoshka MRR@10 | alone MRR@10 |",
        "|----:|----------------:|-----------:|------------------:|-------------:|",
    ]
    for r in rows:
        lines.append(f"| {r['dim']} | {r['matryoshka']['recall@10']:.4f} | {r['alone']['recall@10']:.4f} | "
                     f"{r['matryoshka']['mrr@10']:.4f} | {r['alone']['mrr@10']:.4f} |")
    lines += ["", "One seed: differences of a few thousandths are within seed noise (see docs/paper_table.md).", ""]
    write_atomic(os.path.join(a.docs, "matryoshka.md"), "\n".join(lines))


if __name__ == "__main__":
    main()
