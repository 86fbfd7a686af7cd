"""The plan in NetBox's bulk-import CSV columns (Import in each list view, or the REST API), so a
site that keeps its DCIM in NetBox loads the plan instead of typing it.

One file per object type, in the order NetBox needs them (each refers to the ones before by
name); the column names are the fields of NetBox's import forms (netbox/dcim/forms/bulk_import.py:
ManufacturerImportForm, DeviceTypeImportForm, DeviceRoleImportForm, SiteImportForm,
RackImportForm, DeviceImportForm, InterfaceImportForm, CableImportForm):

    1-manufacturers.csv  name, slug
    2-device-types.csv   manufacturer, model, slug, u_height, is_full_depth
    3-device-roles.csv   name, slug, color
    4-sites.csv          name, slug, status
    5-racks.csv          site, name, status, width, u_height
    6-devices.csv        name, role, manufacturer, device_type, status, site, rack, position, face, description
    7-interfaces.csv     device, name, type, description
    8-cables.csv         side_a_device, side_a_type, side_a_name, side_b_device, side_b_type,
                         side_b_name, type, status, label, length, length_unit, description

Everything is `planned` (NetBox's device, rack, site and cable status), faces `front`/`rear`,
interfaces `infiniband-<speed>` (InterfaceTypeChoices), cable types `dac-passive`, `dac-active`,
`aoc` and `mmf` (CableTypeChoices) for copper, active copper, active optical and fiber, lengths
in `m`. The manufacturer and device types are placeholders named after what the plan knows
(`ibtool plan`, "IB switch, 8 ports"); map them to the site's own before importing when it has
them.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

from ibtool.fabric import SWITCH
from ibtool.layout.model import FLOOR

MANUFACTURER = "ibtool plan"
CABLE_TYPE = {"copper": "dac-passive", "active copper": "dac-active", "aoc": "aoc", "fiber": "mmf"}
_SPEED = re.compile(r"(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)", re.IGNORECASE)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _device_type(f, node: int) -> str:
    return f"IB switch, {f.nports[node]} ports" if f.types[node] == SWITCH else f"IB node, {f.nports[node]} HCA port" + \
        ("s" if f.nports[node] != 1 else "")


def interface(port: int) -> str:
    """A port's interface name in NetBox (the same on the sheets: 'port 3')."""
    return f"port {port}"


def _write(path: Path, header: list[str], rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def write(plan, rows: list[dict], out: Path) -> None:
    """The eight CSV files into the directory `out` (see the module docstring)."""
    f, lay = plan.fabric, plan.layout
    site = plan.site
    types = Counter(_device_type(f, i) for i in range(f.num_nodes))
    u_of = {True: lay.site.switch_u, False: lay.site.hca_u}
    full = {True: lay.site.switch_depth == "full", False: lay.site.hca_depth == "full"}
    kind = {_device_type(f, i): f.types[i] == SWITCH for i in range(f.num_nodes)}
    _write(out / "1-manufacturers.csv", ["name", "slug"], [[MANUFACTURER, slug(MANUFACTURER)]])
    _write(out / "2-device-types.csv", ["manufacturer", "model", "slug", "u_height", "is_full_depth"],
           [[MANUFACTURER, t, slug(t), u_of[kind[t]], str(full[kind[t]]).lower()] for t in sorted(types)])
    roles = sorted(set(f.roles))
    _write(out / "3-device-roles.csv", ["name", "slug", "color"],
           [[r, slug(r), "2196f3" if r in ("switch", "router") else "4caf50"] for r in roles])
    _write(out / "4-sites.csv", ["name", "slug", "status"], [[site, slug(site), "planned"]])
    _write(out / "5-racks.csv", ["site", "name", "status", "width", "u_height"],
           [[site, lay.cabinet_names[c], "planned", 19, lay.site.cabinet_u] for c in range(lay.num_cabinets)])
    devices = []
    for i in range(f.num_nodes):
        c = int(lay.cabinet[i])
        placed = c != FLOOR
        devices.append([f.names[i], f.roles[i], MANUFACTURER, _device_type(f, i), "planned", site,
                        lay.cabinet_names[c] if placed else "", int(lay.u[i]) if placed else "",
                        ("front", "rear")[int(lay.side[i])] if placed else "",
                        f"GUID {f.guids[i]:#018x}" + ("" if plan.guids_real else " (planned: a placeholder)")])
    _write(out / "6-devices.csv", ["name", "role", "manufacturer", "device_type", "status", "site", "rack",
                                   "position", "face", "description"], devices)
    speed = {}
    for li, r in enumerate(f.link_rate):
        m = _SPEED.search(r or "")
        sp = f"infiniband-{m.group(1).lower()}" if m else "other"
        for node, port in ((f.link_a[li], f.link_pa[li]), (f.link_b[li], f.link_pb[li])):
            speed[node, port] = sp
    count: dict = {}  # a free port has the speed its device runs elsewhere
    for (node, _), sp in speed.items():
        count.setdefault(node, Counter())[sp] += 1
    own = {node: c.most_common(1)[0][0] for node, c in count.items()}
    names = [interface(p) for p in range(max(f.nports, default=0) + 1)]
    rows_i = []
    for i, (dev, n) in enumerate(zip(f.names, f.nports)):
        mine = own.get(i, "other")
        for p in range(1, n + 1):
            sp = speed.get((i, p))
            rows_i.append((dev, names[p], sp or mine, "" if sp else "free"))
    _write(out / "7-interfaces.csv", ["device", "name", "type", "description"], rows_i)
    _write(out / "8-cables.csv", ["side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type",
                                  "side_b_name", "type", "status", "label", "length", "length_unit", "description"],
           [[r["a_device"], "dcim.interface", interface(r["a_port"]), r["b_device"], "dcim.interface",
             interface(r["b_port"]), CABLE_TYPE.get(r["medium"], ""), "planned", r["cable_id"], r["purchasable_m"],
             "m" if r["purchasable_m"] else "", f"stage {r['stage']}; {r['rate']}".rstrip("; ")] for r in rows])
