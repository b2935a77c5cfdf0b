"""The two plots of the README and docs/text.md, from the benchmarks' JSON results (bench/results/, made by
bench/run_index.sh and bench/run_text.sh):

  docs/img/lookup_latency.png   p50 latency of one lookup vs table size: simhash_near at k = 3
                                and k = 7 through the block indexes, the exact sequential scan
                                (serial and parallel), and the primary-key lookup (the floor)
  docs/img/recall_vs_edits.png  share of planted near-copies found vs the share of words edited,
                                for k = 3, 6 and 8, Chinese news and English e-mail

    bench/.venv/bin/python bench/plots.py [--lookup JSON ...] [--quality JSON]
"""
import argparse
import json
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
OUT = HERE.parent / "docs" / "img"

LOOKUP_SERIES = [
    ("seq serial", "exact sequential scan, serial", "tab:red", "o"),
    ("seq parallel (2 workers)", "exact sequential scan, 2 workers", "tab:orange", "o"),
    ("hnsw", "pgvector HNSW on bit(64), approximate (PostgreSQL 16)", "tab:purple", "D"),
    ("near7", "simhash_near(fp, $1, 7), block indexes", "tab:blue", "s"),
    ("near3", "simhash_near(fp, $1, 3), block indexes", "tab:green", "s"),
    ("pk", "primary-key lookup (the floor)", "black", "^"),
]


def lookup_points(paths):
    """{method: {rows: median p50 ms}} over every table of every JSON file given."""
    points = {}
    for path in paths:
        report = json.loads(Path(path).read_text())
        for table in report["tables"]:
            rows = table["build"]["rows"]
            for method, runs in table["runs"].items():
                if runs:
                    points.setdefault(method, {})[rows] = statistics.median(r["p50_ms"] for r in runs)
    return points


def plot_lookup(paths, out):
    points = lookup_points(paths)
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    for method, label, color, marker in LOOKUP_SERIES:
        if method not in points:
            continue
        xs = sorted(points[method])
        ax.plot(xs, [points[method][x] for x in xs], marker=marker, color=color, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows in the table")
    ax.set_ylabel("p50 latency per lookup (ms, log scale)")
    ax.set_title("One near-duplicate lookup vs table size (PostgreSQL 15, prepared, 1 client)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    print(f"wrote {out}")


def plot_quality(path, out, ks=("3", "6", "8")):
    report = json.loads(Path(path).read_text())
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 4.2), dpi=120, sharey=True)
    for ax, (lang, title) in zip(axes, [("zh", "Chinese news (People's Daily 1998)"), ("en", "English e-mail (SpamAssassin)")]):
        method = next(m for m in report[lang]["results"] if m.startswith("simhash_pg default"))
        by_k = report[lang]["results"][method]
        for k in ks:
            rates = sorted(by_k[k]["recall"], key=float)
            fpr = by_k[k]["false_positive_rate"]
            ax.plot([100 * float(r) for r in rates], [100 * by_k[k]["recall"][r] for r in rates], marker="o",
                    label=f"k = {k} (false positives {100 * fpr:.3f} %)")
        ax.set_xscale("log")
        ax.set_xlabel("words edited (%, log scale)")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("planted near-copies found (%)")
    fig.suptitle("Detection recall vs edit rate, default simhash(text)", fontsize=11)
    fig.tight_layout()
    fig.savefig(out)
    print(f"wrote {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lookup", nargs="+", default=[str(p) for p in sorted(RESULTS.glob("index_lookup*.json"))])
    ap.add_argument("--quality", default=str(RESULTS / "text_quality.json"))
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    plot_lookup(args.lookup, OUT / "lookup_latency.png")
    plot_quality(args.quality, OUT / "recall_vs_edits.png")


if __name__ == "__main__":
    main()
