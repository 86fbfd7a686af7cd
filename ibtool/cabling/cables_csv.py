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
refused, naming it); a U beyond the rack or two devices in one slot (by their height, and depth:
a full-depth device takes the front and the back of its U) is refused, naming the row.

Lengths: a `length_m` as `ibtool cabling` wrote it is derived and computed again from the
positions (a moved device's cables change length); one edited (a measured run) is kept, and
refused when shorter than the straight line between its ports. Media, purchasable lengths and
labels are derived from the length, the rate and the site's rules; edits to them are reported,
not kept. A row deleted is a planned cable removed: its ID is retired; a row added without an ID
is a new cable, numbered at the next `ibtool cabling`.

Spreadsheets write what they like: a UTF-8 byte-order mark, `;` or tab separators (the dialect
is detected from the header), CRLF line ends are all read.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ibtool.cabling import ids
from ibtool.cabling.ids import CableIds
from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats import atomic_write, open_input, read_tagged_json
from ibtool.layout import cables
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


def write_meta(plan, path: str | Path, engine: str | None = None, build: dict | None = None,
               rows: list[dict] | None = None) -> None:
    """cabling.json: what a row does not hold, and the cable list as written (`written`: ID ->
    length, purchasable length, medium), so `cabling import` tells an edit from a derived value
    and a deleted row from a cable never planned."""
    f, lay = plan.fabric, plan.layout
    meta = {"format": META_FORMAT, "fabric": f.name, "params": f.params, "policy": lay.policy,
            "site": lay.site.to_dict(), "site_name": plan.site, "room": plan.room,
            "label_format": plan.label_format, "engine": engine, "build": build, "sm_host": plan.sm_host,
            "stages": plan.stage_names, "cable_ids": plan.record.to_dict(),
            "written": {r["cable_id"]: [str(r["length_m"]), str(r["purchasable_m"]), r["medium"]] for r in rows or []}}
    with atomic_write(path) as fh:
        fh.write(json.dumps(meta, separators=(",", ":")))  # dumps: C's encoder (dump to a file is Python's)
        fh.write("\n")


def read_meta(path: Path) -> dict:
    """cabling.json beside a cables.csv ({} when there is none)."""
    return read_tagged_json(path, META_FORMAT, "a cabling description") if path.exists() else {}


def read_rows(path: str | Path, need=COLUMNS) -> list[tuple[int, dict]]:
    """(line, row) of every row of a cable list as a spreadsheet may have saved it: a UTF-8
    byte-order mark, `,` `;` or tab separators (detected from the header line), CRLF line ends.
    A column of `need` missing, or a row with the wrong number of fields, is an InputError."""
    p = str(path)
    with open_input(path) as fh:
        text = fh.read()
    text = text.removeprefix("\ufeff")
    head = text.split("\n", 1)[0]
    delim = max(",;\t", key=head.count)  # the header's separator: a column name holds none of them
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delim)
    header = [h.strip() for h in reader.fieldnames or []]
    reader.fieldnames = header
    missing = [c for c in need if c not in header]
    if missing:
        raise InputError(f"missing column {missing[0]!r} (a cables.csv has: {', '.join(COLUMNS)})", path=p, line=1)
    rows = []
    for row in reader:
        if None in row or any(v is None for v in row.values()):
            raise InputError("wrong number of fields", path=p, line=reader.line_num)
        if not any((v or "").strip() for v in row.values()):
            continue  # a blank line a spreadsheet left
        rows.append((reader.line_num, row))
    return rows


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


@dataclass
class Entry:
    """One row of the list: where it is, its cable, and what the site wrote in the derived columns."""
    line: int
    cable_id: str  # '' for a cable added without an ID
    stage: int | None
    stage_name: str
    ends: tuple[tuple[str, int], tuple[str, int]]
    rate: str | None
    length: float | None
    purchasable: str
    medium: str
    link: int = -1  # the fabric link it became


@dataclass
class Imported:
    """What `read` makes of an edited cable list."""
    fabric: Fabric
    layout: Layout
    meta: dict
    entries: list[Entry]
    record: CableIds  # the cable IDs of the plan it gives
    removed: list[list] = field(default_factory=list)  # planned cables whose rows were deleted: retired
    measured: list[tuple[str, float, float]] = field(default_factory=list)  # (ID, kept length, model length)
    derived_edits: list[str] = field(default_factory=list)  # rows whose medium/purchasable_m were edited
    unnumbered: int = 0  # rows added without an ID


