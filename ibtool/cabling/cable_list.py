"""The cable plan: every cable of a Fabric placed by a Layout, as a cabling crew works from it.

Each cable gets
* a permanent ID, `C0001` ...: a plan is first numbered in wiring order (stage, then the
  lower-numbered end's device and port); the IDs are kept in the plan (ibtool.cabling.ids), so a
  re-plan keeps every existing cable's ID and stage, new cables get new IDs and removed ones are
  retired, never reused;
* its wiring stage (ibtool.cabling.stages): the fabric grows from the subnet manager's host as
  one connected piece, stage by stage, the node cables last;
* both ends' locations (site, room, rack, U, side, device, port) and a label for each end.

Labels: ibtool.cabling.labels (three lines of at most 20 characters by default).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ibtool.cabling import ids, labels, stages
from ibtool.cabling.ids import CableIds
from ibtool.errors import InputError
from ibtool.fabric import SWITCH
from ibtool.layout.model import FLOOR, SIDES, Layout

LABEL_FORMAT = labels.DEFAULT


@dataclass
class CablePlan:
    """Cables in wiring order: `links[i]` is the fabric link of cable `ids[i]`, `ends(i)` its ends
    (the lower-numbered device first), `stage[i]` its stage number (1-based). `record` is the
    plan's cable ID record as it stands after this plan (new IDs in `new`, IDs retired now in
    `retired`)."""
    layout: Layout
    links: np.ndarray
    swap: np.ndarray  # True where the cable's first end is the link's b end
    stage: np.ndarray
    stage_names: list[str]
    ids: list[str]
    sm: int  # the subnet manager's host: stages are checked by discovering from it
    record: CableIds
    new: list[str] = field(default_factory=list)
    retired: list[list] = field(default_factory=list)
    site: str = "site"
    room: str = "room"
    label_format: str = LABEL_FORMAT
    guids_real: bool = False  # the devices' own GUIDs (a plan of a discovered fabric), not planned ones

    @property
    def fabric(self):
        return self.layout.fabric

    def __len__(self) -> int:
        return len(self.links)

    @property
    def sm_host(self) -> str:
        return self.fabric.names[self.sm]

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
        return labels.end_fields(self.rack(node), int(lay.u[node]) if placed else 0,
                                 SIDES[lay.side[node]] if placed else "", self.fabric.names[node], int(port),
                                 self.site, self.room)

    def label(self, cable_id: str, stage: int, near: tuple[int, int], far: tuple[int, int]) -> list[str]:
        """The label lines at the end `near` of a cable."""
        return labels.lines(self.label_format, cable_id, stage, self.end_fields(*near), self.end_fields(*far))

    def rows(self):
        """One dict per cable, in wiring order (the columns of cables.csv)."""
        f, lay = self.fabric, self.layout
        node: dict[int, tuple[dict, dict]] = {}  # per device: its end fields, its columns (a plan has ~4 ends a device)

        def of(n: int) -> tuple[dict, dict]:
            if n not in node:
                e = self.end_fields(n, 0)
                c = int(lay.cabinet[n])
                node[n] = (e, {"site": e["site"], "room": e["room"], "rack": e["rack"],
                               "cabinet": "" if c == FLOOR else c, "u": e["u"] or "", "side": e["side"],
                               "device": e["device"], "type": "switch" if f.types[n] == SWITCH else "hca",
                               "role": f.roles[n], "ports": f.nports[n], "guid": f"{f.guids[n]:#018x}"})
            return node[n]

        for i, cid in enumerate(self.ids):
            near, far = self.ends(i)
            li = int(self.links[i])
            st = int(self.stage[i])
            row = {"cable_id": cid, "stage": st, "stage_name": self.stage_names[st - 1]}
            ends = []
            for tag, (n, port) in (("a", near), ("b", far)):
                e, cols = of(n)
                for k, v in cols.items():
                    row[f"{tag}_{k}"] = v
                row[f"{tag}_port"] = port
                ends.append({**e, "port": int(port)})
            length, purch = lay.reach[li], lay.purchasable[li]  # the length the cable must have
            row.update({"rate": f.link_rate[li] or "",
                        "length_m": "" if np.isnan(length) else round(round(float(length), 5), 3),  # as layout.json keeps it
                        "purchasable_m": "" if np.isnan(purch) else f"{float(purch):g}",
                        "medium": lay.medium[li] or "",
                        "a_lines": labels.lines(self.label_format, cid, st, ends[0], ends[1]),
                        "b_lines": labels.lines(self.label_format, cid, st, ends[1], ends[0])})
            row["a_label"], row["b_label"] = labels.text(row["a_lines"]), labels.text(row["b_lines"])
            yield row

    def by_link(self) -> dict[int, int]:
        """fabric link -> cable index."""
        return {int(li): i for i, li in enumerate(self.links)}


def plan_cables(layout: Layout, site: str = "site", room: str = "room", label_format: str = LABEL_FORMAT,
                record: CableIds | None = None, sm_host: str | None = None) -> CablePlan:
    """The cable list of `layout.fabric`: IDs and stages from the plan's `record` (ibtool.cabling.ids)
    where it has the cable, new ones in wiring order otherwise (see the module docstring);
    `sm_host` names the subnet manager's host (default: the record's, else the first HCA)."""
    label_format = labels.check_format(label_format)
    for option, v in (("--site-name", site), ("--room", room)):
        if not v or re.search(r"[\s,]", v):
            raise InputError(f"{option}: {v!r} must be a non-empty word without spaces or commas")
    f = layout.fabric
    name = sm_host or (record.sm_host if record and record.sm_host in f.names else None)
    if name is not None and name not in f.names:
        raise InputError(f"--sm-host {name}: no such device in the plan")
    sm = stages.sm_host(f, name)
    natural, natural_names = stages.stage_numbers(f, layout, sm)
    a = np.asarray(f.link_a, dtype=np.int64)
    b = np.asarray(f.link_b, dtype=np.int64)
    pa = np.asarray(f.link_pa, dtype=np.int64)
    pb = np.asarray(f.link_pb, dtype=np.int64)
    swap = b < a
    lo, plo = np.where(swap, b, a), np.where(swap, pb, pa)
    wiring = np.lexsort((plo, lo, natural))  # the natural wiring order
    fresh = record is None  # the plan's first numbering: every ID is new, none worth reporting
    if record is None:
        record = CableIds(stages=list(natural_names), width=max(4, len(str(f.num_links))))
    record = CableIds(dict(record.cables), list(record.stages), [list(r) for r in record.retired],
                      max([record.next] + [(ids.number(c[0]) or 0) + 1 for c in record.cables.values()]
                          + [(ids.number(r[0]) or 0) + 1 for r in record.retired]),
                      record.width, f.names[sm])
    n = f.names
    keys = [ids.ends_key((n[x], int(p)), (n[y], int(q))) for x, p, y, q in zip(a, pa, b, pb)]
    cable_id: list = [None] * f.num_links
    stage = np.zeros(f.num_links, dtype=np.int64)
    new = []
    for li in wiring.tolist():
        known = record.cables.get(keys[li])
        if known is not None:
            cable_id[li], stage[li] = known
            continue
        st = natural_names[natural[li] - 1]
        if st not in record.stages:
            record.stages.append(st)
        cable_id[li], stage[li] = record.new_id(), record.stages.index(st) + 1
        record.cables[keys[li]] = (cable_id[li], int(stage[li]))
        new.append(cable_id[li])
    present = set(keys)
    retired = [[cid, st, *sorted(k)[0], *sorted(k)[1]] for k, (cid, st) in record.cables.items() if k not in present]
    for r in retired:
        del record.cables[ids.ends_key((r[2], r[3]), (r[4], r[5]))]
    record.retired += retired
    order = np.asarray(sorted(range(f.num_links), key=lambda li: (stage[li], ids.number(cable_id[li]) or 0,
                                                                  cable_id[li])), dtype=np.int64)
    return CablePlan(layout, order, swap[order], stage[order], list(record.stages),
                     [cable_id[li] for li in order.tolist()], sm, record, [] if fresh else new,
                     retired, site, room, label_format)
