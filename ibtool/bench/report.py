"""Tables and plots of a campaign, grouped as the paper's figures: one figure per metric, engines
on the x axis, linear and random mapping side by side, min..max as error bars where the
benchmark gives them (else the spread over repeats).

    REPORT/results.csv   one row per run and metric (failed runs: one row with the reason)
    REPORT/summary.csv   per benchmark, metric, engine, mapping: runs, mean, min, max
    REPORT/report.md     the summary as Markdown tables, failed runs, links to the figures
    REPORT/<figure>.png and .svg
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

from ibtool.bench.benchmarks.base import OK
from ibtool.bench.registry import BENCHMARKS
from ibtool.bench.store import Store
from ibtool.errors import InputError


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.6g}"


def collect(runs: list[dict]):
    """(benchmark, metric) -> (engine, mapping) -> list of values over ok runs; and units."""
    values: dict = defaultdict(lambda: defaultdict(list))
    units: dict = {}
    for r in runs:
        if r["status"] != OK:
            continue
        for name, m in r["result"].get("metrics", {}).items():
            values[(r["benchmark"], name)][(r["engine"], r["mapping"]["policy"])].append(m["value"])
            units[(r["benchmark"], name)] = m["unit"]
    return values, units


def build(campaign_dir: str | Path, out: str | Path | None = None) -> dict:
    store = Store(campaign_dir)
    manifest = store.manifest()
    runs = store.runs()
    if not runs:
        raise InputError("no finished runs in this campaign yet", path=str(campaign_dir))
    out = Path(out) if out else Path(campaign_dir) / "report"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the report directory: {e.strerror or e}", path=str(out)) from None
    engines = manifest["engines"]
    mappings = manifest["mappings"]
    with open(out / "results.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run_id", "engine", "benchmark", "type", "mapping", "repeat", "seed", "status", "metric",
                    "value", "unit", "reason"])
        for r in runs:
            base = [r["run_id"], r["engine"], r["benchmark"], r["type"], r["mapping"]["policy"], r["repeat"],
                    r["mapping"].get("seed") or "", r["status"]]
            metrics = r["result"].get("metrics", {}) if r["status"] == OK else {}
            if not metrics:
                w.writerow(base + ["", "", "", "; ".join(r.get("reasons", []))])
            for name, m in sorted(metrics.items()):
                w.writerow(base + [name, repr(m["value"]), m["unit"], ""])
    values, units = collect(runs)
    rows = []
    for (bench, metric), cells in sorted(values.items()):
        for (engine, mp), vals in sorted(cells.items()):
            rows.append([bench, metric, units[(bench, metric)], engine, mp, len(vals), statistics.fmean(vals),
                         min(vals), max(vals)])
    with open(out / "summary.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["benchmark", "metric", "unit", "engine", "mapping", "runs", "mean", "min", "max"])
        w.writerows([r[:6] + [repr(x) for x in r[6:]] for r in rows])
    figures = plots(runs, values, units, engines, mappings, out)
    md = markdown(manifest, runs, values, units, engines, mappings, figures)
    (out / "report.md").write_text(md)
    return {"dir": str(out), "runs": len(runs), "figures": figures, "rows": len(rows)}


def _figures_of(runs: list[dict]):
    seen = {}
    for r in runs:
        seen.setdefault(r["benchmark"], r["type"])
    for bench, btype in sorted(seen.items()):
        for f in BENCHMARKS.get(btype).figures:
            yield bench, f


def plots(runs, values, units, engines, mappings, out: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    made = []
    for bench, fig in _figures_of(runs):
        cells = values.get((bench, fig.metric))
        if not cells:
            continue
        x = np.arange(len(engines))
        width = 0.8 / max(1, len(mappings))
        f, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(engines) + 2), 3.6))
        for i, mp in enumerate(mappings):
            means, lo, hi = [], [], []
            for e in engines:
                vals = cells.get((e, mp), [])
                m = statistics.fmean(vals) if vals else np.nan
                if fig.band and values.get((bench, fig.band[0])) and vals:
                    low = min(values[(bench, fig.band[0])].get((e, mp), [m]))
                    high = max(values[(bench, fig.band[1])].get((e, mp), [m]))
                else:
                    low, high = (min(vals), max(vals)) if vals else (np.nan, np.nan)
                means.append(m)
                lo.append(max(0.0, m - low) if vals else 0.0)
                hi.append(max(0.0, high - m) if vals else 0.0)
            ax.bar(x + (i - (len(mappings) - 1) / 2) * width, means, width, yerr=[lo, hi], capsize=3, label=mp)
        ax.set_xticks(x, engines)
        ax.set_xlabel("routing engine")
        ax.set_ylabel(f"{fig.metric} [{fig.unit}]")
        band = "\n(bars: avg, whiskers: min..max)" if fig.band else ""
        ax.set_title(f"{bench}: {fig.title}{band}", fontsize=9)
        ax.legend(title="task mapping", fontsize=8)
        f.tight_layout()
        name = fig.name if bench == fig.name.split("_")[0] else f"{bench}_{fig.name}"
        for ext in ("png", "svg"):
            f.savefig(out / f"{name}.{ext}")
        plt.close(f)
        made.append(name)
    return made


def markdown(manifest, runs, values, units, engines, mappings, figures) -> str:
    lines = ["# Benchmark campaign report", "",
             f"Benchmarks: {', '.join(manifest['benchmarks'])}; mappings: {', '.join(mappings)}; "
             f"engines: {', '.join(engines)}; repeats: {manifest['repeat']}; seed: {manifest['seed']}.", ""]
    by_status = defaultdict(int)
    for r in runs:
        by_status[r["status"]] += 1
    lines += [f"Runs stored: {len(runs)} of {len(manifest['runs'])} planned ("
              + ", ".join(f"{k} {v}" for k, v in sorted(by_status.items())) + ").", ""]
    for (bench, metric), cells in sorted(values.items()):
        lines += [f"## {bench}: {metric} [{units[(bench, metric)]}]", "",
                  "| engine | " + " | ".join(f"{m} mean (min..max, n)" for m in mappings) + " |",
                  "|---|" + "---|" * len(mappings)]
        for e in engines:
            cols = []
            for mp in mappings:
                v = cells.get((e, mp))
                cols.append(f"{_fmt(statistics.fmean(v))} ({_fmt(min(v))}..{_fmt(max(v))}, {len(v)})" if v else "-")
            lines.append(f"| {e} | " + " | ".join(cols) + " |")
        lines.append("")
    bad = [r for r in runs if r["status"] != OK]
    if bad:
        lines += ["## Runs that did not give a valid result", "", "| run | status | reason |", "|---|---|---|"]
        for r in bad:
            reason = "; ".join(r.get("reasons", [])).replace("|", "/")
            lines.append(f"| {r['run_id']} | {r['status']} | {reason} |")
        lines.append("")
    if figures:
        lines += ["## Figures", ""] + [f"![{n}]({n}.png)" for n in figures] + [""]
    return "\n".join(lines)
