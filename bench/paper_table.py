#!/usr/bin/env python3
"""Aggregates the runs of bench/paper_table.sh (standard library only).

Reads RUNS/NAME-seedS/{summary.json,config.json,metrics.jsonl} and, for runs with model
selection, best_test.json (the test metrics of the dev-selected best.pt); writes into DOCS:
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
    dev_curve = [[m["step"], m["dev"]["recall@10"]] for m in lines if "dev" in m]  # [update, dev R@10]
    lines = [m for m in lines if "loss" in m]  # training lines (dev evaluations' lines hold "dev")
    if summary.get("interrupted") or not summary.get("trained"):
        raise SystemExit(f"paper_table.py: {path} did not finish or was not evaluated")
    keys = [k for k, _ in METRICS] + ["recall@100", "ndcg@10"]
    final = {k: summary["trained"][k] for k in keys}
    selection = summary.get("selection") or {}
    best_test = os.path.join(path, "best_test.json")
    if os.path.exists(best_test):  # model selection: the test metrics of best.pt
        with open(best_test) as f:
            best = json.load(f)
        metrics, best_step = {k: best[k] for k in keys}, best["step"]
    else:  # a fixed budget: the final model
        metrics, best_step = final, summary["steps"]
    last = lines[-1] if lines else {}
    return {
        "seed": config["seed"],
        "lr": config["lr"],
        "steps": summary["steps"],
        "total_steps": summary["total_steps"],
        "best_step": best_step,
        "stopped_early": summary.get("stopped_early", False),
        "dev_best": selection.get("best_value"),
        "dev_curve": dev_curve,
        "examples": summary["steps"] * summary["batch_size"],
        "metrics": metrics,
        "final_metrics": final,
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


def per_seed(runs, key):
    """'a / b / c' over the seeds: updates differ per seed once runs stop early."""
    return " / ".join(str(r[key]) for r in runs)


def table_lines(rows, a):
    one_seed = len(rows[0]["seeds"]) == 1
    selection = any(r["selection"] for r in rows)

    def pm(d, scale=100, digits=2):
        if one_seed:
            return f"{d['mean'] * scale:.{digits}f}"
        return f"{d['mean'] * scale:.{digits}f} ± {d['std'] * scale:.{digits}f}"

    jobs = f", {a.jobs} runs at a time" if a.jobs > 1 else ", one run at a time"
    table = [
        f"`{a.command}`: {len(rows)} settings x {len(rows[0]['seeds'])} seeds, "
        f"{int(a.total_seconds) // 60} min {int(a.total_seconds) % 60} s wall in all{jobs}.",
        "",
    ]
    updates = "updates trained (per seed) | best model at update (per seed)" if selection else "updates"
    table += [
        f"| setting | mode | batch | chunk | lr | {updates} | R@1 (%) | R@10 (%) | MRR@10 (%) "
        "| peak RSS, training (MiB) | peak RSS, with eval (MiB) | training (s) | wall (s) |",
        "|---|---|---:|---:|---:|---:|" + ("---:|" if selection else "") + "---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        steps = f"{per_seed(r['runs'], 'steps')} | {per_seed(r['runs'], 'best_step')}" if selection else r["updates"]
        table.append(
            f"| {r['setting']} | {r['mode']} | {r['batch']} | {r['chunk']} | {r['lr']:g} | {steps} "
            f"| {pm(r['recall@1'])} | {pm(r['recall@10'])} | {pm(r['mrr@10'])} "
            f"| {r['train_peak_rss_mb']['mean']:.0f} | {r['peak_rss_mb']['mean']:.0f} "
            f"| {r['train_s']['mean']:.0f} | {r['wall_s']['mean']:.0f} |")
    table.append("")
    spread = (f"Seed {rows[0]['seeds'][0]}" if one_seed else
              f"Mean ± sample standard deviation over seeds {', '.join(map(str, rows[0]['seeds']))}")
    if selection:
        table.append(f"{spread} of the test metrics of each run's best.pt, the model with the best dev R@10 "
                     "(WordNet's dev split, evaluated once per epoch). Peak RSS is the process's high-water mark "
                     "at the end of training and at the end of the run (after the last evaluation); times are "
                     f"per run, means over seeds{f', with {a.jobs} runs sharing the machine' if a.jobs > 1 else ''}.")
        return table
    examples = sorted({r["examples"] for r in rows})
    same = f"{examples[0]:,}" if len(examples) == 1 else f"{examples[0]:,} to {examples[-1]:,}"
    table.append(f"{spread}; "
                 f"{same} training examples per run (updates x batch; each epoch drops its last incomplete "
                 f"batch). Peak RSS is the process's high-water mark at the end of training (data, tokenizer "
                 f"and model included) and at the end of the run (after encoding the corpus for the evaluation); "
                 f"times are per run, means over seeds.")
    return table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--docs", required=True)
    ap.add_argument("--total-seconds", type=float, required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--jobs", type=int, default=1, help="runs at a time (times are per run)")
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
               "seeds": [r["seed"] for r in runs], "runs": runs,
               "selection": any(r["dev_best"] is not None for r in runs)}
        for key, _ in METRICS + [("recall@100", ""), ("ndcg@10", "")]:
            row[key] = dict(zip(("mean", "std"), mean_std([r["metrics"][key] for r in runs])))
        for key in ("train_peak_rss_mb", "peak_rss_mb", "train_s", "wall_s", "final_loss"):
            row[key] = dict(zip(("mean", "std"), mean_std([r[key] for r in runs])))
        rows.append(row)

    figures = os.path.join(a.docs, "figures")
    os.makedirs(figures, exist_ok=True)
    result = {"command": a.command, "total_seconds": round(a.total_seconds), "runs_dir": a.runs, "settings": rows}
    with open(os.path.join(figures, "paper_table.json"), "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")

    table = table_lines(rows, a)
    block = BEGIN + "\n" + "\n".join(table) + "\n" + END

    md = os.path.join(a.docs, "paper_table.md")
    if os.path.exists(md):
        text = open(md).read()
        if BEGIN in text and END in text:
            text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
    else:
        text = "# Sequential vs Accumulation vs Cache at equal memory\n\n" + block + "\n\n![](figures/paper_table.png)\n"
    with open(md, "w") as f:
        f.write(text)

    dat = os.path.join(figures, "paper_table.dat")
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
    png = os.path.join(figures, "paper_table.png")
    with open(os.path.join(figures, "paper_table.gp"), "w") as f:
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
