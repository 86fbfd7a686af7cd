"""The cabling package a crew works from, written from a CablePlan:

    cables.csv    one row per cable (ibtool.cabling.cables_csv), cabling.json beside it
    bom.csv       bill of materials
    labels.csv    one row per cable end, for the label printer (ibtool.cabling.labels)
    netbox/       the plan in NetBox's bulk-import CSV columns (ibtool.cabling.netbox)
    index.html    wiring stages, bill of materials, racks, switches, topology and floor drawings
    racks/*.html  per rack: elevation, the kit to bring, every cable that ends in the rack, and
                  per host which cable, with which label, goes into which port
    switches/*.html  per switch: every port, what to plug, from where, with which label
    svg/*.svg     the same drawings as separate files (ibtool.drawing: styles and print layout inside)

Every HTML file is self-contained (styles and drawings inline), says which fabric and plan it is
about, when it was made and by which ibtool, and prints on A4 and Letter: table headers repeat on
every page, identifiers never wrap, a heading stays with its drawing.
"""

from __future__ import annotations

import csv
import re
import shutil
from functools import lru_cache
from html import escape
from pathlib import Path

import numpy as np

from ibtool import __version__, drawing, plandir
from ibtool.errors import InputError
from ibtool.fabric import SWITCH
from ibtool.formats import move_into, output_target
from ibtool.cabling import cables_csv, labels, netbox
from ibtool.cabling.bom import bom
from ibtool.cabling.cable_list import CablePlan
from ibtool.layout.model import FLOOR, SIDES
from ibtool.templating import render


def _file_names(names: list[str]) -> list[str]:
    """File-system-safe, unique file names for device and rack names."""
    out, seen = [], set()
    for i, n in enumerate(names):
        base = re.sub(r"[^A-Za-z0-9_.-]+", "_", n).strip("_") or "x"
        f = base if base not in seen else f"{base}-{i}"
        seen.add(f)
        out.append(f + ".html")
    return out


def _place(r: dict, t: str) -> str:
    """Where an end is, as the sheets print it: 'C0 U42 front' ('floor' for a device not placed)."""
    return f"{r[t + '_rack']} U{int(r[t + '_u']):02d} {r[t + '_side']}" if r[t + "_u"] != "" else r[t + "_rack"]


@lru_cache(maxsize=65536)
def _id(text) -> str:
    """A table cell holding an identifier (the same few thousand strings over and over)."""
    return f'<td class="id">{escape(str(text))}</td>'


def _cable_row(r: dict, here: str) -> str:
    """One cable of a rack sheet, from its end in this rack (its first end, when both are here)."""
    far = "b" if here == "a" else "a"
    near_end = f"{r[here + '_device']} port {r[here + '_port']}"
    far_end = f"{r[far + '_device']} port {r[far + '_port']}"
    return (f'<tr class="cable" data-cable="{r["cable_id"]}"><td class="check">&#9744;</td>{_id(r["cable_id"])}'
            f'<td class="num">{r["stage"]}</td>{_id(_place(r, here))}{_id(near_end)}'
            f'{_id(_place(r, far))}{_id(far_end)}{_id(_bought(r))}</tr>\n')


def _bought(r: dict) -> str:
    return f"{r['purchasable_m']} m {r['medium']}" if r["purchasable_m"] else "length unknown"


def _label_cell(lines: list[str]) -> str:
    spans = escape("\n".join(lines), quote=False).replace("\n", '</span><br><span class="id">')
    return f'<td class="label"><span class="id">{spans}</span></td>'


def _host_row(r: dict, here: str) -> str:
    """One HCA port of a host: which cable, with which label, goes into it, from where."""
    far = "b" if here == "a" else "a"
    return (f'<tr class="host" data-host="{escape(r[here + "_device"])}" data-port="{r[here + "_port"]}" '
            f'data-cable="{r["cable_id"]}"><td class="check">&#9744;</td>{_id(r[here + "_device"])}'
            f'{_id(_place(r, here))}<td class="num">{r[here + "_port"]}</td>{_id(r["cable_id"])}'
            f'{_label_cell(r[here + "_lines"])}{_id(_place(r, far))}{_id(r[far + "_device"] + " port " + str(r[far + "_port"]))}'
            f'</tr>\n')


def _port_row(p: dict) -> str:
    if not p["cable"]:
        return (f'<tr class="free" data-port="{p["port"]}"><td></td><td class="num">{p["port"]}</td>'
                f'<td colspan="5">free</td></tr>\n')
    return (f'<tr class="port" data-port="{p["port"]}" data-cable="{p["cable"]}"><td class="check">&#9744;</td>'
            f'<td class="num">{p["port"]}</td>{_id(p["cable"])}<td class="num">{p["stage"]}</td>'
            f'{_id(p["far_place"])}{_id(p["far_end"])}{_id(p["bought"])}{_label_cell(p["lines"])}</tr>\n')


