"""`ibtool collect`: gather topology, forwarding tables, SL-to-VL tables and port counters from a
live fabric into a run directory `ibtool verify all` reads."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ibtool.cli import OutPath


@click.command(name="collect")
@click.option("--out", "-o", type=OutPath(directory=True), required=True, help="Run directory to write.")
@click.option("--ca", "-C", default=None, help="Local HCA to use (as the diags' -C).")
@click.option("--port", "-P", type=click.IntRange(1, 254), default=None, help="Local port to use (as the diags' -P).")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(min=1, max=86400),
              help="Seconds for each tool run.")
@click.option("--parallel", default=8, show_default=True, type=click.IntRange(1, 64),
              help="Queries at once (SL2VL, counters).")
@click.option("--path-sls", "path_sls", type=click.Choice(["auto", "on", "off"]), default="auto", show_default=True,
              help="Ask the SA for every HCA-to-HCA PathRecord (the SLs of the routes; one query per pair, "
                   "all from one process): auto = up to 1,024 HCA ports (1,046,528 pairs, about a minute), "
                   "on = any number.")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json.")
def group(out, ca, port, timeout, parallel, path_sls, as_json):
    """Collect everything verification needs from the fabric this host is on.

    \b
    Writes into OUT:
      ibnetdiscover.out   topology
      dump_fts.out        forwarding tables, complete (the top LID dump_fts drops is read with smpdump)
      sl2vl.dump          SL-to-VL tables of every switch port (OpenSM's dump layout)
      perfquery.out       port counters of every cabled port
      saquery-paths.out   every HCA-to-HCA PathRecord (its SL), where the SA answers (--path-sls)
      summary.json        what was collected, what failed (per item), tool versions, time

    A device that does not answer is recorded, not fatal. Then:
      ibtool verify all OUT --plan PLAN/topology.net     # cabling, routes, deadlock, cable health
      ibtool verify health OUT --baseline OUT0          # counter deltas since an earlier collection

    \b
    Under ibsim (any diags client works the same way):
      LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so IBSIM_SOCKNAME=... ibtool collect -o run
    """
    from ibtool.collect import collect
    say = None if as_json else (lambda m: click.echo(f"  {m}", err=True))
    s = collect(out, ca, port, timeout, parallel, say, path_sls)
    if as_json:
        click.echo(json.dumps(s, indent=2))
    else:
        for name, item in s["items"].items():
            state = "ok" if item.get("ok") else "FAILED"
            if item.get("collected") is False:
                state = "not collected"
            extra = f", {len(item['failed'])} did not answer" if item.get("failed") else ""
            click.echo(f"  {name}: {state}{extra}")
        click.echo(f"collected in {s['timings']['total_s']} s; results in {out}")
    if not s["ok"]:
        raise SystemExit(1)