def read(path: str | Path) -> Imported:
    """The plan of an edited cables.csv (+ cabling.json beside it, when present): see the module
    docstring for what is kept, what is computed again and what is refused."""
    path = Path(path)
    meta = read_meta(path.with_name("cabling.json"))
    p = str(path)
    rows = read_rows(path)
    if not rows:
        raise InputError("no cables", path=p)
    try:
        site = site_from_dict(meta["site"]) if meta.get("site") else Site()
    except InputError as e:
        raise InputError(f"site: {e}", path=str(path.with_name("cabling.json"))) from None
    record = meta.get("cable_ids")
    retired = {r[0] for r in (record or {}).get("retired", [])}

    devices: dict[str, dict] = {}  # name -> attributes, first row that named it
    cabinets: dict[int, str] = {}
    rack_cab: dict[str, int] = {}
    ports_used: dict[tuple[str, int], int] = {}
    ids: dict[str, int] = {}
    entries: list[Entry] = []
    for line, row in rows:
        where = {"path": p, "line": line}
        cid = row["cable_id"].strip()
        if cid in ids:
            raise InputError(f"duplicate cable ID {cid} (also on line {ids[cid]})", **where)
        if cid in retired:
            raise InputError(f"cable ID {cid} was retired (its cable left the plan); an ID is never given "
                             f"again: leave cable_id empty for a new cable", **where)
        if cid:
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
            side = row[f"{tag}_side"].strip().lower() or "front"
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
            known = devices.setdefault(name, {**attrs, "line": line, "tag": tag})
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
            raise InputError(f"cable {cid or 'without an ID'} connects {ends[0][0]} to itself", **where)
        length = row["length_m"].strip().replace(",", ".")  # a decimal comma from a spreadsheet
        try:
            length = float(length) if length else None
        except ValueError:
            raise InputError(f"length_m: not a length: {row['length_m']!r}", **where) from None
        if length is not None and not (math.isfinite(length) and length >= 0):
            raise InputError(f"length_m: {length} is not a length >= 0", **where)
        entries.append(Entry(line, cid, _int(row, "stage", where, 1, 10**6, empty_ok=True),
                             row["stage_name"].strip(), (ends[0], ends[1]), row["rate"].strip() or None, length,
                             row["purchasable_m"].strip(), row["medium"].strip()))
    _check_slots(devices, cabinets, site, p)

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
    for e in entries:
        (an, ap), (bn, bp) = e.ends
        try:
            e.link = f.add_link(f.index(an), f.index(bn), ap, bp, rate=e.rate)
        except InputError as err:
            raise InputError(str(err), path=p, line=e.line) from None

    ncab = max(cabinets) + 1 if cabinets else 0
    for c in range(ncab):
        if c not in cabinets:
            cabinets[c] = f"C{c}"  # an empty cabinet position keeps the floor's numbering
    kinds = []
    for c in range(ncab):
        members = [d["type"] for d in devices.values() if d["cabinet"] == c]
        kinds.append("switch" if members and all(m == "switch" for m in members)
                     else "node" if members and all(m == "hca" for m in members) else "mixed")
    n = f.num_nodes
    cab = np.array([devices[f.names[i]]["cabinet"] for i in range(n)], dtype=np.int64)
    u = np.array([devices[f.names[i]]["u"] for i in range(n)], dtype=np.int64)
    side = np.array([SIDES.index(devices[f.names[i]]["side"]) for i in range(n)], dtype=np.int8)
    lay = Layout(f, site, meta.get("policy") or "file", cab, u, side, kinds, [cabinets[c] for c in range(ncab)])
    out = Imported(f, lay, meta, entries, _record(entries, meta))
    _lengths(out, p)
    _removed(out)
    return out


