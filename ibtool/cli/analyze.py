"""`ibtool analyze`: topology metrics of a plan, an emulated run or a real ibnetdiscover dump."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.formats import atomic_write, ibnetdiscover
from ibtool.layout import POLICIES, Layout, place
from ibtool.templating import render

# what a directory may hold, in the order looked for: a plan, then an `ibtool sim run` result
FABRIC_FILES = ("topology.net", "ibnetdiscover.out")


def load(path: Path) -> tuple[Fabric, Path | None]:
    """The fabric at PATH (a plan or run directory, or a net/ibnetdiscover file) and the plan's
    layout.json when the directory has one."""
    if path.is_dir():
        net = next((path / n for n in FABRIC_FILES if (path / n).is_file()), None)
        if net is None:
            raise InputError(f"{path}: no {' or '.join(FABRIC_FILES)} in this directory")
        fabric = ibnetdiscover.read(net)
        fabric.name = path.resolve().name
        meta = path / "fabric.json"
        if meta.is_file():  # the plan's parameters: the family picks its layout policy, closed forms
            try:
                summary = json.loads(meta.read_text())
                fabric.params = summary.get("params", {}) or {}
                fabric.name = summary.get("name", fabric.name)
            except (json.JSONDecodeError, AttributeError):
                raise InputError("not a JSON object", path=str(meta)) from None
        lay = path / "layout.json"
        return fabric, lay if lay.is_file() else None
    return ibnetdiscover.read(path), None


@click.command(name="analyze")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--layout", "layout_opt", metavar="FILE|POLICY",
              help=f"A layout.json, or a placement policy ({', '.join(POLICIES)}, or 'default' for the "
                   "family's). Default: PATH/layout.json when the plan has one, else no layout.")
@click.option("--site", type=click.Path(path_type=Path), help="YAML site description for --layout POLICY.")
@click.option("--save-layout", type=click.Path(path_type=Path),
              help="Write the layout used to this layout.json (e.g. PLAN_DIR/layout.json).")
@click.option("--prices", type=click.Path(path_type=Path), help="YAML price table for the cost per endpoint.")
@click.option("--bisection", type=click.Choice(["auto", "exact", "heuristic", "none"]), default="auto",
              show_default=True, help="auto = closed form, else exact (MILP) up to 128 nodes, else METIS.")
@click.option("--samples", type=click.IntRange(1, 100000), default=32, show_default=True,
              help="Random endpoint-switch pairs for path diversity.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sampled pairs.")
@click.option("--switch-delay", type=float, default=60.0, show_default=True, help="ns per switch (paper 004).")
@click.option("--cable-delay", type=float, default=5.0, show_default=True, help="ns per metre of cable.")
@click.option("--endpoint-delay", type=float, default=300.0, show_default=True,
              help="ns of injection + reception.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--html", "html_out", type=click.Path(path_type=Path), help="Also write an HTML report here.")
def group(path, layout_opt, site, save_layout, prices, bisection, samples, seed, switch_delay, cable_delay,
          endpoint_delay, as_json, html_out):
    """Metrics of a fabric: counts, distances, path diversity, bisection (b_r, B_r), Moore bound;
    with a layout also cable totals and paper 004's NR/FR latency; with --prices the cost.

    PATH is a plan directory (ibtool topo ... --out DIR), an `ibtool sim run` result directory,
    or a topology.net / ibnetdiscover output file.

    \b
    Examples:
      ibtool analyze cellia                                   # the plan's metrics
      ibtool analyze cellia --layout switch-rack --site cellia-site.yaml --save-layout cellia/layout.json
      ibtool analyze run/ibnetdiscover.out --json             # what the emulated fabric reports
      ibtool analyze real.ibnetdiscover --layout cabinet-aware --prices prices.yaml --html report.html
    """
    fabric, plan_layout = load(path)
    if site and not layout_opt:
        raise InputError("--site needs --layout POLICY")
    if save_layout and not layout_opt:
        raise InputError("--save-layout needs a layout (--layout POLICY)")
    lay = None
    if layout_opt and (layout_opt in POLICIES or layout_opt == "default"):
        lay = place(fabric, None if layout_opt == "default" else layout_opt, site)
    elif layout_opt:
        if site:
            raise InputError("--site applies to --layout POLICY, not to a layout file")
        if not Path(layout_opt).is_file():
            raise InputError(f"--layout {layout_opt}: neither a file nor a policy ({', '.join(POLICIES)}, default)")
        lay = Layout.read(layout_opt, fabric)
    elif plan_layout:
        lay = Layout.read(plan_layout, fabric)
    # ibtool.analyze pulls in scipy and networkx: imported here, not when any ibtool command starts
    from ibtool.analyze import LatencyModel, analyze, text
    from ibtool.analyze.cost import read_prices
    table = read_prices(prices) if prices else None
    model = LatencyModel(switch_delay, cable_delay, endpoint_delay)
    # progress on stderr: one line per stage on big fabrics; on a terminal also a counter inside
    # the long stages, rewritten in place
    tty = sys.stderr.isatty()
    progress = (lambda m: click.echo(f"\r  {m}\x1b[K" if tty else f"  {m}", err=True)) \
        if fabric.num_nodes > 2000 or tty else None
    ticker = (lambda m: click.echo(f"\r  {m}\x1b[K", err=True, nl=False)) if tty else None
    report = analyze(fabric, lay, prices=table, model=model, samples=samples, seed=seed, bisection=bisection,
                     progress=progress, ticker=ticker)
    report["source"] = str(path)
    if save_layout:
        lay.write(save_layout)
    if html_out:
        with atomic_write(html_out) as fh:
            fh.write(render("analyze.html.j2", r=report, fmt_hist=_bars))
    click.echo(json.dumps(report, indent=2) if as_json else text(report))


def _bars(hist: dict, width: int = 360, height: int = 120) -> dict:
    """Bar geometry of a histogram for the HTML report's inline SVG."""
    items = [(k, v) for k, v in hist.items()]
    top = max((v for _, v in items), default=1) or 1
    bw = width / max(1, len(items))
    bars = [{"x": round(i * bw + 2, 1), "w": round(bw - 4, 1), "h": round(v / top * (height - 20), 1),
             "y": round(height - 14 - v / top * (height - 20), 1), "label": k, "value": v}
            for i, (k, v) in enumerate(items)]
    return {"width": width, "height": height, "bars": bars}
