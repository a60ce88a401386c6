#!/usr/bin/env python3
"""Speed of gradcache::hf::Tokenizer against Hugging Face `tokenizers`, every tokenizer kind, one
thread each, the same texts, on this machine.

    .venv/bin/python bench/tokenizer_speed.py --dir KINDS_DIR --corpus CORPUS \\
        [--bench build/bench/gradcache-tokenizer-speed-bench] --out docs/figures/tokenizer_speed.json \\
        [--kinds roberta llama3 ...] [--rounds 5] [--repeats 3] [--short 4000] [--long 400]

KINDS_DIR and CORPUS: what tests/hf/tokenizer_kinds.py makes (`tokenizer_kinds.py all DIR`, then
CORPUS is DIR/corpus.txt); `tokenizer_kinds.py time DIR CORPUS OUT_JSON [options]` runs this.

Texts, both taken from the corpus's real lines (valid UTF-8, in corpus order, spread evenly):
- short: lines of 10 to 20 words (WordNet glosses, package descriptions, man page lines: the size
  of a query or a sentence);
- long: runs of consecutive real lines joined with spaces until they hold 200 to 400 words (a
  passage).

Python is timed as sentence-transformers has it timed: transformers' fast tokenizer calls
Tokenizer.encode_batch on each batch of 32 texts (add_special_tokens=True; truncation and padding
are left off on both sides, so that both do the same work). One thread: RAYON_NUM_THREADS=1 and
TOKENIZERS_PARALLELISM=false are set before `tokenizers` is imported, and the script checks it
(the process's CPU time over wall time while Python encodes stays near 1, and the process has one
thread: both recorded). Ours: the C++
program encodes every text in order with Tokenizer::encode on one thread. Both sides run R passes
after a warm-up and report the median pass; the two take turns (Python, C++, Python, C++, ...)
for --rounds rounds, and the median round counts. A checksum of all ids says whether both sides
gave the same ids (they must: the tests check it on every line).

Per kind and text set the JSON has texts/s and tokens/s of each side and ratio = ours / theirs
(above 1: ours is faster); `machine` records the CPU, core count and versions.
"""
import os

# Before `tokenizers` is imported: its thread pool is sized once, when first used.
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "hf"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import tokenizer_kinds  # noqa: E402

BATCH = 32  # sentence-transformers' default batch size
DEFAULT_BENCH = os.path.join(HERE, "..", "build", "bench", "gradcache-tokenizer-speed-bench")
MASK64 = (1 << 64) - 1


