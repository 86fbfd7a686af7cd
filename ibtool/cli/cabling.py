"""`ibtool cabling`: the documents a cabling crew works from, and their way back into a plan."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ibtool.cli import InPath, OutPath
from ibtool.errors import InputError
from ibtool.layout import POLICIES


class _PlanByDefault(click.Group):
    """`ibtool cabling PLAN ...` is `ibtool cabling plan PLAN ...`. The plan wins over a subcommand
    of its name: a PLAN that is there (a directory named `plan` or `import`) followed by nothing
    but options is the plan (`ibtool cabling plan --out x` in the directory holding ./plan); a
    subcommand name followed by its argument is the subcommand (`ibtool cabling plan cellia`)."""

    def parse_args(self, ctx, args):
        if args and not args[0].startswith("-") and (
                args[0] not in self.commands
                or (Path(args[0]).exists() and (len(args) == 1 or args[1].startswith("-")))):
            args = ["plan", *args]
        return super().parse_args(ctx, args)


@click.group(name="cabling", cls=_PlanByDefault)
def group():
    """Cabling plans: cable list, per-rack and per-switch sheets, drawings, bill of materials.

    \b
    ibtool cabling cellia --out cellia/cabling            # plan dir of `ibtool topo` -> package
    ibtool cabling cellia --site site.yaml --prices prices.yaml --out pkg
    ibtool cabling import pkg/cables.csv --out cellia2     # an edited sheet -> a plan again

    A plan directory named like a subcommand is the plan when only options follow it
    (`ibtool cabling plan --out pkg` with ./plan there); `ibtool cabling plan PLAN` and
    `ibtool cabling import CSV` are the subcommands.
    """


# Sites of the papers: (policy, site keys). CELLIA (paper 000, section 3.4): 48 switches in one
# switch rack cabled front and back, the nodes in two node racks (50 nodes, 25 a rack).
PRESETS = {"cellia": ("switch-rack", {"hcas_per_cabinet": 25})}


def _say(as_json):
    return None if as_json else (lambda m: click.echo(f"  {m}", err=True))


@group.command(name="plan")
@click.argument("plan", type=InPath())
@click.option("--out", "-o", type=OutPath(directory=True), default=None,
              help="Directory for the package (default: PLAN/cabling).")
@click.option("--site", "site", type=InPath(), default=None,
              help="Site description (YAML: cabinet size, grid, cable model ...; see docs/layout.md). "
                   "Given, the plan is placed anew instead of using its layout.json.")
@click.option("--preset", type=click.Choice(["cellia"]), default=None,
              help="A site of a paper: cellia = paper 000's testbed (every switch in one switch rack cabled "
                   "front and back, nodes in node racks of 25).")
@click.option("--policy", default=None, help="Placement policy instead of layout.json / the family's "
                                             f"({', '.join(POLICIES)}; docs/layout.md).")
@click.option("--prices", type=InPath(), default=None,
              help="Price table (YAML: currency, switch, hca, copper, fiber); without it no prices are shown.")
@click.option("--label-format", default=None, help="Label of one cable end: 'one-line', or a Python format "
              "with lines separated by | (fields: cable, stage, site, room, rack, u, side, face, loc, device, port "
              "and far_* of each). Default: three lines of at most 20 characters. See docs/cabling.md.")
@click.option("--site-name", default="site", show_default=True, help="Site name in the cable list and labels.")
@click.option("--room", default="room", show_default=True, help="Room name in the cable list and labels.")
@click.option("--sm-host", default=None, help="The host the subnet manager runs on: the wiring stages grow the "
              "fabric from it, and each stage is checked by discovering from it (default: the plan's, else "
              "the first HCA).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary (stages, BOM, files).")
def plan_cmd(plan, out, site, preset, policy, prices, label_format, site_name, room, sm_host, as_json):
    """Write the cabling package of PLAN (a plan directory of `ibtool topo`, or its topology.net).

    \b
    OUT/cables.csv        one row per cable: ID, stage, both ends (site/room/rack/U/device/port),
                          length, medium, rate, a label per end (edit it, then `cabling import`)
    OUT/bom.csv           switches, HCAs, cables per length and medium, transceivers, labels
    OUT/labels.csv        one row per cable end for the label printer (3 label lines, barcode)
    OUT/netbox/*.csv      the plan in NetBox's bulk-import columns (racks, devices, cables ...)
    OUT/index.html        wiring stages, BOM, racks, switches, topology and floor drawings
    OUT/racks/*.html      per rack: elevation, kit to bring, every cable ending there, per-host ports
    OUT/switches/*.html   per switch: each port, what to plug, from where, which label
    OUT/svg/*.svg         the drawings

    The plan keeps its cable IDs (PLAN/cable-ids.json): a re-plan keeps every cable's ID.

    \b
    Example (CELLIA, paper 000: 48 switches in one switch rack, 36 nodes in two node racks):
      ibtool topo kns --k 6 --n 2 --radix 8 --out cellia
      ibtool cabling cellia --preset cellia --out cellia/cabling
    """
    from ibtool.cabling import ids
    from ibtool.cabling.cable_list import plan_cables
    from ibtool.cabling.sheets import write_package
    from ibtool.plan import read_layout, read_plan

    if preset:
        if policy or site:
            raise InputError("--preset sets the policy and the site: give it without --policy and --site")
        policy, site = PRESETS[preset]
    fabric, p, build = read_plan(plan)
    price_table = None
    if prices:
        from ibtool.analyze.cost import read_prices  # (analyze pulls in scipy: only when asked)
        price_table = read_prices(prices)
    layout = read_layout(fabric, p, policy, site)
    record_path = p.cable_ids
    cp = plan_cables(layout, site_name, room, label_format, ids.read(record_path), sm_host)
    cp.guids_real = build is None and p.discovered  # a plan of a discovered fabric
    out = Path(out or p.cabling).resolve()
    engine = _plan_engine(p)
    s = write_package(cp, out, price_table, engine, build, progress=_say(as_json), source=str(p.dir))
    s["cable_ids"] = None
    if not p.discovered:  # a plan directory: the IDs live in it, the next package keeps them
        try:
            ids.write(cp.record, record_path)
            s["cable_ids"] = str(record_path)
        except OSError as e:
            click.echo(f"ibtool: warning: cannot keep the cable IDs in {record_path}: {e.strerror}; a re-plan "
                       f"numbers the cables anew", err=True)
    s.update(new_ids=cp.new, retired=[r[0] for r in cp.retired], sm_host=cp.sm_host)
    if as_json:
        click.echo(json.dumps({"ok": True, "fabric": fabric.name, "policy": layout.policy, **s}, indent=2))
        return
    click.echo(f"{fabric.name}: {s['cables']:,} cables in {len(s['stages'])} stages, {s['racks']} racks, "
               f"{s['switch_sheets']:,} switch sheets ({layout.policy} layout)")
    click.echo(f"  stages grow the fabric from the SM host {cp.sm_host}; after each, discover from it and run "
               f"`ibtool verify topology --stage N`")
    for st in s["stages"]:
        click.echo(f"  stage {st['number']}: {st['count']:>6,} cables  {st['name']}")
    if cp.new or cp.retired:
        click.echo(f"  cable IDs: {len(cp.new):,} new ({_span(cp.new)}), {len(cp.retired):,} retired "
                   f"({_span([r[0] for r in cp.retired])}); every other cable keeps its ID")
    click.echo(f"  wrote {out}/index.html, cables.csv, labels.csv, bom.csv, netbox/, racks/, switches/, svg/")


def _span(ids_: list[str]) -> str:
    return ", ".join(ids_[:5]) + (f" ... {ids_[-1]}" if len(ids_) > 5 else "") if ids_ else "none"


def _plan_engine(plan) -> str | None:
    try:
        engines = plan.engines()
    except InputError:
        return None
    return ",".join(engines) if engines else None


def _engine_files(fabric):
    """The family's engine files (root GUIDs ...), derived from the imported devices' roles."""
    from ibtool.topologies import load_all
    topo = load_all().get(str(fabric.params.get("topology")))
    return topo.engine_files(fabric) if topo is not None and topo.engine_files else ()


@group.command(name="import")
@click.argument("csv_file", type=InPath())
@click.option("--out", "-o", type=OutPath(directory=True), required=True,
              help="Plan directory to write (must be empty unless --force).")
@click.option("--force", is_flag=True, help="Overwrite files in a non-empty --out.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
def import_cmd(csv_file, out, force, as_json):
    """Rebuild a plan (topology.net, node-name-map, opensm.conf, fabric.json, layout.json) from a
    cable list, e.g. after a site renamed racks or moved a switch in the sheet.

    cabling.json beside the CSV gives the fabric's name, site description and engine. Conflicting
    edits (two cables on one port, a port beyond a device's ports, a device in two places, a U
    beyond the rack, two devices in one slot) are refused, naming the row. Every cable keeps its
    ID; a measured length (length_m edited) is kept; a deleted row retires its cable's ID.
    Spreadsheet CSV (UTF-8 BOM, `;` separators, CRLF) is read as it is.

    \b
    Example:
      ibtool cabling import cellia/cabling/cables.csv --out cellia-edited
    """
    from ibtool import plandir
    from ibtool.cabling import cables_csv
    from ibtool.plan import check_out, write_plan
    from ibtool.sim import opensm

    check_out(out, force)
    imp = cables_csv.read(csv_file)
    fabric, meta = imp.fabric, imp.meta
    engines = opensm.parse_engines(meta.get("engine") or "minhop")
    record = json.dumps(imp.record.to_dict(), separators=(",", ":")) + "\n"
    files = write_plan(fabric, out, engines, _engine_files(fabric), imp.layout, build=meta.get("build"),
                       extra={plandir.CABLE_IDS: record})
    report = {"measured_lengths": [{"cable_id": c, "length_m": m, "model_m": round(x, 3)} for c, m, x in imp.measured],
              "removed": [{"cable_id": r[0], "ends": [f"{r[2]} port {r[3]}", f"{r[4]} port {r[5]}"]}
                          for r in imp.removed],
              "derived_edits": imp.derived_edits, "unnumbered": imp.unnumbered}
    if as_json:
        click.echo(json.dumps({"ok": True, **fabric.summary(), **report, "files": files}, indent=2))
        return
    click.echo(f"{fabric.name}: {fabric.num_nodes:,} devices, {fabric.num_links:,} cables from {csv_file}")
    if imp.measured:
        click.echo(f"  kept {len(imp.measured):,} measured length{'s' if len(imp.measured) != 1 else ''} "
                   f"(the model's in brackets): " + ", ".join(f"{c} {m:g} m ({x:.2f} m)" for c, m, x in imp.measured[:8])
                   + (" ..." if len(imp.measured) > 8 else ""))
    for r in imp.removed[:20]:
        click.echo(f"  removed planned cable {r[0]} ({r[2]} port {r[3]} - {r[4]} port {r[5]}): its row was "
                   f"deleted; the ID is retired")
    if len(imp.removed) > 20:
        click.echo(f"  ... and {len(imp.removed) - 20:,} more removed planned cables (see --json)")
    if imp.derived_edits:
        click.echo(f"  medium and purchasable_m are derived from length_m, rate and the site's rules: edits in "
                   f"{', '.join(imp.derived_edits[:8])}{' ...' if len(imp.derived_edits) > 8 else ''} are "
                   f"recomputed (edit length_m, or the site's catalogue)")
    if imp.unnumbered:
        click.echo(f"  {imp.unnumbered:,} new cable{'s' if imp.unnumbered != 1 else ''} without an ID: numbered "
                   f"at the next `ibtool cabling`")
    for name, path in files.items():
        click.echo(f"  wrote {path}")
