"""Tables and plots of a campaign, grouped as the paper's figures: one figure per metric, engines
on the x axis, linear and random mapping side by side. Bars: mean over the repeats; black
whiskers: the spread over the repeats (min..max of the runs); grey band beside a bar: the
benchmark's own min..max inside its runs where it reports one (HPCC ping-pong over rank pairs ...).
Runs of different parameter generations (``--new-parameters``) are reported as separate groups.

    REPORT/results.csv   one row per run and metric (failed runs: one row with the reason)
    REPORT/summary.csv   per benchmark, metric, engine, mapping: runs, mean, min, max
    REPORT/report.md     the summary as Markdown tables, failed runs, links to the figures
    REPORT/<figure>.png and .svg
"""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from pathlib import Path

from ibtool.bench.benchmarks.base import OK
from ibtool.bench.campaign import run_figure
from ibtool.bench.registry import BENCHMARKS
from ibtool.bench.store import Store
from ibtool.errors import InputError
from ibtool.formats import atomic_write, output_dir


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.6g}"


def group_of(r: dict, generations: bool) -> str:
    """The engine column of a run: its engine, with its parameter generation when there are several."""
    return f"{r['engine']} (gen {r.get('generation') or 1})" if generations else r["engine"]


def collect(runs: list[dict], generations: bool = False):
    """(benchmark, metric) -> (engine group, mapping) -> list of values over ok runs; and units."""
    values: dict = defaultdict(lambda: defaultdict(list))
    units: dict = {}
    for r in runs:
        if r["status"] != OK:
            continue
        for name, m in r["result"].get("metrics", {}).items():
            values[(r["benchmark"], name)][(group_of(r, generations), r["mapping"]["policy"])].append(m["value"])
            units[(r["benchmark"], name)] = m["unit"]
    return values, units


def run_list(campaign_dir: str | Path) -> list[dict]:
    """Every planned run of a campaign: stored ones with status, figure and reasons, the rest 'pending'."""
    store = Store(campaign_dir)
    manifest = store.manifest()
    stored = {r["run_id"]: r for r in store.runs()}
    out = []
    for run_id in manifest["runs"]:
        r = stored.get(run_id)
        engine, bench, mapping, rep = run_id.split("--")
        if r is None:
            out.append({"run_id": run_id, "engine": engine, "benchmark": bench, "mapping": mapping,
                        "repeat": int(rep[1:]), "status": "pending", "generation": None, "figure": "",
                        "reasons": [], "dir": None})
            continue
        from ibtool.bench.benchmarks.base import ParseResult
        res = ParseResult(r["type"], metrics=r["result"].get("metrics", {}))
        out.append({"run_id": run_id, "engine": r["engine"], "benchmark": r["benchmark"],
                    "mapping": r["mapping"]["policy"], "repeat": r["repeat"], "status": r["status"],
                    "generation": r.get("generation", 1), "seed": r["mapping"].get("seed"),
                    "figure": run_figure(r["type"], res) if r["status"] == OK else "",
                    "reasons": r.get("reasons", []), "dir": r["dir"]})
    return out


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) by Lentz's continued fraction (for Student's t)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)) / a
    f, c, d = 1.0, 1.0, 0.0
    for i in range(400):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            num = -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1.0 + num / c if abs(c) > 1e-300 else 1e-300
        f *= c * d
        if abs(1.0 - c * d) < 1e-12:
            break
    return front * (f - 1.0)


