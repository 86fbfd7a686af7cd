"""The done-when checks of an order (issue 23), on any cabling package: written here from the
package's own files, independently of the library's models."""

import csv
import json
import math
import re

from ibtool.cabling import cables_csv
from ibtool.formats import ibnetdiscover


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def straight(lay, node_a, node_b) -> float:
    """The straight line between two devices' ports: cabinets on the floor grid (width along a
    row, pitch between rows), a back-mounted device the cabinet's depth behind the front."""
    s = lay.site
    pos = []
    for n in (node_a, node_b):
        c = int(lay.cabinet[n])
        pos.append((int(lay.cabinet_col[c]) * s.cabinet_width,
                    int(lay.cabinet_row[c]) * (s.cabinet_depth + s.aisle) + int(lay.side[n]) * s.cabinet_depth,
                    int(lay.u[n]) * s.u_height))
    return math.dist(*pos)


def check_order(pkg, plan_dir) -> dict:
    """Every cable of the package at PKG: its rate is the plan's, no copper cable is longer than
    its rate's copper limit, and what is bought reaches the straight line between its ports.
    Returns counts for the caller's own assertions."""
    cab = rows(pkg / "cables.csv")
    site = json.loads((pkg / "cabling.json").read_text())["site"]
    plan = ibnetdiscover.read(plan_dir / "topology.net")
    rate = {}
    for li in range(plan.num_links):
        a = (plan.names[plan.link_a[li]], plan.link_pa[li])
        b = (plan.names[plan.link_b[li]], plan.link_pb[li])
        rate[frozenset((a, b))] = plan.link_rate[li]
    imp = cables_csv.read(pkg / "cables.csv")
    f, lay = imp.fabric, imp.layout
    out = {"copper": 0, "placed": 0}
    for r in cab:
        ends = frozenset(((r["a_device"], int(r["a_port"])), (r["b_device"], int(r["b_port"]))))
        assert r["rate"] == rate[ends] and r["rate"], (r["cable_id"], r["rate"], rate[ends])
        if not r["purchasable_m"]:
            continue
        out["placed"] += 1
        bought = float(r["purchasable_m"])
        if r["medium"] == "copper":
            out["copper"] += 1
            speed = re.search(r"(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR)", r["rate"]).group(1)
            limit = site["copper_limit"].get(speed, site["copper_limit"]["*"])
            assert bought <= limit, f"{r['cable_id']}: copper {bought} m at {r['rate']} (limit {limit} m)"
        line = straight(lay, f.index(r["a_device"]), f.index(r["b_device"]))
        assert float(r["length_m"]) >= line - 1e-9 and bought >= line - 1e-9, \
            f"{r['cable_id']}: {r['length_m']} m, {bought} m bought; the ports are {line:.3f} m apart"
    return out
