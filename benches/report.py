#!/usr/bin/env python3
"""Collects criterion results (target/*/criterion) into Markdown tables of M ops/s.

Usage: python3 benches/report.py [criterion-dir] [group-prefix]
"""
import json
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "target/bench/criterion"
prefix = sys.argv[2] if len(sys.argv) > 2 else ""
rows = {}
for dirpath, dirnames, filenames in os.walk(root):
    if os.path.basename(dirpath) != "new" or "benchmark.json" not in filenames:
        continue
    bench = json.load(open(os.path.join(dirpath, "benchmark.json")))
    est = json.load(open(os.path.join(dirpath, "estimates.json")))
    tp = bench.get("throughput") or {}
    elems = tp.get("Elements") or tp.get("Bytes") or 1
    mean = est["mean"]
    lo, hi = mean["confidence_interval"]["lower_bound"], mean["confidence_interval"]["upper_bound"]
    mops = elems * 1e3 / mean["point_estimate"]
    group = bench["group_id"]
    if not group.startswith(prefix):
        continue
    rows.setdefault(group, []).append(
        (bench["function_id"], mops, elems * 1e3 / hi, elems * 1e3 / lo)
    )
for group in sorted(rows):
    print(f"\n### {group}\n")
    print("| peer | M ops/s | 95% CI |")
    print("|---|---:|---|")
    for name, mops, lo, hi in sorted(rows[group], key=lambda r: -r[1]):
        print(f"| {name} | {mops:.2f} | {lo:.2f} - {hi:.2f} |")