def _check_slots(devices: dict, cabinets: dict, site: Site, path: str) -> None:
    """Refuse a device beyond its rack's height, or two devices in one slot: a device takes its
    height in U from its lowest U up, on its face, or on both faces when it is full-depth."""
    taken: dict[tuple[int, int, int], str] = {}
    for name, d in devices.items():
        if d["cabinet"] == FLOOR or not d["u"]:
            continue
        switch = d["type"] == "switch"
        height = site.switch_u if switch else site.hca_u
        full = (site.switch_depth if switch else site.hca_depth) == "full"
        where = {"path": path, "line": d["line"]}
        rack = cabinets[d["cabinet"]]
        top = d["u"] + height - 1
        if top > site.cabinet_u:
            raise InputError(f"{d['tag']}_u: {name} at {rack} U{d['u']}"
                             + (f" ({height}U high, up to U{top})" if height > 1 else "")
                             + f" is beyond the rack's {site.cabinet_u} U", **where)
        faces = (0, 1) if full else (SIDES.index(d["side"]),)
        for slot in range(d["u"], top + 1):
            for face in faces:
                other = taken.setdefault((d["cabinet"], slot, face), name)
                if other != name:
                    o = devices[other]
                    raise InputError(f"{d['tag']}_u: {name} at {rack} U{d['u']} {d['side']} takes U{slot} "
                                     f"{SIDES[face]}, where {other} is (line {o['line']}, U{o['u']} {o['side']}"
                                     f"{', full depth' if face != SIDES.index(o['side']) else ''})", **where)


def _record(entries: list[Entry], meta: dict) -> CableIds:
    """The cable IDs of the imported plan: every row with an ID keeps it and its stage."""
    old = meta.get("cable_ids") or {}
    names = list(meta.get("stages") or old.get("stages") or [])
    rec = CableIds(stages=names, retired=[list(r) for r in old.get("retired", [])], next=int(old.get("next", 1)),
                   width=int(old.get("width", 4)), sm_host=meta.get("sm_host"))
    for e in entries:
        if not e.cable_id or e.stage is None:
            continue
        while len(rec.stages) < e.stage:
            rec.stages.append("")
        if not rec.stages[e.stage - 1]:
            rec.stages[e.stage - 1] = e.stage_name or f"stage {e.stage}"
        rec.cables[ids.ends_key(*e.ends)] = (e.cable_id, e.stage)
    return rec


def _lengths(imp: Imported, path: str) -> None:
    """Keep the lengths a site measured (a length_m other than the one written), refuse one
    shorter than the straight line between its ports; note edits of derived columns."""
    lay, f, written = imp.layout, imp.fabric, imp.meta.get("written") or {}
    s = lay.site
    for e in imp.entries:
        was = written.get(e.cable_id)
        if was is not None and e.purchasable and e.medium and (e.purchasable, e.medium) != (was[1], was[2]):
            imp.derived_edits.append(e.cable_id)
        if e.length is None or (was is not None and was[0] and abs(float(was[0]) - e.length) < 5e-4):
            continue  # derived: computed again from the positions
        a, b = f.link_a[e.link], f.link_b[e.link]
        if lay.cabinet[a] != FLOOR and lay.cabinet[b] != FLOOR:
            ca, cb = int(lay.cabinet[a]), int(lay.cabinet[b])
            line = float(cables.straight_line(lay.cabinet_row[ca], lay.cabinet_col[ca], lay.u[a], lay.side[a],
                                              lay.cabinet_row[cb], lay.cabinet_col[cb], lay.u[b], lay.side[b],
                                              width=s.cabinet_width, depth=s.cabinet_depth, pitch=s.row_pitch,
                                              u_height=s.u_height))
            if e.length + 1e-9 < line:
                raise InputError(f"length_m: {e.cable_id or 'the cable'} is {e.length:g} m, shorter than the "
                                 f"{line:.2f} m straight line between {e.ends[0][0]} port {e.ends[0][1]} and "
                                 f"{e.ends[1][0]} port {e.ends[1][1]}", path=path, line=e.line)
        model = float(lay.length[e.link])
        lay.set_length(e.link, e.length)
        imp.measured.append((e.cable_id or f"line {e.line}", e.length, model))
    lay.order_cables()
    imp.unnumbered = sum(1 for e in imp.entries if not e.cable_id)


def _removed(imp: Imported) -> None:
    """Planned cables whose rows were deleted: retired (their IDs never come back)."""
    old = (imp.meta.get("cable_ids") or {}).get("cables", [])
    present = {e.cable_id for e in imp.entries if e.cable_id}
    for c in old:
        if c[0] not in present:
            imp.removed.append(list(c))
    imp.record.retired += imp.removed
