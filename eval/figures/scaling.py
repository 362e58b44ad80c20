#!/usr/bin/env python3
"""Draws BENCHMARKS.md's scaling figure from the scaling tool's numbers.

Reads eval/figures/scaling_16core.csv (the tables of one `eval/scaling.sh` run on a 16-core
machine: items, workload, peer, threads, M ops/s, speedup over 1 thread) and writes
eval/figures/scaling_16core.svg: M ops/s against threads, both on log scales, one panel a
workload at 1,000,000 items, so that a line's height is its speed and its slope its scaling.
Python's standard library only:

    python3 eval/figures/scaling.py
"""

import csv
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "scaling_16core.csv")
TARGET = os.path.join(HERE, "scaling_16core.svg")

ITEMS = "1000000"
PANELS = [
    ("contains0", "lookups of absent items"),
    ("mix90", "90% lookups, 5% inserts, 5% removes"),
    ("fill", "fill from empty"),
]
# (peer in the CSV, legend, colour, dashed)
PEERS = [
    ("lockfree-cuckoo", "lockfree-cuckoo", "#1f77b4", False),
    ("lockfree-cuckoo batch", "lockfree-cuckoo, batch calls", "#1f77b4", True),
    ("atomic-cuckoo-filter", "atomic-cuckoo-filter", "#2ca02c", False),
    ("fastbloom (atomic)", "fastbloom (atomic, no remove)", "#9467bd", False),
    ("DashSet<u64>", "DashSet<u64>", "#ff7f0e", False),
    ("cuckoofilter+ahash", "RwLock<cuckoofilter+ahash>", "#d62728", False),
    ("one-CAS floor", "one-CAS floor (any shared table)", "#7f7f7f", True),
]
THREADS = [1, 2, 4, 8, 16]
Y_MIN, Y_MAX = 1.0, 2000.0

PANEL_W, PANEL_H = 270, 250
LEFT, TOP, GAP = 70, 58, 45
WIDTH = LEFT + len(PANELS) * PANEL_W + (len(PANELS) - 1) * GAP + 20
LEGEND_TOP = TOP + PANEL_H + 50
HEIGHT = LEGEND_TOP + 3 * 20 + 10


def load():
    rows = {}
    with open(SOURCE, newline="") as f:
        for row in csv.DictReader(f):
            if row["items"] == ITEMS:
                key = (row["workload"], row["peer"])
                rows.setdefault(key, {})[int(row["threads"])] = float(row["mops"])
    return rows


def esc(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main():
    rows = load()
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">'
        "One shared filter of 1,000,000 items on a 16-core machine: M ops/s by threads</text>",
    ]

    def x_of(panel, threads):
        x0 = LEFT + panel * (PANEL_W + GAP)
        return x0 + PANEL_W * math.log2(threads) / math.log2(THREADS[-1])

    def y_of(mops):
        share = (math.log10(mops) - math.log10(Y_MIN)) / (math.log10(Y_MAX) - math.log10(Y_MIN))
        return TOP + PANEL_H * (1 - share)

    for p, (workload, title) in enumerate(PANELS):
        x0 = LEFT + p * (PANEL_W + GAP)
        out.append(
            f'<text x="{x0 + PANEL_W / 2}" y="{TOP - 12}" text-anchor="middle" '
            f'font-weight="bold">{esc(title)}</text>'
        )
        for decade in (1, 10, 100, 1000):
            y = y_of(decade)
            out.append(
                f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PANEL_W}" y2="{y:.1f}" stroke="#e0e0e0"/>'
            )
            out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{decade}</text>')
        for t in THREADS:
            x = x_of(p, t)
            out.append(
                f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + PANEL_H}" stroke="#e0e0e0"/>'
            )
            out.append(
                f'<text x="{x:.1f}" y="{TOP + PANEL_H + 16}" text-anchor="middle">{t}</text>'
            )
        out.append(
            f'<rect x="{x0}" y="{TOP}" width="{PANEL_W}" height="{PANEL_H}" fill="none" '
            'stroke="#000000"/>'
        )
        out.append(
            f'<text x="{x0 + PANEL_W / 2}" y="{TOP + PANEL_H + 34}" text-anchor="middle">'
            "threads</text>"
        )
        # Linear scaling from our one-thread point, as a guide.
        ours = rows.get((workload, "lockfree-cuckoo"))
        if ours:
            y1, y16 = y_of(ours[1]), y_of(min(ours[1] * 16, Y_MAX))
            x16 = x_of(p, 16) if ours[1] * 16 <= Y_MAX else x_of(p, Y_MAX / ours[1])
            out.append(
                f'<line x1="{x_of(p, 1):.1f}" y1="{y1:.1f}" x2="{x16:.1f}" y2="{y16:.1f}" '
                'stroke="#999999" stroke-dasharray="2,3"/>'
            )
        for peer, _, colour, dashed in PEERS:
            points = rows.get((workload, peer))
            if not points:
                continue
            path = " ".join(f"{x_of(p, t):.1f},{y_of(points[t]):.1f}" for t in THREADS)
            dash = ' stroke-dasharray="6,4"' if dashed else ""
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
            )
            for t in THREADS:
                out.append(
                    f'<circle cx="{x_of(p, t):.1f}" cy="{y_of(points[t]):.1f}" r="2.5" '
                    f'fill="{colour}"/>'
                )
    out.append(
        f'<text transform="translate(18,{TOP + PANEL_H / 2}) rotate(-90)" text-anchor="middle">'
        "M ops/s (log scale)</text>"
    )

    legend = [(name, colour, dashed) for _, name, colour, dashed in PEERS]
    legend.append(("linear scaling from lockfree-cuckoo's 1 thread", "#999999", None))
    columns = 3
    for i, (name, colour, dashed) in enumerate(legend):
        x = LEFT + (i % columns) * ((WIDTH - LEFT) / columns)
        y = LEGEND_TOP + (i // columns) * 20
        dash = ' stroke-dasharray="6,4"' if dashed else (
            ' stroke-dasharray="2,3"' if dashed is None else "")
        width = 1 if dashed is None else 2
        out.append(
            f'<line x1="{x:.1f}" y1="{y}" x2="{x + 26:.1f}" y2="{y}" stroke="{colour}" '
            f'stroke-width="{width}"{dash}/>'
        )
        out.append(f'<text x="{x + 32:.1f}" y="{y + 4}">{esc(name)}</text>')
    out.append("</svg>")
    with open(TARGET, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
