"""`ibtool verify`: compare a fabric with its plan."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ibtool.formats import ibnetdiscover, node_name_map
from ibtool.verify.topology import diff_by_name


@click.group(name="verify")
def group():
    """Verify a fabric (emulated or real) against its plan.

    Exit status: 0 when every check passes, 1 when a check fails, 2 on bad input.
    """


@group.command(name="topology")
@click.option("--plan", type=click.Path(path_type=Path), required=True,
              help="The plan: an ibsim net file written by `ibtool topo` (or any ibnetdiscover dump).")
@click.option("--discovered", type=click.Path(path_type=Path), required=True,
              help="ibnetdiscover output of the fabric as cabled.")
@click.option("--node-name-map", "nnm", type=click.Path(path_type=Path),
              help="Names for the discovered nodes by GUID (infiniband-diags format).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
def topology_cmd(plan, discovered, nnm, as_json):
    """Report missing, extra and differently-wired links, by node name and port.

    \b
    Example:
      ibtool verify topology --plan cellia/topology.net --discovered run/ibnetdiscover.out
    """
    names = node_name_map.read(nnm) if nnm else None
    p = ibnetdiscover.read(plan)
    f = ibnetdiscover.read(discovered, names)
    d = diff_by_name(p, f)
    if as_json:
        click.echo(json.dumps({"plan": str(plan), "discovered": str(discovered),
                               "links_planned": p.num_links, "links_found": f.num_links, **d.as_dict()}, indent=2))
    else:
        r = d.as_dict()
        verdict = "PASS" if d.ok else "FAIL"
        click.echo(f"topology: {verdict}  planned {p.num_links} links, found {f.num_links}; "
                   f"{len(r['miswired'])} miswired, {len(r['missing'])} missing, {len(r['extra'])} extra; "
                   f"{len(r['missing_nodes'])} missing nodes, {len(r['extra_nodes'])} extra nodes")
        for m in r["miswired"]:
            click.echo(f"  miswired: {m['port']} goes to {m['found']}, plan says {m['expected']}")
        for e in r["missing"]:
            click.echo(f"  missing:  {e}")
        for e in r["extra"]:
            click.echo(f"  extra:    {e}")
        for n in r["missing_nodes"]:
            click.echo(f"  missing node: {n}")
        for n in r["extra_nodes"]:
            click.echo(f"  extra node:   {n}")
    if not d.ok:
        raise SystemExit(1)
