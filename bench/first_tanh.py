"""How often the torch wheel's first tanh of a process is inaccurate, with one and two intra-op threads.

Each trial is a fresh Python process that runs a tiny random BLOOM (transformers; its GELU is a
tanh) twice on the same batch and reports whether the two outputs differ and by how much; the
second call is the accurate one (checked against math.tanh in float64 when they differ). Why the
architecture tests run with one thread (tests/hf/CMakeLists.txt, docs/platform.md):

    .venv/bin/python bench/first_tanh.py --trials 40 > docs/figures/first_tanh.log
"""
import argparse
import collections
import os
import subprocess
import sys

TRIAL = r"""
import math, torch, transformers
transformers.logging.set_verbosity_error()
torch.manual_seed(1005)
config = transformers.BloomConfig(vocab_size=96, hidden_size=32, n_layer=2, n_head=4, initializer_range=0.2)
model = transformers.BloomModel(config).eval()
ids = torch.randint(3, 96, (6, 13))
captured = []
model.h[0].mlp.gelu_impl.register_forward_hook(lambda m, i, o: captured.append((i[0].clone(), o.clone())))
with torch.no_grad():
    first = model(input_ids=ids).last_hidden_state
    second = model(input_ids=ids).last_hidden_state
difference = (first - second).abs().max().item()
(x, gelu_first), (_, gelu_second) = captured
def exact(v): return v * 0.5 * (1 + math.tanh(0.79788456 * v * (1 + 0.044715 * v * v)))
worst = [max(abs(float(a) - exact(float(v))) for v, a in zip(x.flatten(), y.flatten())) for y in (gelu_first, gelu_second)]
print(f"{difference:.3g} {worst[0]:.3g} {worst[1]:.3g}")
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=40)
    args = parser.parse_args()
    import torch
    print(f"torch {torch.__version__}; {args.trials} processes per setting; each line: threads, outcome, processes")
    print("outcome: max |first - second| of last_hidden_state, max |GELU - float64| of the first and second call")
    for threads in (2, 1):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        outcomes = collections.Counter(
            subprocess.run([sys.executable, "-c", TRIAL], env=env, capture_output=True, text=True, check=True).stdout.strip()
            for _ in range(args.trials))
        for outcome, count in sorted(outcomes.items(), key=lambda item: -item[1]):
            print(f"threads {threads}: {outcome}: {count} of {args.trials}", flush=True)


if __name__ == "__main__":
    main()
