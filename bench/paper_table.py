#!/usr/bin/env python3
"""Aggregates the runs of bench/paper_table.sh (standard library only).

Reads RUNS/NAME-seedS/{summary.json,config.json,metrics.jsonl} and writes into DOCS:
paper_table.json (every run and the per-setting mean / std), paper_table.md (the table
between the markers below; an existing file keeps its text around them) and, for gnuplot,
paper_table.dat + paper_table.gp (which draw paper_table.png).
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess

BEGIN, END = "<!-- paper_table:begin -->", "<!-- paper_table:end -->"
METRICS = [("recall@1", "R@1"), ("recall@10", "R@10"), ("mrr@10", "MRR@10")]


def read_run(path):
    with open(os.path.join(path, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    lines = [json.loads(line) for line in open(os.path.join(path, "metrics.jsonl")) if line.strip()]
    lines = [m for m in lines if "loss" in m]  # training lines (dev evaluations' lines hold "dev")
    if summary.get("interrupted") or not summary.get("trained"):
        raise SystemExit(f"paper_table.py: {path} did not finish or was not evaluated")
    last = lines[-1] if lines else {}
    return {
        "seed": config["seed"],
        "lr": config["lr"],
        "steps": summary["steps"],
        "examples": summary["steps"] * summary["batch_size"],
        "metrics": {k: summary["trained"][k] for k, _ in METRICS + [("recall@100", ""), ("ndcg@10", "")]},
        "final_loss": summary["final_loss"],
        # Peak RSS at the end of training (the high-water mark before the evaluation, which
        # encodes the whole corpus) and at the end of the run.
        "train_peak_rss_mb": last.get("peak_rss_mb"),
        "peak_rss_mb": summary["peak_rss_mb"],
        "train_s": last.get("elapsed_s"),
        "wall_s": summary["wall_s"],
    }


def mean_std(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--docs", required=True)
    ap.add_argument("--total-seconds", type=float, required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--settings", nargs="+", required=True, help="'name mode batch chunk' each")
    a = ap.parse_args()

    seed_re = re.compile(r"^(.*)-seed(\d+)$")
    rows = []
    for s in a.settings:
        name, mode, batch, chunk = s.split()
        runs = []
        for entry in sorted(os.listdir(a.runs)):
            m = seed_re.match(entry)
            if m and m.group(1) == name and os.path.isdir(os.path.join(a.runs, entry)):
                runs.append(read_run(os.path.join(a.runs, entry)))
        if not runs:
            raise SystemExit(f"paper_table.py: no runs of {name} in {a.runs}")
        row = {"setting": name, "mode": mode, "batch": int(batch), "chunk": int(chunk),
               "lr": runs[0]["lr"], "updates": runs[0]["steps"], "examples": runs[0]["examples"],
               "seeds": [r["seed"] for r in runs], "runs": runs}
        for key, _ in METRICS + [("recall@100", ""), ("ndcg@10", "")]:
            row[key] = dict(zip(("mean", "std"), mean_std([r["metrics"][key] for r in runs])))
        for key in ("train_peak_rss_mb", "peak_rss_mb", "train_s", "wall_s", "final_loss"):
            row[key] = dict(zip(("mean", "std"), mean_std([r[key] for r in runs])))
        rows.append(row)

    os.makedirs(a.docs, exist_ok=True)
    result = {"command": a.command, "total_seconds": round(a.total_seconds), "runs_dir": a.runs, "settings": rows}
    with open(os.path.join(a.docs, "paper_table.json"), "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")

    one_seed = len(rows[0]["seeds"]) == 1

    def pm(d, scale=100, digits=2):
        if one_seed:
            return f"{d['mean'] * scale:.{digits}f}"
        return f"{d['mean'] * scale:.{digits}f} ± {d['std'] * scale:.{digits}f}"

    table = [
        f"`{a.command}`: {len(rows)} settings x {len(rows[0]['seeds'])} seeds, "
        f"{int(a.total_seconds) // 60} min {int(a.total_seconds) % 60} s wall in all.",
        "",
        "| setting | mode | batch | chunk | lr | updates | R@1 (%) | R@10 (%) | MRR@10 (%) "
        "| peak RSS, training (MiB) | peak RSS, with eval (MiB) | training (s) | wall (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        table.append(
            f"| {r['setting']} | {r['mode']} | {r['batch']} | {r['chunk']} | {r['lr']:g} | {r['updates']} "
            f"| {pm(r['recall@1'])} | {pm(r['recall@10'])} | {pm(r['mrr@10'])} "
            f"| {r['train_peak_rss_mb']['mean']:.0f} | {r['peak_rss_mb']['mean']:.0f} "
            f"| {r['train_s']['mean']:.0f} | {r['wall_s']['mean']:.0f} |")
    table.append("")
    examples = sorted({r["examples"] for r in rows})
    same = f"{examples[0]:,}" if len(examples) == 1 else f"{examples[0]:,} to {examples[-1]:,}"
    spread = (f"Seed {rows[0]['seeds'][0]}" if one_seed else
              f"Mean ± sample standard deviation over seeds {', '.join(map(str, rows[0]['seeds']))}")
    table.append(f"{spread}; "
                 f"{same} training examples per run (updates x batch; each epoch drops its last incomplete "
                 f"batch). Peak RSS is the process's high-water mark at the end of training (data, tokenizer "
                 f"and model included) and at the end of the run (after encoding the corpus for the evaluation); "
                 f"times are per run, means over seeds.")
    block = BEGIN + "\n" + "\n".join(table) + "\n" + END

    md = os.path.join(a.docs, "paper_table.md")
    if os.path.exists(md):
        text = open(md).read()
        if BEGIN in text and END in text:
            text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
    else:
        text = "# Sequential vs Accumulation vs Cache at equal memory\n\n" + block + "\n\n![](paper_table.png)\n"
    with open(md, "w") as f:
        f.write(text)

    dat = os.path.join(a.docs, "paper_table.dat")
    with open(dat, "w") as f:
        f.write("# index setting R@10_mean R@10_std MRR@10_mean MRR@10_std R@1_mean R@1_std (percent)\n")
        for i, r in enumerate(rows):
            f.write(f"{i} \"{r['setting']}\\n(batch {r['batch']})\" "
                    + " ".join(f"{r[k]['mean'] * 100:.4f} {r[k]['std'] * 100:.4f}"
                               for k in ("recall@10", "mrr@10", "recall@1")) + "\n")
    try:
        t = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
        terms = t.stdout + t.stderr
    except OSError:
        terms = ""
    term = "pngcairo size 1000,480 font 'sans,11'" if "pngcairo" in terms else "png size 1000,480"
    png = os.path.join(a.docs, "paper_table.png")
    with open(os.path.join(a.docs, "paper_table.gp"), "w") as f:
        f.write(f"""set terminal {term}
set output '{png}'
set title 'WordNet test: in-batch negatives at equal memory (chunks of {rows[0]['chunk']}), mean ± std over {len(rows[0]['seeds'])} seeds'
set termoption noenhanced
set ylabel 'percent (test split)'
set bmargin 4
set style data histogram
set style histogram errorbars gap 2 lw 1.5
set style fill solid 0.7 border -1
set boxwidth 0.9
set grid ytics
set key top left
set yrange [0:*]
set xtics nomirror
plot '{dat}' using 3:4:xtic(2) title 'R@10', '' using 5:6 title 'MRR@10', '' using 7:8 title 'R@1'
""")


if __name__ == "__main__":
    main()
