"""cables.csv: the cable list of a plan, one row per cable, which rebuilds the plan.

Written by `ibtool cabling`, edited by a site in any spreadsheet (rename racks, move a switch),
and read back by `ibtool cabling import` into the same topology and layout. Beside it,
`cabling.json` keeps what a row does not: the fabric's name and parameters, the site description
(cabinet sizes, cable model), the label format and the engine of the plan.

Columns (see COLUMNS): the cable ID, its stage, both ends (a_*, b_*: site, room, rack name,
cabinet = the rack's position on the floor grid (row-major index), U, side, device, type, role,
number of ports, GUID, port), the link rate, the model and purchasable length, the medium and a
label per end. A device appears in every row of its cables, with the same location each time;
moving a device means changing its rack, cabinet and U in all of its rows (a conflicting row is
refused, naming it). Lengths, media and labels are derived columns: the import recomputes them
from the positions with the site's cable model (a measured length goes into layout.json).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats import atomic_write, open_input
from ibtool.layout.model import FLOOR, SIDES, Layout
from ibtool.layout.site import Site, site_from_dict

END = ("site", "room", "rack", "cabinet", "u", "side", "device", "type", "role", "ports", "guid", "port")
COLUMNS = (["cable_id", "stage", "stage_name"] + [f"a_{c}" for c in END] + [f"b_{c}" for c in END]
           + ["rate", "length_m", "purchasable_m", "medium", "a_label", "b_label"])
META_FORMAT = "ibtool-cabling/1"


def write(rows, path: str | Path) -> None:
    """Write the rows of CablePlan.rows() (a list, or the generator itself)."""
    with atomic_write(path) as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(COLUMNS)
        w.writerows([r[c] for c in COLUMNS] for r in rows)


def write_meta(plan, path: str | Path, engine: str | None = None, build: dict | None = None) -> None:
    f, lay = plan.fabric, plan.layout
    meta = {"format": META_FORMAT, "fabric": f.name, "params": f.params, "policy": lay.policy,
            "site": lay.site.to_dict(), "site_name": plan.site, "room": plan.room,
            "label_format": plan.label_format, "engine": engine, "build": build}
    with atomic_write(path) as fh:
        json.dump(meta, fh, indent=2)
        fh.write("\n")


def read_meta(path: Path) -> dict:
    if not path.exists():
        return {}
    with open_input(path) as fh:
        try:
            d = json.load(fh)
        except (json.JSONDecodeError, RecursionError) as e:
            raise InputError(f"not valid JSON: {getattr(e, 'msg', e)}", path=str(path)) from None
    if not isinstance(d, dict) or d.get("format") != META_FORMAT:
        raise InputError(f'not a cabling description (expected "format": "{META_FORMAT}")', path=str(path))
    return d


def _int(row: dict, key: str, where, low: int | None = None, high: int | None = None, empty_ok=False):
    v = (row.get(key) or "").strip()
    if v == "" and empty_ok:
        return None
    try:
        x = int(v, 0) if key.endswith("guid") else int(v)
    except ValueError:
        raise InputError(f"{key}: not a whole number: {v!r}", **where) from None
    if (low is not None and x < low) or (high is not None and x > high):
        raise InputError(f"{key}: {x} is out of range ({low}..{high})", **where)
    return x


def read(path: str | Path):
    """(Fabric, Layout, meta) from cables.csv (+ cabling.json beside it, when present)."""
    path = Path(path)
    meta = read_meta(path.with_name("cabling.json"))
    p = str(path)
    with open_input(path) as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise InputError(f"missing column {missing[0]!r} (a cables.csv has: {', '.join(COLUMNS)})", path=p, line=1)
        rows = []
        for row in reader:
            if None in row or any(v is None for v in row.values()):
                raise InputError("wrong number of fields", path=p, line=reader.line_num)
            rows.append((reader.line_num, row))
    if not rows:
        raise InputError("no cables", path=p)

    devices: dict[str, dict] = {}  # name -> attributes, first row that named it
    cabinets: dict[int, str] = {}
    rack_cab: dict[str, int] = {}
    ports_used: dict[tuple[str, int], int] = {}
    ids: dict[str, int] = {}
    links = []
    for line, row in rows:
        where = {"path": p, "line": line}
        cid = row["cable_id"].strip()
        if not cid:
            raise InputError("empty cable_id", **where)
        if cid in ids:
            raise InputError(f"duplicate cable ID {cid} (also on line {ids[cid]})", **where)
        ids[cid] = line
        ends = []
        for tag in ("a", "b"):
            name = row[f"{tag}_device"].strip()
            if not name:
                raise InputError(f"{tag}_device: empty", **where)
            kind = row[f"{tag}_type"].strip().lower()
            if kind not in ("switch", "hca"):
                raise InputError(f"{tag}_type: {kind!r} is neither switch nor hca", **where)
            nports = _int(row, f"{tag}_ports", where, 1, 254)
            port = _int(row, f"{tag}_port", where, 1, 254)
            if port > nports:
                raise InputError(f"{tag}_port: {name} port {port} is beyond its {nports} ports", **where)
            cab = _int(row, f"{tag}_cabinet", where, 0, 10**6, empty_ok=True)
            rack = row[f"{tag}_rack"].strip()
            u = _int(row, f"{tag}_u", where, 1, 10**4, empty_ok=True)
            side = row[f"{tag}_side"].strip() or "front"
            if side not in SIDES:
                raise InputError(f"{tag}_side: {side!r} is not one of {', '.join(SIDES)}", **where)
            attrs = {"type": kind, "ports": nports, "guid": _int(row, f"{tag}_guid", where, 0, 2**64 - 1),
                     "role": row[f"{tag}_role"].strip() or kind, "cabinet": FLOOR if cab is None else cab,
                     "u": u or 0, "side": side}
            if cab is not None:
                if cabinets.setdefault(cab, rack) != rack:
                    raise InputError(f"{tag}_rack: cabinet {cab} is named {cabinets[cab]!r} elsewhere, "
                                     f"{rack!r} here", **where)
                if rack_cab.setdefault(rack, cab) != cab:
                    raise InputError(f"{tag}_cabinet: rack {rack!r} is cabinet {rack_cab[rack]} elsewhere, "
                                     f"{cab} here", **where)
            known = devices.setdefault(name, {**attrs, "line": line})
            for k, v in attrs.items():
                if known[k] != v:
                    show = (lambda x: f"{x:#018x}") if k == "guid" else repr
                    raise InputError(f"{tag}_{k}: {name} has {k} {show(v)} here but {show(known[k])} on line "
                                     f"{known['line']}", **where)
            if (name, port) in ports_used:
                raise InputError(f"two cables on {name} port {port} (the other on line "
                                 f"{ports_used[name, port]})", **where)
            ports_used[name, port] = line
            ends.append((name, port))
        if ends[0][0] == ends[1][0]:
            raise InputError(f"cable {cid} connects {ends[0][0]} to itself", **where)
        length = row["length_m"].strip()
        try:
            length = float(length) if length else None
        except ValueError:
            raise InputError(f"length_m: not a length: {length!r}", **where) from None
        if length is not None and not (math.isfinite(length) and length >= 0):
            raise InputError(f"length_m: {length} is not a length >= 0", **where)
        links.append((ends[0], ends[1], row["rate"].strip() or None, length, line))

    guids = {}
    for name, d in devices.items():
        if d["guid"] in guids:
            raise InputError(f"{name} has the GUID {d['guid']:#x} of {guids[d['guid']]}", path=p, line=d["line"])
        guids[d["guid"]] = name
    f = Fabric(meta.get("fabric") or path.stem)
    f.params = meta.get("params") or {}
    # devices in GUID order: ibtool's builders number GUIDs in node order, so the plan comes back
    # in its own order
    for name, d in sorted(devices.items(), key=lambda kv: kv[1]["guid"]):
        f.add_node(SWITCH if d["type"] == "switch" else CA, name, d["ports"], d["role"], guid=d["guid"])
    for (an, ap), (bn, bp), rate, _, line in links:
        try:
            f.add_link(f.index(an), f.index(bn), ap, bp, rate=rate)
        except InputError as e:
            raise InputError(str(e), path=p, line=line) from None

    ncab = max(cabinets) + 1 if cabinets else 0
    for c in range(ncab):
        if c not in cabinets:
            cabinets[c] = f"C{c}"  # an empty cabinet position keeps the floor's numbering
    kinds = []
    for c in range(ncab):
        members = [d["type"] for d in devices.values() if d["cabinet"] == c]
        kinds.append("switch" if members and all(m == "switch" for m in members)
                     else "node" if members and all(m == "hca" for m in members) else "mixed")
    try:
        site = site_from_dict(meta["site"]) if meta.get("site") else Site()
    except InputError as e:
        raise InputError(f"site: {e}", path=str(path.with_name("cabling.json"))) from None
    n = f.num_nodes
    cab = np.array([devices[f.names[i]]["cabinet"] for i in range(n)], dtype=np.int64)
    u = np.array([devices[f.names[i]]["u"] for i in range(n)], dtype=np.int64)
    side = np.array([SIDES.index(devices[f.names[i]]["side"]) for i in range(n)], dtype=np.int8)
    lay = Layout(f, site, meta.get("policy") or "file", cab, u, side, kinds, [cabinets[c] for c in range(ncab)])
    return f, lay, meta
