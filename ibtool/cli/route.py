"""`ibtool route`: reference routing computed in Python, written for OpenSM's `file` engine."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from ibtool.cli import OutPath
from ibtool.errors import InputError
from ibtool.formats import ibnetdiscover, lft


def _output_file(path: Path, option: str) -> None:
    """Refuse an output path that cannot be written before any work is done (one-line error)."""
    parent = path.parent
    if path.is_dir():
        raise InputError(f"{option} {path}: is a directory")
    if not parent.is_dir():
        raise InputError(f"{option} {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{option} {path}: directory {parent} is not writable")


def _write(option: str, path: Path, write) -> None:
    try:
        write()
    except OSError as e:
        raise InputError(f"{option} {path}: cannot write: {e.strerror}") from None


@click.group(name="route")
def group():
    """Compute forwarding tables in Python (reference engines) for OpenSM's `file` engine."""


@group.command(name="hdor")
@click.option("--fabric", "fabric_path", required=True, type=click.Path(path_type=Path),
              help="The discovered fabric: ibnetdiscover output with LIDs (e.g. RUN/ibnetdiscover.out).")
@click.option("--out", "-o", required=True, type=OutPath(),
              help="LFT file to write, for `opensm -R file -U FILE` (conf key lfts_file).")
@click.option("--dump", type=OutPath(),
              help="Also write the coordinates dump (the opensm-hdor.dump format of docs/hdor.md).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def hdor_cmd(fabric_path, out, dump, as_json):
    """Hybrid-DOR tables for a KNS fabric, as the hdor OpenSM engine computes them (docs/hdor.md).

    Writes every switch's table for every LID, with ` portguid` on each entry so OpenSM remaps
    LIDs that moved. A fabric that is not a complete KNS exits 1 with the reason.

    \b
    Example:
      ibtool sim run kns/topology.net --engine minhop --out run
      ibtool route hdor --fabric run/ibnetdiscover.out --out hdor.lft --dump hdor.dump
      ibtool sim run kns/topology.net --engine file --conf lfts_file=$PWD/hdor.lft --out run2
    """
    from ibtool.routing import hdor

    _output_file(out, "--out")
    if dump:
        _output_file(dump, "--dump")
    say = (lambda m: None) if as_json else (lambda m: click.echo(f"  {m}", err=True))
    t0 = time.monotonic()
    f = ibnetdiscover.read(fabric_path)
    if not f.port_lids:
        raise InputError("--fabric: no LIDs in this file (a plan? give the ibnetdiscover output of the running "
                         "fabric, e.g. RUN/ibnetdiscover.out of `ibtool sim run`)", path=str(fabric_path))
    say(f"read {f.num_nodes} nodes, {f.num_links} links from {fabric_path}")
    t1 = time.monotonic()
    r = hdor.compute(f)
    t2 = time.monotonic()
    say(f"routed in {t2 - t1:.2f} s; writing {len(r.tables.lft)} tables x {r.tables.max_lid} LIDs")
    _write("--out", out, lambda: lft.write_file_engine(r.tables, out, hdor.port_guids(f)))
    if dump:
        _write("--dump", dump, lambda: hdor.write_dump(r, f, dump))
    t3 = time.monotonic()
    spread = r.spread_summary()
    summary = {"fabric": str(fabric_path), "k": r.k, "n": r.n, "s": r.s, "routers": len(r.routers),
               "switches": len(r.switches), "hcas": len(r.hcas), "lids": r.lids, "lft_file": str(out),
               "dump": str(dump) if dump else None, "spread": spread,
               "timings": {"read_s": round(t1 - t0, 3), "route_s": round(t2 - t1, 3), "write_s": round(t3 - t2, 3)}}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(f"hdor: KNS {r.k}-ary {r.n}-direct {r.s}-indirect: {len(r.routers)} routers, {len(r.switches)} "
               f"switches, {len(r.hcas)} HCAs, {r.lids} LIDs; LFT file {out}" + (f", dump {dump}" if dump else ""))
    if spread["pairs"]:
        click.echo(f"spread: {spread['pairs']} router-dimension pairs with parallel links, "
                   f"{spread['min_lids']}..{spread['max_lids']} LIDs per port, "
                   f"max imbalance {spread['max_imbalance']}")
    else:
        click.echo("spread: no parallel router-switch links")
