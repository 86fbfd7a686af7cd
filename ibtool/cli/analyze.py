"""`ibtool analyze`: topology metrics of a plan, an emulated run or a real ibnetdiscover dump."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import click

from ibtool import __version__, plan, plandir, rundir
from ibtool.cli import InPath, OutPath
from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.formats import atomic_write, ibnetdiscover
from ibtool.layout import POLICIES, Layout, place
from ibtool.templating import render

# what a directory may hold, in the order looked for: a plan, then an `ibtool sim run` result
FABRIC_FILES = (plandir.NET, rundir.FABRIC)


def load(path: Path) -> tuple[Fabric, plan.Plan | None]:
    """The fabric at PATH (a plan or run directory, or a net/ibnetdiscover file) and the plan
    when PATH is a plan directory."""
    if not path.is_dir():
        return ibnetdiscover.read(path), None
    if plan.Plan.at(path).net.is_file():  # a plan: read as every command reads one (its family's labels too)
        fabric, p, _ = plan.read_plan(path)
        return fabric, p
    if not rundir.fabric(path).is_file():
        raise InputError(f"{path}: no {' or '.join(FABRIC_FILES)} in this directory")
    fabric = ibnetdiscover.read(rundir.fabric(path))
    fabric.name = path.resolve().name
    return fabric, None


def layout_for(fabric: Fabric, plan_dir: plan.Plan | None, layout_opt: str | None, site: Path | None) -> Layout | None:
    """The layout analyze uses: --layout POLICY (placed now), --layout FILE, --layout none; else the
    plan's layout.json, else the fabric placed by its family's policy, as `ibtool cabling` does."""
    if site and not layout_opt:
        raise InputError("--site needs --layout POLICY")
    if layout_opt == "none":
        if site:
            raise InputError("--site applies to --layout POLICY, not to --layout none")
        return None
    if layout_opt and (layout_opt in POLICIES or layout_opt == "default"):
        return place(fabric, None if layout_opt == "default" else layout_opt, site)
    if layout_opt:
        if site:
            raise InputError("--site applies to --layout POLICY, not to a layout file")
        if not Path(layout_opt).is_file():
            raise InputError(f"--layout {layout_opt}: neither a file nor a policy ({', '.join(POLICIES)}, default, "
                             f"none)")
        return Layout.read(layout_opt, fabric)
    return plan.read_layout(fabric, plan_dir) if plan_dir else place(fabric)


# options of the one-fabric report that mean nothing for --plot, and those only --plot reads
REPORT_ONLY = ("save_layout", "prices", "html_out", "bisection", "samples", "seed", "switch_delay")
PLOT_ONLY = ("switch_delays", "metric", "routing")


def _flag(name: str) -> str:
    return "--" + {"html_out": "html"}.get(name, name).replace("_", "-")


def parse_figures(text: str) -> tuple[str, dict]:
    """'KANTC(8,8)', 'mikantc(k=6, n=7)', 'slimfly(q=23)': a family and its parameters, positional
    values in the order of the family's parameters (`ibtool topo FAMILY --help`)."""
    from ibtool.topologies import load_all
    m = re.fullmatch(r"\s*([A-Za-z][\w-]*)\s*\((.*)\)\s*", text)
    if not m:
        raise InputError(f"--figures {text!r}: expected FAMILY(ARGS), e.g. 'KANTC(8,8)' or 'slimfly(q=23)'")
    reg = load_all()
    fam = m.group(1).lower()
    t = reg.get(fam)
    if t is None:
        raise InputError(f"--figures {text!r}: no family {fam!r} (ibtool topo list)")
    if t.figures is None:
        with_figures = ", ".join(n for n, x in reg.items() if x.figures)
        raise InputError(f"--figures {text!r}: {fam} has no paper figures (families that have: {with_figures})")
    params = {p.name: p.default for p in t.params if p.default is not None}
    names = [p.name for p in t.params]
    args = [a.strip() for a in m.group(2).split(",") if a.strip()]
    for i, a in enumerate(args):
        key, _, val = a.rpartition("=")
        key = key.strip().replace("-", "_") or (names[i] if i < len(names) else "")
        if key not in names:
            raise InputError(f"--figures {text!r}: {fam} has no parameter {key!r} (its parameters: "
                             f"{', '.join(names)})")
        typ = next(p.type for p in t.params if p.name == key)
        try:
            params[key] = typ(val.strip())
        except ValueError:
            raise InputError(f"--figures {text!r}: {key} = {val.strip()!r} is not a {typ.__name__}") from None
    missing = [p.name for p in t.params if p.default is None and p.name not in params]
    if missing:
        raise InputError(f"--figures {text!r}: {fam} needs {', '.join(missing)}")
    return fam, {"topology": fam, **params}


