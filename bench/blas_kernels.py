#!/usr/bin/env python3
"""MKL (inside the torch wheel's LibTorch) against Debian's OpenBLAS on all-MiniLM-L6-v2's matrix
shapes, one thread each: what a program gains when LibTorch's sgemm_ binds to the wheel's MKL
(cmake/gradcache_helpers.cmake, gradcache_link_torch_blas_first) rather than to libblas.so.3.

    .venv/bin/python bench/blas_kernels.py [--out docs/figures/blas_kernels.json]

Shapes: 20 tokens x 32 rows against the attention projections (384 x 384) and the feed-forward
layers (384 x 1536, 1536 x 384), and 64 x 32 rows against 384 x 1536. Each is timed as 50 calls,
the two libraries alternating, best of 3 rounds; results are checked against each other first.
"""
import argparse
import ctypes
import json
import os
import time

import torch

SHAPES = [(640, 384, 1536), (640, 1536, 384), (640, 384, 384), (2048, 384, 1536)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    openblas = ctypes.CDLL("libopenblas.so.0")
    openblas.openblas_set_num_threads(1)

    def openblas_mm(a, b, c):
        m, k = a.shape
        n = b.shape[1]
        openblas.cblas_sgemm(101, 111, 111, m, n, k, ctypes.c_float(1.0), ctypes.c_void_p(a.data_ptr()), k,
                             ctypes.c_void_p(b.data_ptr()), n, ctypes.c_float(0.0), ctypes.c_void_p(c.data_ptr()), n)

    rows = []
    for m, k, n in SHAPES:
        a, b, c = torch.randn(m, k), torch.randn(k, n), torch.empty(m, n)
        openblas_mm(a, b, c)
        assert torch.allclose(c, a @ b, atol=1e-3), "OpenBLAS and MKL disagree"
        best = {"mkl": float("inf"), "openblas": float("inf")}
        for _ in range(3):
            for name, fn in (("mkl", lambda: torch.mm(a, b, out=c)), ("openblas", lambda: openblas_mm(a, b, c))):
                start = time.perf_counter()
                for _ in range(50):
                    fn()
                best[name] = min(best[name], (time.perf_counter() - start) / 50)
        rows.append({"m": m, "k": k, "n": n, "mkl_ms": best["mkl"] * 1e3, "openblas_ms": best["openblas"] * 1e3,
                     "mkl_gflops": 2 * m * k * n / best["mkl"] / 1e9,
                     "openblas_gflops": 2 * m * k * n / best["openblas"] / 1e9,
                     "mkl_speedup": best["openblas"] / best["mkl"]})
        print(json.dumps(rows[-1]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"threads": 1, "torch": torch.__version__, "load_average": os.getloadavg()[0], "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
