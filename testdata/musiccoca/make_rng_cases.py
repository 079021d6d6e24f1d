"""Writes rng_cases.json: numpy's legacy np.random.RandomState(seed).randn(n), for
rill-musiccoca's numpy_rng tests. Values are float64 bit patterns (16 hex digits), exact.

Usage: python make_rng_cases.py DIR   (numpy 2.3.5, the oracle's venv)
"""
import json
import sys

import numpy as np

CASES = [(0, 768), (1, 768), (42, 768), (2**32 - 1, 768), (0, 1), (0, 2), (0, 3), (7, 5),
         (123456789, 1001), (2**31, 64), (2**31 - 1, 9), (3, 0), (1, 2000)]


def main():
    d = sys.argv[1]
    out = []
    for seed, n in CASES:
        v = np.random.RandomState(seed).randn(n)
        out.append({"seed": seed, "n": n, "bits": [f"{x:016x}" for x in v.view(np.uint64)]})
    # Several calls on one state: the cached second Gaussian carries across calls.
    rs = np.random.RandomState(5)
    parts = [rs.randn(k) for k in (1, 2, 3, 0, 5)]
    out.append({"seed": 5, "calls": [1, 2, 3, 0, 5],
                "bits": [f"{x:016x}" for p in parts for x in p.view(np.uint64)]})
    json.dump({"generator": f"numpy {np.__version__}", "cases": out},
              open(f"{d}/rng_cases.json", "w"), indent=0)


if __name__ == "__main__":
    main()
