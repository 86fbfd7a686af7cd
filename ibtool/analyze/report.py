"""One analysis of a fabric (and its layout): every metric in one dict, as text, JSON or HTML."""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from ibtool.analyze import bisection as bis
from ibtool.analyze import cost as costs
from ibtool.analyze.distances import distances
from ibtool.analyze.graph import Graph, build
from ibtool.analyze.latency import DEFAULT_MODEL, LatencyModel, latency
from ibtool.analyze.paths import diversity
from ibtool.errors import InputError
from ibtool.fabric import SWITCH, Fabric
from ibtool.registry import TOPOLOGIES


def counts(g: Graph) -> dict:
    f = g.fabric
    sw = g.switches
    nports = np.asarray(f.nports)[sw]
    used = np.zeros(f.num_nodes, dtype=np.int64)
    np.add.at(used, np.asarray(f.link_a, dtype=np.int64), 1)
    np.add.at(used, np.asarray(f.link_b, dtype=np.int64), 1)
    u = used[sw]
    inter = np.asarray(g.adj.sum(axis=1)).ravel().astype(np.int64)  # inter-switch links per switch
    neigh = np.diff(g.adj.indptr)  # distinct switch neighbours
    return {
        "switches": len(sw), "hcas": int(f.num_nodes - len(sw)), "links": f.num_links,
        "links_by_kind": g.kinds,
        "radix": {str(k): v for k, v in sorted(Counter(nports.tolist()).items())},
        "ports": {"used": int(u.sum()), "free": int((nports - u).sum()),
                  "used_per_switch": _minmax(u), "free_per_switch": _minmax(nports - u),
                  "free_histogram": _hist(nports - u)},  # free ports: number of switches
        "degree": {"inter_switch_links": _hist(inter), "switch_neighbours": _hist(neigh),
                   "hcas_per_switch": _hist(g.hcas_on)},
    }


KINDS = ("switch-switch", "switch-hca", "hca-hca")
KIND_LABEL = {"switch-switch": "switch-to-switch", "switch-hca": "switch-to-HCA", "hca-hca": "HCA-to-HCA"}


def cables_by_kind(layout) -> dict:
    """The layout's cable totals split by link kind: paper 004's Fig. 5 counts switch-to-switch
    cables only, a bill of materials every cable. Per kind: cables, length, length bought, per
    medium and per purchasable length, unplaced (the layout's own lengths, media and catalogue)."""
    f = layout.fabric
    t = np.asarray(f.types)
    a, b = t[np.asarray(f.link_a, dtype=np.int64)], t[np.asarray(f.link_b, dtype=np.int64)]
    sw = (a == SWITCH).astype(np.int8) + (b == SWITCH).astype(np.int8)  # 2, 1, 0 switch ends
    out = {}
    for kind, ends in zip(KINDS, (2, 1, 0)):
        sel = sw == ends
        if not sel.any():
            continue
        length, purch, med = layout.length[sel], layout.purchasable[sel], layout.medium[sel]
        placed = ~np.isnan(length)
        per_medium = {m: {"cables": int((med == m).sum()), "length_m": round(float(np.nansum(length[med == m])), 3),
                          "purchased_m": round(float(np.nansum(purch[med == m])), 3)} for m in ("copper", "fiber")}
        buy = Counter(float(x) for x in purch[~np.isnan(purch)])
        out[kind] = {"cables": int(sel.sum()), "length_m": round(float(length[placed].sum()), 3),
                     "purchased_m": round(float(np.nansum(purch)), 3), "unplaced": int((~placed).sum()),
                     "per_medium": per_medium,
                     "per_purchasable_length": {f"{k:g}": v for k, v in sorted(buy.items())}}
    return out


def _minmax(a: np.ndarray) -> dict:
    if not len(a):
        return {"min": 0, "average": 0.0, "max": 0}
    return {"min": int(a.min()), "average": round(float(a.mean()), 3), "max": int(a.max())}


def _hist(a: np.ndarray) -> dict:
    return {str(k): int(v) for k, v in enumerate(np.bincount(np.asarray(a, dtype=np.int64))) if v}


def moore(g: Graph, diameter: int) -> dict:
    """Moore bound M(d, D) = 1 + d * sum_{i<D} (d-1)^i for a direct fabric (every switch hosts
    HCAs, or none does): the most switches degree d and diameter D allow; ratio = N / M."""
    direct = bool((g.hcas_on > 0).all() or not g.hcas_on.any())
    if not direct:
        return {"applies": False, "why": "not a direct fabric: some switches host no HCAs"}
    d = int(np.diff(g.adj.indptr).max()) if g.n else 0
    bound = 1 + d * sum((d - 1) ** i for i in range(diameter))
    # significant digits, not decimals: a torus is a tiny fraction of its bound (8x16x16 at diameter 20: 1.4e-11)
    return {"applies": True, "degree": d, "diameter": diameter, "bound": bound,
            "ratio": float(f"{g.n / bound:.6g}") if bound else None}


