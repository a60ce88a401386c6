#!/usr/bin/env python3
"""Peak memory of loading a pretrained model (issue 39): `gradcache encode --model-dir` of a
decoder of Qwen3-Embedding-0.6B's shape (bench/architectures.py's QWEN3_06B, random weights made
by transformers) over 16 short texts, its weights stored in fp32 and in bf16 (as Qwen3 is
released): peak RSS (the kernel's, os.wait4) and seconds of each program given, side by side.
The model's fp32 parameters and the file's size are printed beside them: a load that holds the
whole file while it fills the model peaks near their sum, one that reads a tensor at a time
near the parameters alone.

    .venv/bin/python bench/load_memory.py [--programs NAME=PATH,...] [--layers 28] [--out docs/figures]

--programs defaults to ours=build/tools/gradcache; give an older build beside it to compare
(e.g. before=/tmp/old/build/tools/gradcache,after=build/tools/gradcache). Each program runs
--repeats times per file, interleaved. Writes OUT/load_memory.json.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import architectures  # noqa: E402


def peak_run(command):
    """Seconds and peak RSS (MiB) of `command`, which must succeed."""
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.monotonic() - started
    error = process.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"load_memory.py: {' '.join(command)} failed:\n{error[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def make(work, sizes):
    """The model in fp32 and a copy with bf16 weights, under `work`; made.json says where."""
    import torch
    from safetensors.torch import load_file, save_file

    fp32_dir = architectures.make_model("qwen3", os.path.join(work, "qwen3"), sizes, torch, max_seq_length=128)
    bf16_dir = os.path.join(work, "qwen3_bf16")
    shutil.copytree(fp32_dir, bf16_dir)
    weights = load_file(os.path.join(fp32_dir, "model.safetensors"))
    save_file({k: v.to(torch.bfloat16) for k, v in weights.items()}, os.path.join(bf16_dir, "model.safetensors"),
              metadata={"format": "pt"})
    with open(os.path.join(work, "made.json"), "w") as f:
        json.dump({"fp32": fp32_dir, "bf16": bf16_dir, "parameters": sum(t.numel() for t in weights.values())}, f)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "_make":
        return make(sys.argv[2], json.loads(sys.argv[3]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default="ours=" + os.path.join(ROOT, "build/tools/gradcache"))
    parser.add_argument("--layers", type=int, default=28, help="of the shape's 28")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"))
    args = parser.parse_args()
    programs = dict(item.split("=", 1) for item in args.programs.split(","))
    for name, path in programs.items():
        if not os.access(path, os.X_OK):
            sys.exit(f"load_memory.py: no program {name} at {path}; build first (bash scripts/build.sh)")
    sizes = dict(architectures.QWEN3_06B, num_hidden_layers=args.layers)
    report = {"command": "python3 bench/load_memory.py " + " ".join(sys.argv[1:]), "shape": sizes,
              "programs": programs, "threads": args.threads, "load_average": os.getloadavg()[0], "files": {}}
    with tempfile.TemporaryDirectory(prefix="load_memory.") as work:
        # Made in a child: a process's peak RSS counts what it was forked from, so this one stays small.
        subprocess.run([sys.executable, __file__, "_make", work, json.dumps(sizes)], check=True)
        with open(os.path.join(work, "made.json")) as f:
            made = json.load(f)
        fp32_dir, bf16_dir, parameters = made["fp32"], made["bf16"], made["parameters"]
        corpus = os.path.join(work, "corpus.tsv")
        with open(corpus, "w") as f:
            for i in range(16):
                f.write(f"d{i}\t" + " ".join(architectures.reference.WORDS[(i * 7 + k) % len(architectures.reference.WORDS)]
                                              for k in range(12)) + "\n")
        for label, model_dir in (("fp32", fp32_dir), ("bf16", bf16_dir)):
            row = {"file_mb": os.path.getsize(os.path.join(model_dir, "model.safetensors")) / 2**20,
                   "fp32_parameters_mb": parameters * 4 / 2**20, "runs": {name: [] for name in programs}}
            for repeat in range(args.repeats):
                for name, program in programs.items():
                    out = os.path.join(work, f"out_{name}")
                    seconds, peak = peak_run([program, "encode", "--model-dir", model_dir, "--corpus", corpus,
                                              "--output", out, "--overwrite", "--threads", str(args.threads)])
                    row["runs"][name].append({"seconds": round(seconds, 2), "peak_rss_mb": round(peak, 1)})
                    print(f"load_memory.py: {label} {name}: {seconds:.1f} s, peak {peak:.0f} MiB", flush=True)
            row["peak_rss_mb"] = {name: min(r["peak_rss_mb"] for r in runs) for name, runs in row["runs"].items()}
            report["files"][label] = row
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "load_memory.json")
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"load_memory.py: wrote {out}")


if __name__ == "__main__":
    main()