@click.command(name="analyze")
@click.argument("paths", metavar="PATH...", nargs=-1, type=InPath(exists=True))
@click.option("--layout", "layout_opt", metavar="FILE|POLICY",
              help=f"A layout.json, a placement policy ({', '.join(POLICIES)}, or 'default' for the "
                   "family's), or 'none' (no cables, no latency). Default, as for `ibtool cabling`: PATH/layout.json "
                   "when the plan has one, else the family's policy (sequential for a fabric of no family).")
@click.option("--site", type=InPath(), help="YAML site description for --layout POLICY.")
@click.option("--save-layout", type=OutPath(),
              help="Write the layout used to this layout.json (e.g. PLAN_DIR/layout.json).")
@click.option("--prices", type=InPath(), help="YAML price table for the cost per endpoint.")
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
@click.option("--figures", "figures_of", metavar="FAMILY(ARGS)",
              help="Instead of PATH: the source paper's figures of a plan from its parameters alone, without "
                   "building it (sizes too big to build), e.g. 'KANTC(8,8)', 'MiKANTC(6,7)'.")
@click.option("--html", "html_out", type=OutPath(), help="Also write an HTML report here.")
@click.option("--plot", "plot_out", type=OutPath(),
              help="Draw latency vs switch delay, one curve per PATH (paper 004's Fig. 5) into this .svg or .png "
                   "instead of the report; --json prints the numbers behind it.")
@click.option("--switch-delays", default="0:500:20", show_default=True, metavar="START:STOP:STEP|A,B,...",
              help="--plot: the switch delays (ns) of the x axis.")
@click.option("--metric", type=click.Choice(["max", "mean"]), default="max", show_default=True,
              help="--plot: maximum or average latency over the endpoint-switch pairs.")
@click.option("--routing", type=click.Choice(["FR", "NR"], case_sensitive=False), default="FR", show_default=True,
              help="--plot: Fastest Routing (Fig. 5) or Nearest Routing (paper 004's Fig. 1).")
@click.pass_context
def group(ctx, paths, layout_opt, site, save_layout, prices, bisection, samples, seed, switch_delay, cable_delay,
          endpoint_delay, as_json, figures_of, html_out, plot_out, switch_delays, metric, routing):
    """Metrics of a fabric: counts, distances, path diversity, bisection (b_r, B_r), Moore bound;
    with a layout also cable totals and paper 004's NR/FR latency; with --prices the cost.
    With --plot, paper 004's Fig. 5 instead: latency vs switch delay, one curve per PATH.

    PATH is a plan directory (ibtool topo ... --out DIR), an `ibtool sim run` result directory,
    or a topology.net / ibnetdiscover output file; several PATHs only with --plot.

    \b
    Examples:
      ibtool analyze cellia                                   # the plan's metrics
      ibtool analyze cellia --layout switch-rack --site cellia-site.yaml --save-layout cellia/layout.json
      ibtool analyze run/ibnetdiscover.out --json             # what the emulated fabric reports
      ibtool analyze real.ibnetdiscover --layout cabinet-aware --prices prices.yaml --html report.html
      # paper 004's Fig. 5 from plans written by ibtool topo (each with its layout.json):
      ibtool analyze sky torus hyperx --plot fig5.svg --switch-delays 60:500:20 --metric max
      ibtool analyze sky torus --plot fig5.png --switch-delays 0,60,100,200 --json > fig5.json
      # paper 001's cost ratios, path diversity and RCP of a plan too big to build:
      ibtool analyze --figures 'KANTC(8,8)'
      ibtool analyze --figures 'MiKANTC(6,7)' --json
    """
    given = {k for k in (*REPORT_ONLY, *PLOT_ONLY)
             if ctx.get_parameter_source(k) is not click.core.ParameterSource.DEFAULT}
    if figures_of:
        if paths or plot_out or given or layout_opt:
            raise InputError("--figures takes no PATH and no other option but --json")
        return _figures(figures_of, as_json)
    if not paths:
        raise InputError("give a PATH (a plan, a run or an ibnetdiscover file), or --figures FAMILY(ARGS)")
    if plot_out:
        for k in REPORT_ONLY:
            if k in given:
                raise InputError(f"{_flag(k)} applies to the report, not to --plot"
                                 + (" (use --switch-delays)" if k == "switch_delay" else ""))
        return _plot(paths, plot_out, layout_opt, site, switch_delays, metric, routing.upper(),
                     (cable_delay, endpoint_delay), as_json)
    for k in PLOT_ONLY:
        if k in given:
            raise InputError(f"{_flag(k)} applies only with --plot FILE")
    if len(paths) > 1:
        raise InputError(f"{len(paths)} PATHs: the report reads one; several only with --plot FILE")
    path = paths[0]
    fabric, plan_dir = load(path)
    if save_layout and not layout_opt:
        raise InputError("--save-layout needs a layout (--layout POLICY)")
    lay = layout_for(fabric, plan_dir, layout_opt, site)
    # ibtool.analyze pulls in scipy and networkx: imported here, not when any ibtool command starts
    from ibtool.analyze import LatencyModel, analyze, text
    from ibtool.analyze.report import fmt_prices, fmt_value
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
            from ibtool.drawing import made_at
            fh.write(render("analyze.html.j2", r=report, histogram=_histogram, made=made_at(), version=__version__,
                            fmt_prices=fmt_prices, fmt_value=fmt_value))
    click.echo(json.dumps(report, indent=2) if as_json else text(report))