def paper_figures(params: dict) -> dict:
    """The figures the family's source paper defines for a plan (ibtool.topologies' `figures`),
    from the plan's parameters; {} for a fabric without a family (a dump)."""
    fam = params.get("topology") if params else None
    if not fam:
        return {}
    t = TOPOLOGIES.find(str(fam))  # the family's registration (@topology(figures=...))
    if t is None or t.figures is None:
        return {}
    try:
        return t.figures(params)
    except (KeyError, TypeError, ValueError, InputError):  # a fabric.json the formulas do not cover
        return {}


def analyze(fabric: Fabric, layout=None, *, prices: dict | None = None, model: LatencyModel = DEFAULT_MODEL,
            samples: int = 32, seed: int = 0, bisection: str = "auto", progress=None, ticker=None) -> dict:
    """Every metric of issue 11 for `fabric` (+ `layout` for cables and latency). `bisection`:
    'auto', 'exact', 'heuristic' or 'none'. `progress(msg)` gets one line per stage, `ticker(msg)`
    the progress inside the long stages (for a terminal)."""
    t0 = time.monotonic()
    timings = {}

    def stage(name):
        timings[name] = round(time.monotonic() - t0 - sum(timings.values()), 3)
        if progress:
            progress(f"{name}: {timings[name]:.2f} s")

    g = build(fabric)
    out = {"fabric": fabric.name, "params": fabric.params, "counts": counts(g)}
    stage("counts")
    dist = distances(g, ticker)
    worst = dist.pop("worst_pairs")
    out["distance"] = dist
    stage("distances")
    out["path_diversity"] = diversity(g, samples, seed, worst)
    stage("path diversity")
    paper = paper_figures(fabric.params)
    if bisection != "none":
        out["bisection"] = bis.bisection(g, bisection)
        if "bisection" in paper:  # the family paper's own measure, labelled, beside the true bisection
            out["bisection"]["paper"] = paper["bisection"]
        stage("bisection")
    if paper.get("figures"):
        out["paper"] = paper["figures"]
    out["moore"] = moore(g, dist["switch"]["diameter"])
    if layout is not None:
        out["layout"] = {"policy": layout.policy, "site": layout.site.to_dict(), **layout.summary(),
                         "by_kind": cables_by_kind(layout)}
        out["latency"] = latency(g, layout.length, model, ticker)
        stage("latency")
    if prices is not None:
        out["cost"] = costs.cost(fabric, layout, prices)
    out["seconds"] = round(time.monotonic() - t0, 3)
    out["timings"] = timings
    return out