def _kit(rows: list[dict]) -> list[dict]:
    """How many cables of each medium and length to bring."""
    kit: dict[tuple, int] = {}
    for r in rows:
        key = (r["medium"] or "unknown", float(r["purchasable_m"]) if r["purchasable_m"] else float("inf"))
        kit[key] = kit.get(key, 0) + 1
    return [{"medium": m, "length": "?" if x == float("inf") else f"{x:g}", "count": n}
            for (m, x), n in sorted(kit.items(), key=lambda kv: (kv[0][1], kv[0][0]))]


def write_package(plan: CablePlan, out: Path, prices: dict | None = None, engine: str | None = None,
                  build: dict | None = None, progress=None, source: str | None = None) -> dict:
    """Write the package into `out` (built in a sibling temporary directory and moved in, so a
    failure leaves no partial package); `source`: the plan directory it is made from. Returns a
    summary."""
    say = progress or (lambda m: None)
    f, lay = plan.fabric, plan.layout
    made = {"made": drawing.made_at(), "version": __version__, "source": source or ""}
    desc = f"{f.name}" + (f", plan {source}" if source else "") + f"; made {made['made']} by ibtool {__version__}"
    items = bom(plan, prices)  # a price the table lacks stops the run before anything is written
    out = output_target(out, "--out", directory=True)
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:  # the package is built beside --out, in its parent, and moved in when complete
        for sub in ("racks", "switches", "svg", "netbox"):
            (tmp / sub).mkdir(parents=True)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"--out {out}: cannot write in {out.parent}: {e.strerror}") from None
    try:
        say(f"cable list: {len(plan):,} cables")
        rows = list(plan.rows())
        cables_csv.write(rows, tmp / plandir.CABLES_CSV)
        cables_csv.write_meta(plan, tmp / "cabling.json", engine, build, rows)
        labels.write_csv(rows, tmp / "labels.csv")
        netbox.write(plan, rows, tmp / "netbox")
        with open(tmp / "bom.csv", "w", newline="") as fh:
            cols = ["item", "quantity"] + (["unit_price", "price"] if prices else [])
            w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
            w.writeheader()
            w.writerows(items)

        # every rack lists every cable that ends in it, once; the kit is what starts there
        rack_files = _file_names(lay.cabinet_names) if lay.num_cabinets else []
        ends: dict[int, list[tuple[dict, str]]] = {c: [] for c in [*range(lay.num_cabinets), FLOOR]}
        starts: dict[int, list[dict]] = {c: [] for c in [*range(lay.num_cabinets), FLOOR]}
        hosts: dict[int, list[tuple[dict, str]]] = {c: [] for c in [*range(lay.num_cabinets), FLOOR]}
        for i, r in enumerate(rows):
            (a, _), (b, _) = plan.ends(i)
            ca, cb = int(lay.cabinet[a]), int(lay.cabinet[b])
            ends[ca].append((r, "a"))
            if cb != ca:
                ends[cb].append((r, "b"))
            starts[ca].append(r)
            for node, t, c in ((a, "a", ca), (b, "b", cb)):
                if f.types[node] != SWITCH:
                    hosts[c].append((r, t))
        say(f"rack sheets: {lay.num_cabinets}")
        racks = []
        for c in [*range(lay.num_cabinets), FLOOR]:
            if c == FLOOR and not ends[FLOOR]:
                continue  # devices the layout leaves on the floor (e.g. paper 004's compute nodes)
            name = lay.cabinet_names[c] if c != FLOOR else "floor (not placed)"
            fname = rack_files[c] if c != FLOOR else "floor.html"
            svg = drawing.rack_elevation(lay, c, desc=desc) if c != FLOOR else ""
            if svg:
                (tmp / "svg" / f"rack-{fname[:-5]}.svg").write_text(drawing.standalone(svg))
            devices = int((lay.cabinet == c).sum())
            host_rows = sorted(hosts[c], key=lambda x: (int(x[0][x[1] + "_u"] or 0), x[0][x[1] + "_device"],
                                                        int(x[0][x[1] + "_port"])))
            (tmp / "racks" / fname).write_text(render(
                "cabling/rack.html.j2", rack=name, fabric=f.name, site=plan.site, room=plan.room, devices=devices,
                count=len(ends[c]), starting=len(starts[c]), kit=_kit(starts[c]), elevation=svg,
                table="".join(_cable_row(r, t) for r, t in ends[c]),
                hosts="".join(_host_row(r, t) for r, t in host_rows), nhosts=len(host_rows),
                sm_host=plan.sm_host, **made))
            racks.append({"name": name, "file": fname, "kind": lay.cabinet_kind[c] if c != FLOOR else "floor",
                          "devices": devices, "cables": len(ends[c]), "starting": len(starts[c])})

        switches = [i for i in range(f.num_nodes) if f.types[i] == SWITCH]
        say(f"switch sheets: {len(switches):,}")
        sw_files = _file_names([f.names[i] for i in switches])
        by_end: dict[tuple[int, int], int] = {}
        for i in range(len(plan)):
            (a, pa), (b, pb) = plan.ends(i)
            by_end[a, pa] = i
            by_end[b, pb] = i
        sheets = []
        for s, fname in zip(switches, sw_files):
            ports = []
            for port in range(1, f.nports[s] + 1):
                i = by_end.get((s, port))
                if i is None:
                    ports.append({"port": port, "cable": None, "order": len(plan) + port})
                    continue
                r = rows[i]
                here = "a" if plan.ends(i)[0] == (s, port) else "b"
                far = "b" if here == "a" else "a"
                ports.append({"port": port, "cable": r["cable_id"], "stage": r["stage"], "order": i,
                              "far_place": _place(r, far), "far_end": f"{r[far + '_device']} port {r[far + '_port']}",
                              "bought": _bought(r), "lines": r[here + "_lines"]})
            ports.sort(key=lambda p: p["order"])  # wiring order; free ports last
            table = "".join(_port_row(p) for p in ports)
            c = int(lay.cabinet[s])
            (tmp / "switches" / fname).write_text(render(
                "cabling/switch.html.j2", switch=f.names[s], fabric=f.name, rack=plan.rack(s),
                rack_file=rack_files[c] if c != FLOOR else None, u=int(lay.u[s]) if c != FLOOR else None,
                side=SIDES[lay.side[s]], guid=f"{f.guids[s]:#018x}", guid_real=plan.guids_real, nports=len(ports),
                table=table, used=sum(1 for p in ports if p["cable"]), **made))
            sheets.append({"name": f.names[s], "file": fname})

        say("drawings and index")
        # a cabinet on the floor opens its rack sheet: from the index, and from the file in svg/
        here = {c: f"racks/{rack_files[c]}" for c in range(lay.num_cabinets)}
        there = {c: f"../racks/{rack_files[c]}" for c in range(lay.num_cabinets)}
        topo, note = drawing.topology(lay, desc=desc, links=here)
        is_floor = bool(topo) and "data-cabinet=" in topo
        floor = None
        if lay.num_cabinets > 1 and lay.num_cabinets <= 4096:
            floor = topo if is_floor else drawing.floor_plan(lay, desc, here)
            floor_file = drawing.standalone(drawing.floor_plan(lay, desc, there))
            (tmp / "svg" / "floor.svg").write_text(floor_file)
        if topo:
            (tmp / "svg" / "topology.svg").write_text(floor_file if is_floor else drawing.standalone(topo))
        stage_no = plan.stage
        ids = [r["cable_id"] for r in rows]
        stages = []
        for k, name in enumerate(plan.stage_names, 1):
            idx = np.flatnonzero(stage_no == k)
            stages.append({"number": k, "name": name, "count": len(idx),
                           "first": ids[idx[0]] if len(idx) else "", "last": ids[idx[-1]] if len(idx) else ""})
        priced = [r for r in items if r.get("price") is not None]
        (tmp / "index.html").write_text(render(
            "cabling/index.html.j2", fabric=f.name, site=plan.site, room=plan.room, cables=len(plan),
            switches=len(switches), hcas=f.num_nodes - len(switches), racks=racks, policy=lay.policy,
            cable_model=lay.site.cable_model, version=__version__, stages=stages, bom=items,
            priced=bool(prices), currency=(prices or {}).get("currency", ""),
            price_source=(prices or {}).get("source", ""), total=round(sum(r["price"] for r in priced), 2),
            unpriced=len(items) - len(priced), switch_sheets=sheets, drawing=topo or "", drawing_file="svg/topology.svg" if topo else None,
            drawing_note=note, floor=None if is_floor else floor, sm_host=plan.sm_host,
            guids_real=plan.guids_real, made=made["made"], source=made["source"]))
        out.mkdir(parents=True, exist_ok=True)
        written = [str(p) for p in move_into(tmp, out)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"cables": len(plan), "stages": stages, "racks": len(racks), "switch_sheets": len(sheets),
            "bom": items, "files": written, "drawing": note}