def _histogram(hist: dict, title: str) -> str:
    """A distance histogram with its axes and counts (ibtool.drawing.chart), inline in the report."""
    from ibtool.drawing.chart import histogram
    return histogram(hist, title, "hops", "pairs")


def _figures(text: str, as_json: bool) -> None:
    from ibtool.analyze.report import fmt_value
    from ibtool.topologies import load_all
    fam, params = parse_figures(text)
    rows = load_all()[fam].figures(params).get("figures", [])  # out-of-range parameters: one line, exit 2
    if not rows:
        raise InputError(f"--figures {text!r}: {fam}'s paper figures need a plan: ibtool analyze PLAN")
    if as_json:
        click.echo(json.dumps({"family": fam, "params": params, "figures": rows}, indent=2))
        return
    click.echo(f"{text.strip()}: the source paper's figures from the parameters (no fabric built)")
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        click.echo(f"  {r['name']:<{width}}  {fmt_value(r['value']):>18}  {r['formula']}  ({r['source']})")


def _plot(paths, out: Path, layout_opt, site, switch_delays: str, metric: str, routing: str, delays_ns, as_json):
    """`--plot`: every PATH and its layout are read and checked before the first curve is drawn."""
    from ibtool.analyze import LatencyModel
    from ibtool.analyze.plot import check_output, curve, figure, parse_delays
    delays = parse_delays(switch_delays)
    check_output(out)
    if layout_opt and layout_opt not in POLICIES and layout_opt not in ("default", "none") and len(paths) > 1:
        raise InputError(f"--layout {layout_opt}: a layout file fits one fabric; with several PATHs give a policy "
                         f"({', '.join(POLICIES)}, default) or let each plan use its layout.json")
    model = LatencyModel(0.0, *delays_ns)
    fabrics = []
    for path in paths:
        fabric, plan_dir = load(path)
        lay = layout_for(fabric, plan_dir, layout_opt, site)
        if lay is None:
            raise InputError("--layout none: the latency model needs cable lengths (drop it, or give a policy)")
        fabrics.append((path, fabric, lay))
    names = [f.name for _, f, _ in fabrics]
    tty = sys.stderr.isatty()
    ticker = (lambda m: click.echo(f"\r  {m}\x1b[K", err=True, nl=False)) if tty else None
    curves = []
    for path, fabric, lay in fabrics:
        # the plan's topology name labels its curve; the path tells apart two plans of one name
        label = fabric.name if names.count(fabric.name) == 1 else f"{fabric.name} ({path})"
        t = time.monotonic()
        curves.append(curve(fabric, lay, delays, model, routing, label, ticker))
        done = f"  {label}: {len(delays)} switch delays in {time.monotonic() - t:.2f} s"
        click.echo(f"\r{done}\x1b[K" if tty else done, err=True)
    figure(curves, out, (metric,), f"{'Maximum' if metric == 'max' else 'Average'} latency vs switch delay "
                                   f"({routing}; paper 004, Fig. 5)")
    key = "max_ns" if metric == "max" else "average_ns"
    if as_json:
        click.echo(json.dumps({"plot": str(out), "metric": metric, "routing": routing, "switch_delays_ns": delays,
                               "curves": curves}, indent=2))
        return
    width = max(12, *(len(c["label"]) for c in curves))
    click.echo(f"{routing} {'maximum' if metric == 'max' else 'average'} latency [ns]; figure: {out}")
    click.echo(f"{'switch ns':>9}  " + "  ".join(f"{c['label']:>{width}}" for c in curves))
    for i, d in enumerate(delays):
        click.echo(f"{d:>9g}  " + "  ".join(f"{c['points'][i][key]:>{width},.1f}" for c in curves))
    click.echo(f"{'cable km':>9}  " + "  ".join(f"{c['switch_cable_km']:>{width},.1f}" for c in curves))
