"""The cabling package a crew works from, written from a CablePlan:

    cables.csv    one row per cable (ibtool.cabling.cables_csv), cabling.json beside it
    bom.csv       bill of materials
    index.html    wiring stages, bill of materials, racks, switches, topology and floor drawings
    racks/*.html  per rack: elevation (SVG) and the cables starting there, in wiring order
    switches/*.html  per switch: every port, what to plug, from where, with which label
    svg/*.svg     the same drawings as separate files

Every HTML file is self-contained (styles and drawings inline) and prints on A4/Letter.
"""

from __future__ import annotations

import csv
import re
import shutil
from html import escape
from pathlib import Path

import numpy as np

from ibtool import __version__
from ibtool.errors import InputError
from ibtool.fabric import SWITCH
from ibtool.cabling import cables_csv
from ibtool.cabling.bom import bom
from ibtool.cabling.cable_list import CablePlan
from ibtool.layout import drawings
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


def _cable_row(r: dict) -> str:
    """One cable of a rack sheet (HTML built here: sheets of thousands of rows)."""
    e = escape
    return (f'<tr class="cable" data-cable="{r["cable_id"]}"><td class="check">&#9744;</td><td>{r["cable_id"]}</td>'
            f'<td class="num">{r["stage"]}</td><td>U{r["a_u"]} {e(r["a_device"])} port {r["a_port"]}</td>'
            f'<td>{e(r["b_rack"])} U{r["b_u"]} {e(r["b_device"])} port {r["b_port"]}</td>'
            f'<td>{r["purchasable_m"]} m {r["medium"]}</td><td class="label">{e(r["a_label"])}</td>'
            f'<td class="label">{e(r["b_label"])}</td></tr>\n')


def _port_row(p: dict) -> str:
    e = escape
    if not p["cable"]:
        return f'<tr class="free" data-port="{p["port"]}"><td></td><td class="num">{p["port"]}</td><td colspan="6">free</td></tr>\n'
    return (f'<tr class="port" data-port="{p["port"]}" data-cable="{p["cable"]}"><td class="check">&#9744;</td>'
            f'<td class="num">{p["port"]}</td><td>{p["cable"]}</td><td class="num">{p["stage"]}</td>'
            f'<td>cable {p["cable"]}</td><td>{e(p["far_rack"])} U{p["far_u"]} {e(p["far_device"])} port '
            f'{p["far_port"]}</td><td>{p["length"]} m {p["medium"]}</td><td class="label">{e(p["label"])}</td></tr>\n')


def write_package(plan: CablePlan, out: Path, prices: dict | None = None, engine: str | None = None,
                  build: dict | None = None, progress=None) -> dict:
    """Write the package into `out` (built in a sibling temporary directory and moved in, so a
    failure leaves no partial package). Returns a summary."""
    say = progress or (lambda m: None)
    f, lay = plan.fabric, plan.layout
    items = bom(plan, prices)  # a price the table lacks stops the run before anything is written
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a directory")
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:  # the package is built beside --out, in its parent, and moved in when complete
        for sub in ("racks", "switches", "svg"):
            (tmp / sub).mkdir(parents=True)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"--out {out}: cannot write in {out.parent}: {e.strerror}") from None
    try:
        say(f"cable list: {len(plan):,} cables")
        rows = list(plan.rows())
        cables_csv.write(rows, tmp / "cables.csv")
        cables_csv.write_meta(plan, tmp / "cabling.json", engine, build, rows)
        with open(tmp / "bom.csv", "w", newline="") as fh:
            cols = ["item", "quantity"] + (["unit_price", "price"] if prices else [])
            w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
            w.writeheader()
            w.writerows(items)

        rack_files = _file_names(lay.cabinet_names) if lay.num_cabinets else []
        rack_rows: dict[int, list[dict]] = {c: [] for c in range(lay.num_cabinets)}
        floor_rows: list[dict] = []
        near_node = [plan.ends(i)[0][0] for i in range(len(plan))]
        for r, node in zip(rows, near_node):
            c = int(lay.cabinet[node])
            (rack_rows[c] if c != FLOOR else floor_rows).append(r)
        say(f"rack sheets: {lay.num_cabinets}")
        racks = []
        for c in range(lay.num_cabinets):
            svg = drawings.rack_elevation(lay, c)
            (tmp / "svg" / f"rack-{rack_files[c][:-5]}.svg").write_text(svg)
            devices = int((lay.cabinet == c).sum())
            (tmp / "racks" / rack_files[c]).write_text(render(
                "cabling/rack.html.j2", rack=lay.cabinet_names[c], fabric=f.name, site=plan.site, room=plan.room,
                devices=devices, count=len(rack_rows[c]), table="".join(map(_cable_row, rack_rows[c])),
                elevation=svg))
            racks.append({"name": lay.cabinet_names[c], "file": rack_files[c], "kind": lay.cabinet_kind[c],
                          "devices": devices, "cables": len(rack_rows[c])})
        if floor_rows:  # devices the layout leaves on the floor (e.g. paper 004's compute nodes)
            (tmp / "racks" / "floor.html").write_text(render(
                "cabling/rack.html.j2", rack="floor (not placed)", fabric=f.name, site=plan.site, room=plan.room,
                devices=int((lay.cabinet == FLOOR).sum()), count=len(floor_rows),
                table="".join(map(_cable_row, floor_rows)), elevation=""))
            racks.append({"name": "floor (not placed)", "file": "floor.html", "kind": "floor",
                          "devices": int((lay.cabinet == FLOOR).sum()), "cables": len(floor_rows)})

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
                here_a = plan.ends(i)[0] == (s, port)
                far = "b" if here_a else "a"
                ports.append({"port": port, "cable": r["cable_id"], "stage": r["stage"], "order": i,
                              "far_rack": r[f"{far}_rack"], "far_u": r[f"{far}_u"], "far_device": r[f"{far}_device"],
                              "far_port": r[f"{far}_port"], "length": r["purchasable_m"], "medium": r["medium"],
                              "label": r["a_label" if here_a else "b_label"]})
            ports.sort(key=lambda p: p["order"])  # wiring order; free ports last
            table = "".join(_port_row(p) for p in ports)
            c = int(lay.cabinet[s])
            (tmp / "switches" / fname).write_text(render(
                "cabling/switch.html.j2", switch=f.names[s], fabric=f.name, rack=plan.rack(s),
                rack_file=rack_files[c] if c != FLOOR else None, u=int(lay.u[s]) if c != FLOOR else None,
                side=SIDES[lay.side[s]], guid=f"{f.guids[s]:#018x}", nports=len(ports), table=table,
                used=sum(1 for p in ports if p["cable"])))
            sheets.append({"name": f.names[s], "file": fname})

        say("drawings and index")
        drawing, note = drawings.topology(lay)
        if drawing:
            (tmp / "svg" / "topology.svg").write_text(drawing)
        floor = drawings.floor_plan(lay) if lay.num_cabinets > 1 and lay.num_cabinets <= 4096 else None
        if floor:
            (tmp / "svg" / "floor.svg").write_text(floor)
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
            unpriced=len(items) - len(priced), switch_sheets=sheets, drawing=drawing or "",
            drawing_note=note, floor=floor if floor and floor != drawing else None))
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for p in sorted(tmp.iterdir()):
            dest = out / p.name
            if dest.is_dir():
                shutil.rmtree(dest)
            elif dest.exists():
                dest.unlink()
            shutil.move(str(p), dest)
            written.append(str(dest))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"cables": len(plan), "stages": stages, "racks": len(racks), "switch_sheets": len(sheets),
            "bom": items, "files": written, "drawing": note}
