"""Paper 004's Fig. 5 for any set of fabrics: latency vs switch delay, one curve per fabric.

    from ibtool.analyze.plot import curve, figure
    c = curve(fabric, layout, [0, 60, 100, 200])        # the numbers (JSON-ready)
    figure([c, ...], "fig5.svg", metrics=("max",))     # SVG or PNG by the file's extension

Each point is `ibtool analyze`'s latency model (ibtool.analyze.latency) at that switch delay:
ordered pairs of distinct endpoint switches, switch-to-node cables left out, Fastest Routing
unless told NR (NR over switch delay is paper 004's Fig. 1).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from ibtool.analyze.graph import build
from ibtool.analyze.latency import (
    DEFAULT_MODEL,
    LatencyModel,
    cable_graph,
    pair_latency,
)
from ibtool.errors import InputError
from ibtool.formats import atomic_write, shown

FORMATS = (".svg", ".png")
METRICS = {"max": ("max_ns", "maximum"), "mean": ("average_ns", "average")}
MAX_POINTS = 1000
MARKERS = ("o", "s", "^", "v", "D", "x", "+", "*", "<", ">")
DASHES = ("-", "--", ":", "-.")


def parse_delays(text: str, option: str = "--switch-delays") -> list[float]:
    """'START:STOP:STEP' (STOP included when the steps reach it) or 'A,B,C', in ns, ascending."""
    try:
        if ":" in text:
            parts = [float(x) for x in text.split(":")]
            if len(parts) != 3:
                raise ValueError
            start, stop, step = parts
            if not all(map(math.isfinite, parts)):
                raise InputError(f"{option} {text}: a switch delay must be a finite number >= 0")
            if step <= 0 or stop < start:
                raise InputError(f"{option} {text}: needs START <= STOP and STEP > 0")
            n = math.floor((stop - start) / step + 1e-9) + 1
            if n > MAX_POINTS:
                raise InputError(f"{option} {text}: {n:,} points; at most {MAX_POINTS}")
            delays = [round(start + i * step, 9) for i in range(n)]
        else:
            delays = [float(x) for x in text.split(",")]
    except ValueError:
        raise InputError(f"{option} {text}: not START:STOP:STEP or a comma-separated list of ns") from None
    if not all(math.isfinite(d) and d >= 0 for d in delays):
        raise InputError(f"{option} {text}: a switch delay must be a finite number >= 0")
    if sorted(set(delays)) != delays:
        raise InputError(f"{option} {text}: the delays must be distinct and ascending")
    return delays


def check_output(path: str | Path) -> Path:
    """The figure's path, refused before any work when its extension or directory will not do."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise InputError(f"--plot {path}: the extension says the format: {' or '.join(FORMATS)}")
    if not path.parent.is_dir():
        raise InputError(f"--plot {path}: no directory {path.parent}")
    return path


def curve(fabric, layout, delays: list[float], model: LatencyModel = DEFAULT_MODEL, routing: str = "FR",
          label: str | None = None, progress=None) -> dict:
    """Max and average latency of `fabric` laid out by `layout` at each switch delay in `delays`."""
    g = build(fabric)
    cables = cable_graph(g, layout.length)
    points = []
    for d in delays:
        r = pair_latency(cables, g.endpoints, replace(model, switch_ns=d), (routing,))[routing]
        points.append({"switch_ns": d, **r})
        if progress:
            progress(f"{label or fabric.name}: {d:g} ns switches: max {r['max_ns']:,.1f} ns, "
                     f"average {r['average_ns']:,.1f} ns")
    km = layout.summary(exclude_hca_links=True)["total_length_m"] / 1000.0
    degree = int(np.asarray(g.adj.sum(axis=1)).max()) if g.n else 0  # inter-switch links, as the paper's legend
    return {"label": label or fabric.name, "routing": routing, "switches": g.n, "endpoint_switches": len(g.endpoints),
            "degree": degree,
            "switch_cable_km": round(km, 3), "model": {"cable_ns_per_m": model.cable_ns_per_m,
                                                       "endpoint_ns": model.endpoint_ns},
            "points": points}


def figure(curves: list[dict], path: str | Path, metrics: tuple[str, ...] = ("max",), title: str | None = None) -> Path:
    """Draw `curves` (from curve()) into `path`, one panel per metric ('max', 'mean'); SVG or PNG
    by the extension, written to a temporary file and renamed (never half a figure)."""
    path = check_output(path)
    bad = [m for m in metrics if m not in METRICS]
    if bad or not metrics:
        raise InputError(f"--metric {','.join(bad) or 'none'}: one of {', '.join(METRICS)}")
    import matplotlib
    matplotlib.use("Agg")  # no display: the file is the output
    import matplotlib.pyplot as plt
    # SVG text stays text (searchable, selectable), not glyph outlines
    matplotlib.rcParams["svg.fonttype"] = "none"
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.2 * len(metrics) + 0.6, 4.2), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        key, word = METRICS[metric]
        for i, c in enumerate(curves):
            x = np.array([p["switch_ns"] for p in c["points"]])
            y = np.array([p[key] for p in c["points"]])
            # marker and dash differ per curve, so curves that coincide (FR = NR families, equal
            # degrees) stay visible on top of each other
            ax.plot(x, y, marker=MARKERS[i % len(MARKERS)], linestyle=DASHES[i % len(DASHES)], markersize=4,
                    markerfacecolor="none", label=f"{c['label']} (degree {c.get('degree', '?')}), "
                                                  f"{c['switch_cable_km']:,.1f} km")
        routing = {c["routing"] for c in curves}
        ax.set_xlabel("switch delay [ns]")
        ax.set_ylabel(f"{word} latency [ns] ({'/'.join(sorted(routing))})")
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title or "Latency vs switch delay (paper 004, Fig. 5)", fontsize=10)
    fig.tight_layout()
    try:
        # no date in the SVG: the same plans give the same file
        with atomic_write(path, "wb", option="--plot") as fh:
            fig.savefig(fh, format=path.suffix[1:].lower(), dpi=110,
                        metadata={"Date": None} if path.suffix.lower() == ".svg" else None)
    except OSError as e:
        raise InputError(f"--plot {shown(path)}: cannot write: {e.strerror}") from None
    finally:
        plt.close(fig)
    return path
