"""The Layout: where every node of a Fabric stands and how long every cable is.

A layout is placed ON a fabric and never changes it: it holds arrays indexed like the fabric's
nodes (cabinet, U slot, side) and links (length, purchasable length, medium), plus the cabinets'
positions on the machine-room grid and the Site it was placed with.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.formats import atomic_write, open_input
from ibtool.layout import cables
from ibtool.layout.site import Site, site_from_dict

FORMAT = "ibtool-layout/1"
FLOOR = -1  # cabinet of a node the plan does not place (it stands on the floor, uncabled by the model)
SIDES = ("front", "back")


class Layout:
    def __init__(self, fabric: Fabric, site: Site, policy: str, cabinet, u, side,
                 cabinet_kind: list[str], cabinet_names: list[str] | None = None):
        n = fabric.num_nodes
        self.fabric = fabric
        self.site = site
        self.policy = policy
        self.cabinet = np.asarray(cabinet, dtype=np.int64).reshape(n)  # FLOOR = not placed
        self.u = np.asarray(u, dtype=np.int64).reshape(n)  # lowest U slot (1 = bottom); 0 = none
        self.side = np.asarray(side, dtype=np.int8).reshape(n)  # 0 front, 1 back
        self.cabinet_kind = list(cabinet_kind)
        # what the site calls each cabinet (labels, sheets); a cabling sheet may rename them
        self.cabinet_names = list(cabinet_names) if cabinet_names else [f"C{i}" for i in range(len(cabinet_kind))]
        rows, cols = site.grid_for(max(1, len(cabinet_kind)))
        idx = np.arange(len(cabinet_kind))
        self.grid = (rows, cols)
        self.cabinet_row, self.cabinet_col = idx // cols, idx % cols
        self.length = np.full(fabric.num_links, np.nan)
        self.purchasable = np.full(fabric.num_links, np.nan)
        self.medium = np.full(fabric.num_links, "", dtype=object)
        self.compute_cables()

    # ------------------------------------------------------------------ cables
    def compute_cables(self) -> None:
        """Length (site's cable model), the routed run, purchasable length and medium of every link."""
        f, s = self.fabric, self.site
        a = np.asarray(f.link_a, dtype=np.int64)
        b = np.asarray(f.link_b, dtype=np.int64)
        ca, cb = self.cabinet[a], self.cabinet[b]
        placed = (ca != FLOOR) & (cb != FLOOR)
        ra, rb = self.cabinet_row[np.where(placed, ca, 0)], self.cabinet_row[np.where(placed, cb, 0)]
        xa, xb = self.cabinet_col[np.where(placed, ca, 0)], self.cabinet_col[np.where(placed, cb, 0)]
        run = cables.length_routed(ra, xa, self.u[a], self.side[a], rb, xb, self.u[b], self.side[b],
                                   cabinet_u=s.cabinet_u, width=s.cabinet_width, depth=s.cabinet_depth,
                                   pitch=s.row_pitch, side=s.side, tray_height=s.tray_height,
                                   service_loop=s.service_loop, u_height=s.u_height)
        if s.cable_model == "routed":
            length = run
        elif s.cable_model == "paper002":
            length = cables.length_paper002(ra, xa, self.u[a], rb, xb, self.u[b], cabinet_u=s.cabinet_u,
                                            width=s.cabinet_width, depth=s.row_pitch, overhead=s.overhead,
                                            side=s.side, u_height=s.u_height)
        else:
            length = cables.length_paper004(ra, xa, rb, xb, width=s.cabinet_width, depth=s.row_pitch,
                                            intra_cabinet=s.intra_cabinet, overhead=s.overhead)
        self.length = np.where(placed, length, np.nan)
        self.run = np.where(placed, run, np.nan)
        self.measured = np.zeros(f.num_links, dtype=bool)
        self.speeds = [cables.speed_of(r, s.default_speed) for r in f.link_rate]
        self.order_cables()

    def order_cables(self) -> None:
        """What each cable must reach (a measured length as it is; a model length, never less
        than the routed run) and so its purchasable length and medium (ibtool.layout.cables.choose)."""
        self.reach = np.where(self.measured, self.length, np.fmax(self.length, self.run))
        self.purchasable, self.medium = cables.choose(self.reach, self.speeds, self.site)

    def set_length(self, link: int, metres: float) -> None:
        """A measured length for `link` (layout.json or cables.csv edited by the site): kept as it
        is, and the cable ordered by it. Call order_cables() after the last one."""
        self.length[link] = metres
        self.measured[link] = True

    def cable_length(self, link: int) -> float:
        """The model length of `link` in metres (NaN when an end stands on the floor)."""
        return float(self.length[link])

    def cable(self, link: int) -> dict:
        p = self.purchasable[link]
        return {"length_m": self.cable_length(link), "purchasable_m": None if np.isnan(p) else float(p),
                "medium": self.medium[link]}

    def position(self, node: int) -> dict:
        c = int(self.cabinet[node])
        if c == FLOOR:
            return {"cabinet": None, "u": None, "side": None}
        return {"cabinet": c, "row": int(self.cabinet_row[c]), "col": int(self.cabinet_col[c]),
                "u": int(self.u[node]), "side": SIDES[self.side[node]]}

    @property
    def num_cabinets(self) -> int:
        return len(self.cabinet_kind)

    def summary(self, exclude_hca_links: bool = False) -> dict:
        """Cable totals: length, per medium, longest, cables per purchasable length, unplaced."""
        keep = np.ones(self.fabric.num_links, dtype=bool)
        if exclude_hca_links:
            t = np.asarray(self.fabric.types)
            keep = (t[self.fabric.link_a] == 2) & (t[self.fabric.link_b] == 2)
        length, purch, med = self.length[keep], self.purchasable[keep], self.medium[keep]
        placed = ~np.isnan(length)
        per_medium = {}
        for m in cables.MEDIA:
            sel = med == m
            per_medium[m] = {"cables": int(sel.sum()), "length_m": round(float(length[sel].sum()), 3),
                             "purchased_m": round(float(np.nansum(purch[sel])), 3)}
        buy = Counter(float(x) for x in purch[~np.isnan(purch)])
        longest = int(np.nanargmax(np.where(placed, length, -1))) if placed.any() else None
        links = np.flatnonzero(keep)
        return {
            "cabinets": self.num_cabinets, "grid": list(self.grid),
            "cables": int(keep.sum()), "unplaced_cables": int((~placed).sum()),
            "total_length_m": round(float(length[placed].sum()), 3),
            "total_purchased_m": round(float(np.nansum(purch)), 3),
            "longest_m": None if longest is None else round(float(length[longest]), 3),
            "longest_cable": None if longest is None else self.describe_link(int(links[longest])),
            "longer_than_catalogue": int((placed & np.isnan(purch)).sum()),
            "per_medium": per_medium,
            "per_purchasable_length": {f"{k:g}": v for k, v in sorted(buy.items())},
        }

    def describe_link(self, link: int) -> str:
        f = self.fabric
        return (f"{f.names[f.link_a[link]]}[{f.link_pa[link]}] - {f.names[f.link_b[link]]}[{f.link_pb[link]}]")

    # ------------------------------------------------------------------ layout.json
    def to_dict(self) -> dict:
        f = self.fabric
        nodes = []
        for i in range(f.num_nodes):
            c = int(self.cabinet[i])
            nodes.append([f.names[i], c, int(self.u[i]) or None, SIDES[self.side[i]] if c != FLOOR else None])
        cab = []
        for i, kind in enumerate(self.cabinet_kind):
            cab.append({"name": self.cabinet_names[i], "row": int(self.cabinet_row[i]), "col": int(self.cabinet_col[i]),
                        "kind": kind})
        cbl = []
        # canonical order (lower node first, by node and port), so a plan rebuilt from its cable
        # list in another link order writes the same file
        a, b = np.asarray(f.link_a), np.asarray(f.link_b)
        lo = np.minimum(a, b)
        plo = np.where(a <= b, f.link_pa, f.link_pb) if f.num_links else np.zeros(0, dtype=np.int64)
        for li in np.lexsort((plo, lo)).tolist():
            ln, p = self.length[li], self.purchasable[li]
            ends = [(f.link_a[li], f.link_pa[li]), (f.link_b[li], f.link_pb[li])]
            (x, px), (y, py) = sorted(ends)
            cbl.append([f.names[x], px, f.names[y], py,
                        None if np.isnan(ln) else round(float(ln), 5), None if np.isnan(p) else float(p),
                        self.medium[li] or None])
        return {"format": FORMAT, "fabric": f.name, "policy": self.policy, "site": self.site.to_dict(),
                "grid": list(self.grid), "cabinets": cab, "nodes": nodes, "cables": cbl}

    def write(self, path: str | Path) -> None:
        """Write layout.json atomically (beside the plan: PLAN_DIR/layout.json)."""
        with atomic_write(path) as fh:
            json.dump(self.to_dict(), fh, separators=(",", ":"))
            fh.write("\n")

    @classmethod
    def read(cls, path: str | Path, fabric: Fabric) -> Layout:
        """Read layout.json back onto `fabric` (the same plan): positions, site and cables as stored
        (a length edited by hand, e.g. a measured one, wins over the model)."""
        path = str(path)
        with open_input(path) as fh:
            try:
                d = json.load(fh)
            except json.JSONDecodeError as e:
                raise InputError(f"not valid JSON: {e.msg}", path=path, line=e.lineno) from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise InputError(f"not an ibtool layout (expected \"format\": \"{FORMAT}\")", path=path)
        try:
            site = site_from_dict(d["site"])
            kinds = [c["kind"] for c in d["cabinets"]]
            cab_names = [str(c.get("name", f"C{i}")) for i, c in enumerate(d["cabinets"])]
            entries = d["nodes"]
            rows = d["cables"]
        except (KeyError, TypeError) as e:
            raise InputError(f"missing or malformed entry {e}", path=path) from None
        except InputError as e:
            raise InputError(f"site: {e}", path=path) from None
        n = fabric.num_nodes
        cab = np.full(n, FLOOR, dtype=np.int64)
        u = np.zeros(n, dtype=np.int64)
        side = np.zeros(n, dtype=np.int8)
        seen = np.zeros(n, dtype=bool)
        by_name = {name: i for i, name in enumerate(fabric.names)}
        for e in entries:
            try:
                name, c, slot, sd = e
            except (TypeError, ValueError):
                raise InputError(f"node entry {e!r} is not [name, cabinet, u, side]", path=path) from None
            i = by_name.get(name)
            if i is None:
                raise InputError(f"node {name!r} is not in the fabric {fabric.name!r}", path=path)
            if not (c == FLOOR or 0 <= c < len(kinds)):
                raise InputError(f"node {name!r}: cabinet {c} does not exist ({len(kinds)} cabinets)", path=path)
            cab[i], u[i], side[i], seen[i] = c, slot or 0, SIDES.index(sd) if sd in SIDES else 0, True
        if not seen.all():
            missing = fabric.names[int(np.flatnonzero(~seen)[0])]
            raise InputError(f"node {missing!r} of the fabric has no position in the layout", path=path)
        lay = cls(fabric, site, d.get("policy", "file"), cab, u, side, kinds, cab_names)
        if len(rows) != fabric.num_links:
            raise InputError(f"{len(rows)} cables in the layout but {fabric.num_links} links in the fabric",
                             path=path)
        f = fabric
        link_of = {}
        for li in range(f.num_links):
            link_of[f.names[f.link_a[li]], f.link_pa[li]] = li
            link_of[f.names[f.link_b[li]], f.link_pb[li]] = li
        for r in rows:
            try:
                an, pa, bn, pb, length, purch, med = r
            except (TypeError, ValueError):
                raise InputError(f"cable entry {r!r} is not [a, port, b, port, length, purchasable, medium]",
                                 path=path) from None
            li = link_of.get((an, pa))
            if li is None or link_of.get((bn, pb)) != li:
                raise InputError(f"cable {an}[{pa}] - {bn}[{pb}] is not a link of the fabric", path=path)
            if length is not None and (not isinstance(length, (int, float)) or length < 0):
                raise InputError(f"cable {an}[{pa}] - {bn}[{pb}]: length {length!r} is not a length >= 0",
                                 path=path)
            # purchasable length and medium are derived; a length other than the model's is a
            # measured one (edited by hand or by `cabling import`) and wins
            if length is not None and not abs(length - lay.length[li]) <= 1e-4:
                lay.set_length(li, float(length))
        lay.order_cables()
        return lay