def text(r: dict) -> str:
    c = r["counts"]
    lines = [(f"{r['fabric']}: {c['switches']:,} switches, {c['hcas']:,} HCAs, {c['links']:,} links "
              f"({c['links_by_kind']['switch-switch']:,} switch-switch, {c['links_by_kind']['switch-hca']:,} "
              f"switch-HCA)"),
             (f"  radix {', '.join(f'{k} ports x {v}' for k, v in c['radix'].items())}; ports used "
              f"{c['ports']['used']:,}, free {c['ports']['free']:,} (free per switch "
              f"{c['ports']['free_per_switch']['min']}..{c['ports']['free_per_switch']['max']})"),
             f"  inter-switch degree {_fmt_hist(c['degree']['inter_switch_links'])}"]
    for key, label in (("switch", "switch graph"), ("hca", "HCA to HCA")):
        d = r["distance"].get(key)
        if d:
            lines.append(f"  {label}: diameter {d['diameter']}, average distance {d['average']:.4f} over "
                         f"{d['pairs']:,} pairs; hops {_fmt_hist(d['histogram'])}"
                         + (f"; {d['unreachable_pairs']:,} pairs unreachable" if d["unreachable_pairs"] else ""))
    for key in ("sampled", "worst"):
        p = r["path_diversity"][key]
        if p.get("pairs"):
            lines.append(f"  path diversity ({key}, {p['pairs']} pairs{_dropped(p)}): shortest paths "
                         f"{p['shortest_paths']['min']}..{p['shortest_paths']['max']} (avg "
                         f"{p['shortest_paths']['average']}), edge-disjoint {p['edge_disjoint']['min']}.."
                         f"{p['edge_disjoint']['max']}")
    b = r.get("bisection")
    if b:
        lines.append(f"  bisection{' (true minimum)' if 'paper' in b else ''}: {b['links']:,} links ({b['method']}"
                     + (f", lower bound {b['lower_bound']}" if "lower_bound" in b else "")
                     + f"); b_r {b['b_r']}, "
                     + (f"B_r {b['B_r']}" if b["B_r"] is not None else "B_r n/a (no switch-to-switch links)"))
        pb = b.get("paper")
        if pb:
            lines.append(f"  bisection as {pb['source']} measures it ({pb['measure']}): {pb['links']:,} links; "
                         f"B_r {pb['B_r']}, b_r {pb['b_r']} ({pb['b_r_formula']})")
    m = r["moore"]
    lines.append(f"  Moore bound: {m['bound']:,} switches for degree {m['degree']}, diameter {m['diameter']}; "
                 f"ratio {m['ratio']:.3g}" if m["applies"] else f"  Moore bound: n/a ({m['why']})")
    if r.get("paper"):
        lines.append("  the source paper's figures, from the plan's parameters:")
        width = max(len(row["name"]) for row in r["paper"])
        for row in r["paper"]:
            lines.append(f"    {row['name']:<{width}}  {fmt_value(row['value']):>12}  ({row['formula']}; {row['source']})")
    lay = r.get("layout")
    if lay:
        pm = lay["per_medium"]
        lines.append(f"  layout ({lay['policy']}): {lay['cabinets']} cabinets on a {lay['grid'][0]}x{lay['grid'][1]} "
                     f"grid; all cables {lay['total_length_m']:,.1f} m ({lay['total_purchased_m']:,.1f} m bought); "
                     f"copper {pm['copper']['cables']:,} / {pm['copper']['length_m']:,.1f} m, fiber "
                     f"{pm['fiber']['cables']:,} / {pm['fiber']['length_m']:,.1f} m; longest {lay['longest_m']} m "
                     f"({lay['longest_cable']})")
        lines.append(f"  cables per length: {', '.join(f'{k} m x {v}' for k, v in lay['per_purchasable_length'].items())}"
                     + (f"; {lay['unplaced_cables']} unplaced" if lay["unplaced_cables"] else ""))
        for kind, k in lay.get("by_kind", {}).items():
            km = k["per_medium"]
            lines.append(f"    {KIND_LABEL[kind]}: {k['cables']:,} cables, {k['length_m']:,.1f} m "
                         f"({k['length_m'] / 1000:,.3f} km; {k['purchased_m']:,.1f} m bought); copper "
                         f"{km['copper']['cables']:,} / {km['copper']['length_m']:,.1f} m, fiber "
                         f"{km['fiber']['cables']:,} / {km['fiber']['length_m']:,.1f} m; per length "
                         + ", ".join(f"{x} m x {v}" for x, v in k["per_purchasable_length"].items())
                         + (f"; {k['unplaced']} unplaced" if k["unplaced"] else ""))
        la = r["latency"]
        mo = la["model"]
        lines.append(f"  latency (paper 004: {mo['switch_ns']:g} ns/switch, {mo['cable_ns_per_m']:g} ns/m, "
                     f"{mo['endpoint_ns']:g} ns injection+reception; switch-node cables excluded):")
        for k in ("NR", "FR"):
            lines.append(f"    {k}: max {la[k]['max_ns']:,.1f} ns, average {la[k]['average_ns']:,.1f} ns, "
                         f"average hops {la[k]['average_hops']}")
    co = r.get("cost")
    if co:
        lines.append(f"  cost: {co['total']:,.2f} {co['currency']} = " + " + ".join(
            f"{k} {v:,.2f}" for k, v in co["parts"].items()) + f"; per {co['endpoint']} {co['per_endpoint']:,.2f}")
        lines.append(f"    prices used: {fmt_prices(co)}"
                     + ("" if co["cables_priced"] else " (no layout: cables not priced)"))
    return "\n".join(lines)


def fmt_value(v) -> str:
    if isinstance(v, float):
        return f"{v:,.6g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.4g}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _dropped(p: dict) -> str:
    """How many of the asked pairs were not kept, and why (a switch drawn with itself, a pair drawn twice)."""
    asked = p.get("asked")
    if not asked or asked == p["pairs"]:
        return ""
    why = [f"{v} {k}" for k, v in (("drawn with itself", p.get("self_pairs", 0)),
                                   ("drawn twice", p.get("repeated_pairs", 0))) if v]
    return f" of {asked} asked; dropped: {', '.join(why)}"


def fmt_prices(co: dict) -> str:
    """The price table as a person writes it: 'switch 9,000 EUR; copper 1 m 60, 2 m 75 EUR'."""
    cur = f" {co['currency']}" if co["currency"] else ""
    parts = []
    for k, v in co["prices"].items():
        if k == "source":
            continue
        if isinstance(v, dict):
            unit = "m" if k in ("copper", "fiber") else "ports"
            parts.append(f"{k} " + ", ".join(f"{x:g} {unit} {p:,.2f}" for x, p in v.items()) + cur)
        else:
            parts.append(f"{k} {v:,.2f}{cur}")
    src = co["prices"].get("source")
    return "; ".join(parts) + (f" (from {src})" if src else "")


def _fmt_hist(h: dict) -> str:
    return " ".join(f"{k}:{v:,}" for k, v in h.items())
