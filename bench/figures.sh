#!/usr/bin/env bash
# Every measured figure the README and docs/ quote, regenerated into docs/ (JSON and logs
# that the text names). Run on an otherwise idle machine: the runs go one after another.
#
#   bash bench/figures.sh [PART...]      # default: the parts below but fuzz, in this order
#
# Parts and what they write (about how long each takes on the 2-core machine):
#   exactness    docs/figures/exactness.log: the [exactness] lines of the core tests (10 s)
#   bench        docs/figures/bench.json, docs/figures/bench.png (+ .dat, .gp): gradcache-bench all (3 min)
#   distributed  docs/figures/bench_distributed.json: 1 vs 2 processes, 15 timed steps (1 min)
#   sharded      docs/figures/bench_sharded_loss.json: the loss alone, gathered vs sharded (ring) over 1, 2, 4
#                processes, N up to 65,536, d = 256 (15 min; not in the default list)
#   precision    docs/figures/bench_precision_512.json: fp32 vs bf16 at 512 pairs / chunks of 64 (1 min)
#   streaming    docs/figures/streaming_bench.json, docs/figures/streaming_bench.png: dense vs streaming loss (3 min)
#   tiles        docs/figures/streaming_tiles.json: the streaming loss's time at N = 8192 per tile size (1 min)
#   streaming-main  docs/figures/streaming_main.json + .log: `gradcache train --loss streaming` at a batch of
#                16,384 vs --loss infonce, peak RSS against each loss's predicted memory
#                (bash bench/streaming_main.sh; 5 min)
#   soak         docs/figures/soak.json: RSS over 1,000 training steps, growth after warm-up (2 min)
#   fuzz         docs/figures/fuzz.log: scripts/fuzz.sh 60, each fuzz target's runs, exec/s, coverage
#                (6 min once build-asan is built, 10-30 min more before; not in the default list)
#   ci           docs/figures/ci.log: `bash .ci/run` on a clean clone of HEAD in a scratch directory:
#                each step's time, the sanitizer tests' and the fuzz targets' summaries (about an
#                hour; not in the default list). ccache is used if warm; CCACHE_DISABLE=1 makes
#                every compile cold, as on CI's own machine
#   search       docs/figures/search.json: FAISS flat vs exact_top_k, HNSW, IVF-PQ and BM25 on the WordNet
#                test split, with a --quick model (gradcache-search-bench; 3 min)
#   negatives    docs/negatives.md + .json: in-batch vs BM25 vs dense-mined negatives, 3 seeds
#                (bash bench/negatives.sh; about 40 min; not in the default list)
#   matryoshka   docs/matryoshka.md + .json: one --matryoshka 64,32,16 encoder at each prefix vs
#                encoders trained at 64, 32, 16 alone, same budget (bash bench/matryoshka.sh; about
#                15 min; not in the default list)
#   sorting      docs/figures/length_sorting.json: the program with and without length sorting (2 min)
#   data-scale   docs/figures/data_scale.json: peak RSS and start-up of `gradcache train` on synthetic pair
#                files of 10^5 to 5x10^7 pairs, and 10^6 pairs as TSV, JSONL, Parquet and Arrow
#                (bench/data_scale.py; 20 min, 4 GB of scratch; not in the default list)
#   prefetch     docs/figures/prefetch.json: all-MiniLM-L6-v2's step with batches tokenized in the step and
#                ahead on a background thread (bench/prefetch.py; 5 min)
#   nproc        docs/figures/main_nproc.log: the main job with --nproc 1 and --nproc auto (bench/main_nproc.sh;
#                10 min; not in the default list)
#   trainable    docs/figures/trainable_memory.json: a decoder of Qwen3-Embedding-0.6B's shape trained whole,
#                bias-only, with its embeddings frozen, with LoRA and with LoRA on a bf16 base, beside
#                sentence-transformers (+PEFT): seconds and peak RSS of a cache step; and
#                trainable_memory_1.7b.json, LoRA on Qwen3-1.7B's shape (bench/trainable.py; 15 + 15 min;
#                not in the default list)
#   load         docs/figures/load_memory.json: peak RSS of `gradcache encode --model-dir` on Qwen3-0.6B's
#                shape, weights in fp32 and bf16 (bench/load_memory.py; 5 min; LOAD_BEFORE=PATH adds an
#                older build's program beside build/tools/gradcache; not in the default list)
#   main         docs/figures/main_job.log: the README's main job, `bash scripts/main.sh` (4-6 min)
#   shape        docs/figures/code_shape.json: function and file lengths, the lines of one cache step
#
# The binaries are build/bench/gradcache-bench, build/tools/gradcache and
# build/tests/core/gradcache_tests (bash scripts/build.sh makes them).
set -euo pipefail
cd "$(dirname "$0")/.."

bench=build/bench/gradcache-bench
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(exactness bench distributed precision streaming tiles streaming-main soak search sorting prefetch main shape)

note() { echo "figures: $(date +%H:%M:%S) $*" >&2; }

