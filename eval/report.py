#!/usr/bin/env python3
"""Collects criterion results into the Markdown tables of BENCHMARKS.md.

Usage: python3 eval/report.py [--prefix GROUP_PREFIX] CRITERION_DIR [CRITERION_DIR ...]

Each CRITERION_DIR is one run's `target/<dir>/criterion` (copy it aside between runs: criterion
keeps only the latest result of each benchmark). Every group becomes a table of M ops/s, one
column per run, and "ours / row": our scalar rate divided by the row's, per run (above 1: we are
faster than that row).
"""
import json
import os
import sys

OURS = "lockfree-cuckoo"


def load(root):
    results = {}
    for dirpath, _, filenames in os.walk(root):
        if os.path.basename(dirpath) != "new" or "benchmark.json" not in filenames:
            continue
        bench = json.load(open(os.path.join(dirpath, "benchmark.json")))
        est = json.load(open(os.path.join(dirpath, "estimates.json")))
        elems = (bench.get("throughput") or {}).get("Elements", 1)
        mops = elems * 1e3 / est["mean"]["point_estimate"]
        results[(bench["group_id"], bench["function_id"])] = mops
    return results


def main(argv):
    prefix = ""
    if len(argv) > 1 and argv[0] == "--prefix":
        prefix, argv = argv[1], argv[2:]
    if not argv:
        argv = ["target/bench/criterion"]
    runs = [load(d) for d in argv]
    groups = sorted({g for g, _ in runs[0] if g.startswith(prefix)})
    names = "ABCDEFGH"
    for group in groups:
        peers = sorted({p for g, p in runs[0] if g == group}, key=lambda p: -runs[0][(group, p)])
        print(f"\n#### `{group}`\n")
        head = " | ".join(f"run {names[i]} M ops/s" for i in range(len(runs)))
        print(f"| peer | {head} | ours / row |")
        print("|---|" + "---:|" * len(runs) + "---:|")
        for p in peers:
            rates = [r.get((group, p)) for r in runs]
            cells = " | ".join("-" if x is None else f"{x:.2f}" for x in rates)
            ratios = []
            for r, x in zip(runs, rates):
                ours = r.get((group, OURS))
                ratios.append("-" if p == OURS or ours is None or not x else f"{ours / x:.2f}")
            print(f"| {p} | {cells} | {' / '.join(ratios)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
