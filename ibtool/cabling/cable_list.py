"""The cable plan: every cable of a Fabric placed by a Layout, as a cabling crew works from it.

Each cable gets
* a stable ID, `C0001` ...: cables are numbered in wiring order (stage, then the lower-numbered
  end's device and port), so the same plan always gives the same IDs;
* its wiring stage: groups of cables a crew lays and checks on their own, derived from the
  family's labels: first the node cables (switch to HCA), then for KNS dimension 0's indirect
  networks, dimension 1's ..., for trees one stage per pair of levels (leaf to the level above,
  ...), otherwise cables inside cabinets, then cables between cabinets;
* both ends' locations (site, room, rack, U, side, device, port) and a label for each end.

Labels follow TIA-606's identifier style: location of the near end, then the far end, prefixed
by the cable ID. The format of one end is a Python format string over the fields

    cable  site  room  rack  u  side  device  port  stage
    far_site far_room far_rack far_u far_side far_device far_port

default `LABEL_FORMAT`: "{cable} {rack}-U{u:02d} {device} P{port} > {far_rack}-U{far_u:02d}
{far_device} P{far_port}". The same format prints both tags of a cable, each from its own end.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

import numpy as np

from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH
from ibtool.layout.model import FLOOR, SIDES, Layout

LABEL_FORMAT = "{cable} {rack}-U{u:02d} {device} P{port} > {far_rack}-U{far_u:02d} {far_device} P{far_port}"
END_FIELDS = ("site", "room", "rack", "u", "side", "device", "port")
LABEL_FIELDS = ("cable", "stage") + END_FIELDS + tuple(f"far_{x}" for x in END_FIELDS)


def check_label_format(fmt: str, option: str = "--label-format") -> str:
    """Refuse a label format with an unknown field or a malformed specification, before any work."""
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError as e:
        raise InputError(f"{option}: malformed format {fmt!r}: {e}") from None
    for _, name, _, _ in parsed:
        if name is None:
            continue
        if name not in LABEL_FIELDS:
            raise InputError(f"{option}: unknown field {{{name}}} (known: {', '.join(LABEL_FIELDS)})")
    sample = {k: 1 if k in ("u", "port", "far_u", "far_port") else "x" for k in LABEL_FIELDS}
    try:
        fmt.format(**sample)
    except (ValueError, IndexError, KeyError) as e:
        raise InputError(f"{option}: malformed format {fmt!r}: {e}") from None
    return fmt


def _stage_key(f, a: int, b: int, lay: Layout | None) -> tuple:
    """(order, name) of a cable's wiring stage, from the family's labels."""
    if f.types[a] == CA or f.types[b] == CA:
        return (0, 0, "node cables (switch to HCA)")
    la, lb = f.labels[a], f.labels[b]
    dim = la.get("dim", lb.get("dim"))
    if dim is not None:
        return (1, int(dim), f"dimension {dim} indirect networks")
    for key in ("level", "stage"):
        if key in la and key in lb:
            lo, hi = sorted((int(la[key]), int(lb[key])))
            return (2, lo, f"{key}s {lo}-{hi}" if lo != hi else f"{key} {lo}")
    if lay is not None and lay.cabinet[a] != FLOOR and lay.cabinet[a] == lay.cabinet[b]:
        return (3, 0, "switch cables inside cabinets")
    if lay is not None:
        return (3, 1, "switch cables between cabinets")
    return (3, 0, "switch cables")


@dataclass
class CablePlan:
    """Cables in wiring order: `links[i]` is the fabric link of cable `ids[i]`, `near[i]` its end
    listed first (the lower-numbered device), `stage[i]` its stage number (1-based)."""
    layout: Layout
    links: np.ndarray
    swap: np.ndarray  # True where the cable's first end is the link's b end
    stage: np.ndarray
    stage_names: list[str]
    site: str = "site"
    room: str = "room"
    label_format: str = LABEL_FORMAT

    @property
    def fabric(self):
        return self.layout.fabric

    def __len__(self) -> int:
        return len(self.links)

    @property
    def ids(self) -> list[str]:
        w = max(4, len(str(len(self.links))))
        return [f"C{i + 1:0{w}d}" for i in range(len(self.links))]

    def ends(self, i: int) -> tuple[tuple[int, int], tuple[int, int]]:
        f, li = self.fabric, int(self.links[i])
        a, b = (f.link_a[li], f.link_pa[li]), (f.link_b[li], f.link_pb[li])
        return (b, a) if self.swap[i] else (a, b)

    def rack(self, node: int) -> str:
        c = int(self.layout.cabinet[node])
        return "floor" if c == FLOOR else self.layout.cabinet_names[c]

    def end_fields(self, node: int, port: int) -> dict:
        lay = self.layout
        placed = lay.cabinet[node] != FLOOR
        return {"site": self.site, "room": self.room, "rack": self.rack(node),
                "u": int(lay.u[node]) if placed else 0, "side": SIDES[lay.side[node]] if placed else "",
                "device": self.fabric.names[node], "port": int(port)}

    def label(self, cable_id: str, stage: int, near: tuple[int, int], far: tuple[int, int]) -> str:
        fields = {"cable": cable_id, "stage": stage, **self.end_fields(*near),
                  **{f"far_{k}": v for k, v in self.end_fields(*far).items()}}
        return self.label_format.format(**fields)

    def rows(self):
        """One dict per cable, in wiring order (the columns of cables.csv)."""
        f, lay = self.fabric, self.layout
        for i, cid in enumerate(self.ids):
            near, far = self.ends(i)
            li = int(self.links[i])
            st = int(self.stage[i])
            row = {"cable_id": cid, "stage": st, "stage_name": self.stage_names[st - 1]}
            for tag, (node, port) in (("a", near), ("b", far)):
                e = self.end_fields(node, port)
                c = int(lay.cabinet[node])
                row.update({f"{tag}_site": e["site"], f"{tag}_room": e["room"], f"{tag}_rack": e["rack"],
                            f"{tag}_cabinet": "" if c == FLOOR else c, f"{tag}_u": e["u"] or "",
                            f"{tag}_side": e["side"], f"{tag}_device": e["device"],
                            f"{tag}_type": "switch" if f.types[node] == SWITCH else "hca",
                            f"{tag}_role": f.roles[node], f"{tag}_ports": f.nports[node],
                            f"{tag}_guid": f"{f.guids[node]:#018x}", f"{tag}_port": port})
            length, purch = lay.reach[li], lay.purchasable[li]  # the length the cable must have
            row.update({"rate": f.link_rate[li] or "",
                        "length_m": "" if np.isnan(length) else round(round(float(length), 5), 3),  # as layout.json keeps it
                        "purchasable_m": "" if np.isnan(purch) else f"{float(purch):g}",
                        "medium": lay.medium[li] or "",
                        "a_label": self.label(cid, st, near, far), "b_label": self.label(cid, st, far, near)})
            yield row

    def by_link(self) -> dict[int, int]:
        """fabric link -> cable index."""
        return {int(li): i for i, li in enumerate(self.links)}


def plan_cables(layout: Layout, site: str = "site", room: str = "room", label_format: str = LABEL_FORMAT) -> CablePlan:
    """Number the cables of `layout.fabric` in wiring order (see the module docstring)."""
    check_label_format(label_format)
    for option, v in (("--site-name", site), ("--room", room)):
        if not v or re.search(r"[\s,]", v):
            raise InputError(f"{option}: {v!r} must be a non-empty word without spaces or commas")
    f = layout.fabric
    keys = [_stage_key(f, a, b, layout) for a, b in zip(f.link_a, f.link_b)]
    uniq = sorted(set(keys))
    number = {k: i + 1 for i, k in enumerate(uniq)}
    a = np.asarray(f.link_a, dtype=np.int64)
    b = np.asarray(f.link_b, dtype=np.int64)
    pa = np.asarray(f.link_pa, dtype=np.int64)
    pb = np.asarray(f.link_pb, dtype=np.int64)
    swap = b < a
    lo, plo = np.where(swap, b, a), np.where(swap, pb, pa)
    stage = np.fromiter((number[k] for k in keys), dtype=np.int64, count=len(keys))
    order = np.lexsort((plo, lo, stage))
    return CablePlan(layout, order, swap[order], stage[order], [k[2] for k in uniq], site, room, label_format)