for part in "${parts[@]}"; do
  note "$part (load average $(cut -d' ' -f1 /proc/loadavg))"
  case "$part" in
    exactness)
      build/tests/core/gradcache_tests 2>&1 | grep '^\[exactness\]' >docs/figures/exactness.log ;;
    bench)
      "$bench" all --json --plot docs/figures/bench.png >docs/figures/bench.json.tmp && mv docs/figures/bench.json.tmp docs/figures/bench.json ;;
    distributed)
      "$bench" distributed --reps 15 --json >docs/figures/bench_distributed.json.tmp &&
        mv docs/figures/bench_distributed.json.tmp docs/figures/bench_distributed.json ;;
    sharded)
      "$bench" sharded-loss --json >docs/figures/bench_sharded_loss.json.tmp &&
        mv docs/figures/bench_sharded_loss.json.tmp docs/figures/bench_sharded_loss.json ;;
    precision)
      "$bench" precision --batch 512 --chunk 64 --reps 3 --json >docs/figures/bench_precision_512.json.tmp &&
        mv docs/figures/bench_precision_512.json.tmp docs/figures/bench_precision_512.json ;;
    streaming)
      "$bench" streaming --json --plot docs/figures/streaming_bench.png >docs/figures/streaming_bench.json.tmp &&
        mv docs/figures/streaming_bench.json.tmp docs/figures/streaming_bench.json ;;
    tiles)
      "$bench" streaming --tile-sweep 8192 --json >docs/figures/streaming_tiles.json.tmp &&
        mv docs/figures/streaming_tiles.json.tmp docs/figures/streaming_tiles.json ;;
    streaming-main)
      bash bench/streaming_main.sh >/dev/null ;;
    soak)
      "$bench" soak --json >docs/figures/soak.json.tmp && mv docs/figures/soak.json.tmp docs/figures/soak.json ;;
    fuzz)
      { echo "\$ bash scripts/fuzz.sh 60   # $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1 /proc/loadavg), ccache $([ "${CCACHE_DISABLE:-}" = 1 ] && echo off || echo on)"
        bash scripts/fuzz.sh 60 2>&1 | sed -n '/^== summary/,$p'; } >docs/figures/fuzz.log.tmp && mv docs/figures/fuzz.log.tmp docs/figures/fuzz.log ;;
    ci)
      clone=$(mktemp -d /tmp/gradcache-ci.XXXXXX)
      git clone -q . "$clone"
      { echo "\$ bash .ci/run   # on a clean clone of $(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1 /proc/loadavg), ccache $([ "${CCACHE_DISABLE:-}" = 1 ] && echo off || echo on)"
        (cd "$clone" && bash .ci/run 2>&1) |
          grep -E '^(====|== sanitize.sh|fuzz_|  [a-z].*: [0-9]+ s$|[0-9]+% tests passed|Total Test time)'; } \
        >docs/figures/ci.log.tmp && mv docs/figures/ci.log.tmp docs/figures/ci.log
      rm -rf "$clone" ;;
    search)
      run=$(mktemp -d /tmp/gradcache-search.XXXXXX)
      build/tools/gradcache train --quick --eval false --output "$run/run" --overwrite >/dev/null 2>&1
      build/bench/gradcache-search-bench --checkpoint "$run/run" --repeats 3 --threads 1 --output docs/figures/search.json
      rm -rf "$run" ;;
    negatives)
      bash bench/negatives.sh --out "runs/negatives-$(date +%Y%m%d-%H%M%S)" ;;
    matryoshka)
      bash bench/matryoshka.sh --out "runs/matryoshka-$(date +%Y%m%d-%H%M%S)" ;;
    trainable)
      .venv/bin/python bench/trainable.py --out docs/figures
      .venv/bin/python bench/trainable.py --shape 1.7b --rows lora16,st-cached-lora16,lora16-bf16-base --out docs/figures ;;
    load)
      .venv/bin/python bench/load_memory.py --programs "${LOAD_BEFORE:+before=$LOAD_BEFORE,}after=build/tools/gradcache" ;;
    sorting)
      python3 bench/length_sorting.py --out docs/figures/length_sorting.json ;;
    data-scale)
      .venv/bin/python bench/data_scale.py --out docs/figures/data_scale.json ;;
    prefetch)
      .venv/bin/python bench/prefetch.py --out docs/figures/prefetch.json ;;
    nproc)
      bash bench/main_nproc.sh >/dev/null ;;
    main)
      # The main job exactly as the README's first command runs it, into a fresh run directory.
      { echo "\$ bash scripts/main.sh   # $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1 /proc/loadavg), ccache $([ "${CCACHE_DISABLE:-}" = 1 ] && echo off || echo on)"
        SECONDS=0
        bash scripts/main.sh 2>&1
        echo "main job: ${SECONDS} s wall in all (the build, already done, included)"; } \
        >docs/figures/main_job.log.tmp 2>&1 && mv docs/figures/main_job.log.tmp docs/figures/main_job.log ;;
    shape)
      python3 scripts/code_shape.py --json --top 10 >docs/figures/code_shape.json || true ;;
    *)
      echo "figures: unknown part '$part' (see the header of bench/figures.sh)" >&2; exit 2 ;;
  esac
done
note "done"
