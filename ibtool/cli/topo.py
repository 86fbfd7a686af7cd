"""`ibtool topo`: generate a topology's plan files."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from ibtool.cli import OutPath
from ibtool.plan import check_out, write_plan
from ibtool.sim import opensm
from ibtool.topologies import load_all


@click.group(name="topo")
def group():
    """Generate topologies: ibsim net file, node-name-map and OpenSM configuration.

    \b
    ibtool topo list                                   # families, parameters, papers
    ibtool topo kns --k 6 --n 2 --radix 8 --out cellia # CELLIA's 6-ary 2-direct 1-indirect
    """


@group.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_cmd(as_json):
    """List the topology families and their parameters."""
    reg = load_all()
    if as_json:
        click.echo(json.dumps({n: {"summary": t.summary, "reference": t.reference,
                                   "params": {p.name: {"default": p.default, "help": p.help} for p in t.params}}
                               for n, t in reg.items()}, indent=2))
        return
    for n, t in reg.items():
        click.echo(f"{n:10} {t.summary}\n{'':10} {t.reference}")
        for p in t.params:
            d = "required" if p.default is None else f"default {p.default}"
            click.echo(f"{'':12}--{p.name.replace('_', '-'):18} {p.help} ({d})")
        if t.example:  # its further lines under the first
            click.echo(f"{'':10} e.g. " + t.example.replace("\n", "\n" + " " * 14))


def _make_command(topo):
    params = [
        click.Option(["--out", "-o"], type=OutPath(directory=True), required=True,
                     help="Directory for the plan files (must be empty unless --force)."),
        click.Option(["--force"], is_flag=True, help="Overwrite files in a non-empty --out."),
        click.Option(["--engine"], default=topo.engine, show_default=True,
                     help="routing_engine list written into opensm.conf (`ibtool sim run` uses it)."),
        click.Option(["--json", "as_json"], is_flag=True, help="Print a JSON summary."),
    ]
    for p in topo.params:
        # no default= at all for a required one: click >= 8.3 takes an explicit None as a given value
        dflt = {} if p.default is None else {"default": p.default, "show_default": True}
        kind = {"is_flag": True} if p.type is bool else {"type": p.type}  # a bool parameter is a flag
        params.append(click.Option([f"--{p.name.replace('_', '-')}"], required=p.default is None,
                                   help=p.help, **kind, **dflt))

    def callback(out, force, engine, as_json, **kw):
        engines = opensm.parse_engines(engine)
        check_out(out, force)
        t0 = time.monotonic()
        fabric = topo.build(**kw)  # refuses impossible parameters before anything is written
        if fabric.num_nodes > 20_000 and not as_json:  # seconds of writing: say what is happening
            click.echo(f"  built {fabric.num_nodes:,} nodes in {time.monotonic() - t0:.1f} s; writing {out}", err=True)
        layout = None
        if topo.places(fabric):  # built on a cabinet floor: record it (the others: placed when needed)
            from ibtool.layout import place
            layout = place(fabric, topo.layout)
        engine_files = list(topo.engine_files(fabric)) if topo.engine_files else []
        files = write_plan(fabric, out, engines, engine_files, layout, build={"family": topo.name, "args": kw})
        s = fabric.summary()
        if as_json:
            click.echo(json.dumps({**s, "files": files, "seconds": round(time.monotonic() - t0, 3)}, indent=2))
            return
        roles = ", ".join(f"{v} {k}{'es' if k.endswith('ch') and v != 1 else 's' if v != 1 else ''}" for k, v in s["roles"].items())
        click.echo(f"{fabric.name}: {roles}; {s['links']} links")
        for name, path in files.items():
            click.echo(f"  wrote {path}")

    return click.Command(topo.name, params=params, callback=callback,
                         help=f"{topo.summary}.\n\nReference: {topo.reference}.\n\n\b\nExample:\n  {topo.example}",
                         short_help=topo.summary)


for _t in load_all().values():
    group.add_command(_make_command(_t))