def welch_p(a: list[float], b: list[float]) -> float | None:
    """Two-sided p-value of Welch's t-test; None with fewer than 2 values on a side."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.fmean(a) - statistics.fmean(b)
    if va + vb == 0:
        return 1.0 if diff == 0 else 0.0
    t = diff / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return _betainc(df / 2, 0.5, df / (df + t * t))


def compare(dir_a: str | Path, dir_b: str | Path, metric: str | None = None) -> list[dict]:
    """Cells (benchmark, metric, engine, mapping) present in both campaigns: means, ratio, Welch p."""
    for d in (dir_a, dir_b):
        Store(d).manifest()  # a directory that is no campaign is named as such
    va, _ = collect(Store(dir_a).runs())
    vb, units = collect(Store(dir_b).runs())
    rows = []
    for key in sorted(set(va) & set(vb)):
        if metric and key[1] != metric:
            continue
        for cell in sorted(set(va[key]) & set(vb[key])):
            a, b = va[key][cell], vb[key][cell]
            ma, mb = statistics.fmean(a), statistics.fmean(b)
            p = welch_p(a, b)
            rows.append({"benchmark": key[0], "metric": key[1], "unit": units[key], "engine": cell[0],
                         "mapping": cell[1], "n_a": len(a), "n_b": len(b), "mean_a": _round(ma), "mean_b": _round(mb),
                         "ratio": _round(mb / ma) if ma else None, "p_value": None if p is None else _round(p),
                         "significant": p is not None and p < 0.05})
    if not rows:
        raise InputError(f"{dir_a} and {dir_b} have no benchmark, metric, engine and mapping in common"
                         + (f" for metric {metric}" if metric else ""))
    return rows


def _round(v: float) -> float:
    """6 significant digits: what the benchmarks print (%g), no float noise."""
    return float(f"{v:.6g}")


def build(campaign_dir: str | Path, out: str | Path | None = None) -> dict:
    store = Store(campaign_dir)
    manifest = store.manifest()
    runs = store.runs()
    if not runs:
        raise InputError("no finished runs in this campaign yet", path=str(campaign_dir))
    out = output_dir(Path(out) if out else Path(campaign_dir) / "report")
    gens = sorted({r.get("generation") or 1 for r in runs})
    multi = len(gens) > 1
    engines = [f"{e} (gen {g})" for g in gens for e in manifest["engines"]] if multi else manifest["engines"]
    mappings = manifest["mappings"]
    with atomic_write(out / "results.csv") as fh:
        w = csv.writer(fh)
        w.writerow(["run_id", "engine", "benchmark", "type", "mapping", "repeat", "seed", "generation", "status",
                    "metric", "value", "unit", "reason"])
        for r in runs:
            seed = r["mapping"].get("seed")
            base = [r["run_id"], r["engine"], r["benchmark"], r["type"], r["mapping"]["policy"], r["repeat"],
                    "" if seed is None else seed, r.get("generation") or 1, r["status"]]
            metrics = r["result"].get("metrics", {}) if r["status"] == OK else {}
            if not metrics:
                w.writerow(base + ["", "", "", "; ".join(r.get("reasons", []))])
            for name, m in sorted(metrics.items()):
                w.writerow(base + [name, f"{m['value']:.15g}", m["unit"], ""])
    values, units = collect(runs, multi)
    rows = []
    for (bench, metric), cells in sorted(values.items()):
        for (engine, mp), vals in sorted(cells.items()):
            rows.append([bench, metric, units[(bench, metric)], engine, mp, len(vals), _round(statistics.fmean(vals)),
                         _round(min(vals)), _round(max(vals))])
    with atomic_write(out / "summary.csv") as fh:
        w = csv.writer(fh)
        w.writerow(["benchmark", "metric", "unit", "engine", "mapping", "runs", "mean", "min", "max"])
        w.writerows([r[:6] + [f"{x:.6g}" for x in r[6:]] for r in rows])
    figures = plots(runs, values, units, engines, mappings, out)
    md = markdown(manifest, runs, values, units, engines, mappings, figures)
    with atomic_write(out / "report.md") as fh:
        fh.write(md)
    summary = [dict(zip(("benchmark", "metric", "unit", "engine", "mapping", "runs", "mean", "min", "max"), r))
               for r in rows]
    return {"dir": str(out), "runs": len(runs), "figures": figures, "rows": len(rows), "generations": gens,
            "files": sorted(p.name for p in out.iterdir()), "summary": summary, "one_host": one_host(runs)}


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
        f, ax = plt.subplots(figsize=(max(5.5, 1.2 * len(engines) + 4), 3.6))
        own = fig.band and values.get((bench, fig.band[0]))
        for i, mp in enumerate(mappings):
            means, lo, hi, band_lo, band_hi = [], [], [], [], []
            for e in engines:
                vals = cells.get((e, mp), [])
                m = statistics.fmean(vals) if vals else np.nan
                means.append(m)
                lo.append(m - min(vals) if vals else 0.0)  # spread over the repeats
                hi.append(max(vals) - m if vals else 0.0)
                if own:  # the benchmark's own min..max inside its runs (e.g. over rank pairs)
                    mins = values[(bench, fig.band[0])].get((e, mp), [])
                    maxs = values[(bench, fig.band[1])].get((e, mp), [])
                    band_lo.append(max(0.0, m - min(mins)) if vals and mins else 0.0)
                    band_hi.append(max(0.0, max(maxs) - m) if vals and maxs else 0.0)
            pos = x + (i - (len(mappings) - 1) / 2) * width
            ax.bar(pos, means, width, yerr=[lo, hi], capsize=3, ecolor="black", label=f"{mp} mapping")
            if own:
                ax.errorbar(pos + width * 0.3, means, yerr=[band_lo, band_hi], fmt="none", ecolor="grey",
                            elinewidth=3, alpha=0.6, label=f"{bench}'s own min..max" if i == 0 else None)
        ax.set_xticks(x, engines)
        ax.set_xlabel("routing engine")
        ax.set_ylabel(f"{fig.metric} [{fig.unit}]")
        ax.set_title(f"{bench}: {fig.title}\n(bars: mean over repeats, black whiskers: min..max over repeats)",
                     fontsize=9)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)  # never over bars
        f.tight_layout()
        name = fig.name if bench == fig.name.split("_")[0] else f"{bench}_{fig.name}"
        for ext in ("png", "svg"):
            with atomic_write(out / f"{name}.{ext}", "wb") as fh:
                f.savefig(fh, format=ext, bbox_inches="tight")
        plt.close(f)
        made.append(name)
    return made


def one_host(runs: list[dict]) -> dict[str, list[str]]:
    """Runs whose ranks all shared one machine (bench.mapping.machines): machine -> run ids. They
    measured that machine's memory and loopback, not the network."""
    from ibtool.bench.mapping import machines
    out: dict[str, list[str]] = defaultdict(list)
    for r in runs:
        ranks = (r.get("mapping") or {}).get("ranks") or []
        found = machines(x.get("address") or x.get("host") for x in ranks)
        if ranks and len(found) == 1:
            out[found.pop()].append(r["run_id"])
    return dict(out)