# ---- texts -----------------------------------------------------------------------------------
def real_texts(corpus):
    """The corpus's real lines (they come before the crafted ones: CORPUS.sources.json says how
    many), those that are UTF-8, decoded."""
    with open(corpus, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    sources = tokenizer_kinds.sources_path(corpus)
    if os.path.exists(sources):
        with open(sources) as f:
            lines = lines[:json.load(f)["real_lines"]]
    texts = []
    for line in lines:
        try:
            texts.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            continue
    return texts


def short_texts(texts, count):
    chosen = [t for t in texts if 10 <= len(t.split()) <= 20 and "\r" not in t]
    return tokenizer_kinds.fixtures.every(chosen, count)


def long_texts(texts, count):
    """Runs of consecutive lines of 200-400 words, starting at evenly spread lines."""
    out = []
    step = max(1, len(texts) // count)
    for start in range(0, len(texts), step):
        words, parts = 0, []
        for line in texts[start:start + 400]:
            n = len(line.split())
            if words + n > 400:
                break
            parts.append(line.strip())
            words += n
        if words >= 200:
            out.append(" ".join(parts))
        if len(out) == count:
            break
    return out


def write_texts(path, texts):
    with open(path, "wb") as f:
        for text in texts:
            f.write(text.encode("utf-8") + b"\n")


# ---- the two sides ---------------------------------------------------------------------------
def checksum(all_ids):
    h = 0
    for ids in all_ids:
        for i in ids:
            h = (h * 1000003 + i + 1) & MASK64
    return h


def python_pass(tokenizer, texts):
    ids = []
    for i in range(0, len(texts), BATCH):
        ids.extend(e.ids for e in tokenizer.encode_batch(texts[i:i + BATCH]))
    return ids


def time_python(tokenizer, texts, repeats):
    """(median pass seconds, ids of a pass, CPU seconds / wall seconds over the passes)."""
    ids = python_pass(tokenizer, texts)  # warm-up
    passes = []
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    for _ in range(repeats):
        start = time.perf_counter()
        python_pass(tokenizer, texts)
        passes.append(time.perf_counter() - start)
    cpu_ratio = (time.process_time() - cpu_start) / (time.perf_counter() - wall_start)
    return statistics.median(passes), ids, cpu_ratio


def time_ours(bench, kind_dir, texts_path, repeats):
    run = subprocess.run([bench, kind_dir, texts_path, "--repeats", str(repeats)], capture_output=True, text=True)
    if run.returncode != 0:
        return {"error": (run.stderr or run.stdout).strip()[-500:]}
    return json.loads(run.stdout)


def rates(texts, tokens, seconds):
    return {"seconds": round(seconds, 6), "texts_per_s": round(texts / seconds, 1),
            "tokens_per_s": round(tokens / seconds, 1)}


def measure(kind, kind_dir, sets, bench, rounds, repeats):
    import tokenizers

    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(kind_dir, "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    result = {}
    for name, (texts, path) in sets.items():
        python_seconds, ours_seconds, cpu_ratios = [], [], []
        ours, ids = None, None
        for _ in range(rounds):
            seconds, ids, cpu_ratio = time_python(tokenizer, texts, repeats)
            python_seconds.append(seconds)
            cpu_ratios.append(cpu_ratio)
            ours = time_ours(bench, kind_dir, path, repeats)
            if "error" in ours:
                break
            ours_seconds.append(ours["seconds"])
        tokens = sum(map(len, ids))
        theirs = rates(len(texts), tokens, statistics.median(python_seconds))
        theirs["cpu_per_wall"] = round(max(cpu_ratios), 3)
        row = {"texts": len(texts), "tokens": tokens, "python_tokenizers": theirs}
        if "error" in ours:
            row["ours"] = {"error": ours["error"]}
        else:
            row["ours"] = rates(len(texts), ours["tokens"], statistics.median(ours_seconds))
            row["same_ids"] = ours["checksum"] == checksum(ids) and ours["tokens"] == tokens
            row["ratio"] = round(row["ours"]["tokens_per_s"] / theirs["tokens_per_s"], 3)
        result[name] = row
        shown = f"ratio {row['ratio']:.2f}" if "ratio" in row else "ours: " + row["ours"]["error"][:100]
        print(f"{kind:28s} {name:5s} {len(texts):5d} texts {tokens:8,} ids  tokenizers "
              f"{theirs['tokens_per_s']:12,.0f} ids/s  ours "
              f"{row['ours'].get('tokens_per_s', 0):12,.0f} ids/s  {shown}"
              f"{'' if row.get('same_ids', True) else '  (IDS DIFFER)'}", flush=True)
    return result


# ---- the machine -----------------------------------------------------------------------------
def process_threads():
    """The threads of this process (Linux), after `tokenizers` has encoded: 1 when it kept to the
    calling thread (with its defaults it starts a pool, one thread per core)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def load_average():
    """The 1-minute load average: other work on the machine slows both sides (they take turns)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def machine(bench_compiler):
    import tokenizers

    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "load_average_1min_at_start": load_average(),
            "system": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "tokenizers": tokenizers.__version__, "bench_compiler": bench_compiler,
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z")}


# What each kind is, for the table of docs/huggingface.md (tokenizer_kinds.py's builders say more).
KIND_NAMES = {
    "bert": "WordPiece: all-MiniLM-L6-v2's own file (bge, e5, gte)",
    "mpnet": "WordPiece, `<s> A </s>`: all-mpnet-base-v2",
    "roberta": "byte-level BPE, RobertaProcessing: roberta-base",
    "gpt2": "byte-level BPE: gpt2",
    "modernbert": "byte-level BPE, NFC, `[CLS] A [SEP]`: ModernBERT, gte-modernbert",
    "llama3": "byte-level BPE, Split `\\p{N}{1,3}`, ignore_merges: Llama-3",
    "qwen2": "byte-level BPE, NFC, Split `\\p{N}`: Qwen2.5, Qwen3",
    "qwen3_embedding": "as qwen2, end-of-text token appended, left padding: Qwen3-Embedding",
    "bloom": "byte-level BPE, BLOOM's Split: BLOOM (SGPT)",
    "clip": "BPE with `</w>`, Split removed + invert: CLIP",
    "llama2": "SentencePiece BPE, Prepend + Replace, byte_fallback: Llama-2, Mistral (e5-mistral, RepLLaMA)",
    "llama2_metaspace": "SentencePiece BPE, Metaspace first: Mistral v0.3, non-legacy Llama",
    "gemma": "SentencePiece BPE, Replace, Split, byte_fallback: Gemma, EmbeddingGemma",
    "xlmr": "Unigram, Precompiled, Metaspace: XLM-R (multilingual-e5, bge-m3)",
    "xlmr_hub": "the same in the older hub layout",
    "t5": "Unigram, Precompiled, `A </s>`: gtr-t5, sentence-t5",
    "components_nfkc": "NFKC, Lowercase, StripAccents, Replace, Digits, Punctuation, added-token options",
    "components_nfkd": "NFKD, Strip, WhitespaceSplit, Whitespace",
    "components_split": "Split: each behaviour and invert, a Sequence",
    "components_metaspace_first": "Metaspace first after Strip, post-processor Sequence",
    "components_metaspace_never": "Metaspace never, split off",
    "components_unigram": "Unigram with byte_fallback",
    "components_bpe_fuse_unk": "BPE with an unknown token, fused",
    "components_bpe_unk": "BPE with an unknown token, not fused",
}
DOC_BEGIN = "<!-- tokenizer table: written by bench/tokenizer_speed.py --doc; do not edit -->"
DOC_END = "<!-- end of the tokenizer table -->"


def write_doc_table(report, doc, lines):
    """The kind x (exact, speed) table of docs/huggingface.md, between its marker lines."""
    sys.path.insert(0, HERE)
    from doc_block import write_block

    rows = ["| kind (the real files it mirrors) | exact vs `tokenizers` (`TokenizerKinds.<kind>`) | "
            "short texts: tokens/s, ours / theirs | long texts: tokens/s, ours / theirs |",
            "|---|---|---|---|"]
    for kind, result in report["kinds"].items():
        cells = []
        for name in ("short", "long"):
            r = result[name]
            cells.append(f"{r['ours']['tokens_per_s'] / 1e6:.2f}M / {r['python_tokenizers']['tokens_per_s'] / 1e6:.2f}M "
                         f"= **{r['ratio']:.2f}x**")
        rows.append(f"| `{kind}`: {KIND_NAMES.get(kind, '')} | {lines:,} lines x 2, 0 mismatches | "
                    f"{cells[0]} | {cells[1]} |")
    machine = report["machine"]
    rows.append("")
    rows.append(f"`docs/figures/tokenizer_speed.json`, {machine.get('date', '')}: {machine.get('cpu', '')}, one thread each; "
                f"exactness: every corpus line with and without the special tokens (expected.txt, "
                f"expected_plain.txt), the test fails on any mismatch.")
    write_block(doc, DOC_BEGIN, DOC_END, "\n".join(rows), "gradcache::hf")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, help="the directory tokenizer_kinds.py made")
    parser.add_argument("--corpus", required=True, help="its corpus (DIR/corpus.txt)")
    parser.add_argument("--bench", default=DEFAULT_BENCH,
                        help="the gradcache-tokenizer-speed-bench program (default: build/bench/'s)")
    parser.add_argument("--out", required=True, help="the JSON to write")
    parser.add_argument("--kinds", nargs="*", help="these kinds only (default: every kind in DIR)")
    parser.add_argument("--rounds", type=int, default=5, help="turns each side takes (the median counts)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per turn (the median counts)")
    parser.add_argument("--short", type=int, default=4000, help="short texts")
    parser.add_argument("--long", type=int, default=400, help="long texts")
    parser.add_argument("--doc", help="also write the table of this Markdown file (docs/huggingface.md)")
    args = parser.parse_args()

    import tokenizers  # noqa: F401  (after the environment above)

    if not os.access(args.bench, os.X_OK):
        sys.exit(f"{args.bench}: no such program; build it (target gradcache_tokenizer_speed_bench) or give --bench")
    texts = real_texts(args.corpus)
    kinds = args.kinds or tokenizer_kinds.kinds_in(args.dir)
    missing = [k for k in kinds if not os.path.exists(os.path.join(args.dir, k, "tokenizer.json"))]
    if missing:
        sys.exit(f"{args.dir} has no tokenizer for {', '.join(missing)}: run tokenizer_kinds.py all {args.dir}")
    short, long = short_texts(texts, args.short), long_texts(texts, args.long)
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        sets = {"short": (short, os.path.join(scratch, "short.txt")), "long": (long, os.path.join(scratch, "long.txt"))}
        for name, (set_texts, path) in sets.items():
            write_texts(path, set_texts)
        first = time_ours(args.bench, os.path.join(args.dir, kinds[0]), sets["short"][1], 1)
        machine_facts = machine(first.get("compiler"))  # the load average before the measurements
        for kind in kinds:
            results[kind] = measure(kind, os.path.join(args.dir, kind), sets, args.bench, args.rounds, args.repeats)
    cpu_per_wall = max(r[s]["python_tokenizers"]["cpu_per_wall"] for r in results.values() for s in r)
    threads = process_threads()
    ratios = [r[s]["ratio"] for r in results.values() for s in r if "ratio" in r[s]]
    report = {
        "made_by": "bench/tokenizer_speed.py",
        "machine": dict(machine_facts, load_average_1min_at_end=load_average()),
        "settings": {"threads": 1, "python_batch": BATCH, "rounds": args.rounds, "repeats": args.repeats,
                     "short_texts": len(short), "short_words": [10, 20], "long_texts": len(long),
                     "long_words": [200, 400], "add_special_tokens": True, "truncation": None,
                     "RAYON_NUM_THREADS": os.environ["RAYON_NUM_THREADS"],
                     "TOKENIZERS_PARALLELISM": os.environ["TOKENIZERS_PARALLELISM"]},
        "python_one_thread": {"max_cpu_per_wall": cpu_per_wall, "process_threads_after": threads,
                              "one_thread": cpu_per_wall < 1.3 and threads in (1, None)},
        "summary": {"kinds": len(results), "min_ratio": min(ratios) if ratios else None,
                    "median_ratio": round(statistics.median(ratios), 3) if ratios else None,
                    "all_same_ids": all(r[s].get("same_ids", False) for r in results.values() for s in r)},
        "kinds": results,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    print(f"{args.out}: {len(results)} kinds; ours / tokenizers tokens per second: min "
          f"{report['summary']['min_ratio']}, median {report['summary']['median_ratio']}; Python's CPU / wall "
          f"at most {cpu_per_wall:.2f}, {threads} thread(s) in this process")
    if not report["python_one_thread"]["one_thread"]:
        sys.exit("tokenizers used more than one thread: the comparison is not one thread against one")
    if args.doc:
        with open(args.corpus, "rb") as f:
            lines = sum(1 for _ in f)
        write_doc_table(report, args.doc, lines)
        print(f"{args.doc}: the tokenizer table written")


if __name__ == "__main__":
    main()