def markdown(manifest, runs, values, units, engines, mappings, figures) -> str:
    lines = ["# Benchmark campaign report", "",
             f"Benchmarks: {', '.join(manifest['benchmarks'])}; mappings: {', '.join(mappings)}; "
             f"engines: {', '.join(manifest['engines'])}; repeats: {manifest['repeat']}; campaign seed: {manifest['seed']} "
             "(each random-mapping run's seed is in results.csv).", ""]
    by_status = defaultdict(int)
    for r in runs:
        by_status[r["status"]] += 1
    lines += [f"Runs stored: {len(runs)} of {len(manifest['runs'])} planned ("
              + ", ".join(f"{k} {v}" for k, v in sorted(by_status.items())) + ").", ""]
    for machine, ids in sorted(one_host(runs).items()):
        lines += [f"**{len(ids)} of {len(runs)} runs had all their ranks on one machine ({machine}): they measure "
                  "its memory and loopback, not the network** (the inventory's compute hosts, or the benchmark's "
                  "`hosts`, name one machine).", ""]
    gens = manifest.get("generations") or []
    if len({r.get("generation") or 1 for r in runs}) > 1:
        lines += ["**This campaign mixes parameter generations** (resumed with `--new-parameters`); their runs "
                  "are never pooled: each engine appears once per generation, as `engine (gen N)`.", ""]
        for g in gens[1:]:
            lines.append(f"- generation {g['generation']} (from {g.get('started')}): " + "; ".join(g.get("changed", [])))
        lines.append("")
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
