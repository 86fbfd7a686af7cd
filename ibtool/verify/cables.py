"""Verification in the cabling crew's words: cable IDs, labels and wiring stages.

When the plan has a cable list (`ibtool cabling` writes PLAN/cabling/cables.csv), every finding
of `verify topology` that concerns a planned cable is given that cable's ID and labels, and moves
read as a technician would say them:

    C0043 (S[0,1] P1 -> R[1,0] P2) is in S[0,1] port 2: move it to port 1

`--stage N` checks a fabric cabled up to wiring stage N: the plan is cut to the cables of stages
1..N, cables of later stages that are already there are reported as ahead of the plan, and
devices in pieces of the fabric the discovery could not reach yet (a KNS before its last
dimension is cabled is in pieces) as not reached, not as errors.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.formats import open_input


@dataclass
class Cable:
    id: str
    stage: int
    a: tuple[str, int]
    b: tuple[str, int]
    a_label: str
    b_label: str


class CableList(dict):
    """(device, port) -> Cable, for both ends of every cable; `.cables` in wiring order."""

    def __init__(self, cables: list[Cable], path: str):
        super().__init__()
        self.cables = cables
        self.path = path
        for c in cables:
            self[c.a] = c
            self[c.b] = c

    @property
    def stages(self) -> int:
        return max((c.stage for c in self.cables), default=0)


def find(plan: Path, explicit: Path | None = None) -> Path | None:
    """The plan's cable list: --cables, else PLAN/cables.csv or PLAN/cabling/cables.csv."""
    if explicit is not None:
        return explicit
    d = plan if plan.is_dir() else plan.parent
    for cand in (d / "cables.csv", d / "cabling" / "cables.csv"):
        if cand.is_file():
            return cand
    return None


def read(path: Path) -> CableList:
    p = str(path)
    cables = []
    with open_input(path) as fh:
        reader = csv.DictReader(fh)
        need = ("cable_id", "stage", "a_device", "a_port", "b_device", "b_port", "a_label", "b_label")
        missing = [c for c in need if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"missing column {missing[0]!r} (not a cables.csv of `ibtool cabling`?)", path=p, line=1)
        for row in reader:
            try:
                cables.append(Cable(row["cable_id"], int(row["stage"]), (row["a_device"], int(row["a_port"])),
                                    (row["b_device"], int(row["b_port"])), row["a_label"], row["b_label"]))
            except (TypeError, ValueError):
                raise InputError("stage or port is not a whole number", path=p, line=reader.line_num) from None
    return CableList(cables, p)


def stage_plan(plan: Fabric, cables: CableList, stage: int) -> tuple[Fabric, set]:
    """The plan cut to the cables of wiring stages 1..stage (every device kept, so a device of a
    later stage that is already there is still known by its name). Returns it and the set of later
    cables (as frozensets of (device, port))."""
    if not 1 <= stage <= cables.stages:
        raise InputError(f"--stage {stage}: the cable list {cables.path} has stages 1..{cables.stages}")
    keep = {frozenset((c.a, c.b)) for c in cables.cables if c.stage <= stage}
    later = {frozenset((c.a, c.b)) for c in cables.cables if c.stage > stage}
    n = plan.names
    links = [li for li in range(plan.num_links)
             if frozenset(((n[plan.link_a[li]], plan.link_pa[li]), (n[plan.link_b[li]], plan.link_pb[li]))) in keep]
    nodes = range(plan.num_nodes)
    out = Fabric(f"{plan.name} (stages 1..{stage})")
    out.params = plan.params
    new = {}
    for i in nodes:
        new[i] = out.add_node(plan.types[i], n[i], plan.nports[i], plan.roles[i], plan.labels[i], plan.guids[i])
    for li in links:
        out.add_link(new[plan.link_a[li]], new[plan.link_b[li]], plan.link_pa[li], plan.link_pb[li],
                     plan.link_rate[li])
    return out, later


def _end(short: str) -> tuple[str, int] | None:
    """'R[1,0][2]' (the report's short form of an end) -> ('R[1,0]', 2)."""
    name, sep, port = short.rpartition("[")
    if not sep or not port.endswith("]") or not port[:-1].isdigit():
        return None
    return name, int(port[:-1])


def _tag(c: Cable) -> str:
    return f"{c.id} ({c.a[0]} P{c.a[1]} -> {c.b[0]} P{c.b[1]})"


def unreached(rep, plan: Fabric) -> list[dict]:
    """A fabric cabled up to a stage may be in pieces (KNS before its last dimension): discovery
    from one host sees only its piece. Missing devices and cables of pieces the discovery did not
    reach at all are taken out of the stage check's TopologyReport and returned as findings to
    check from a host of that piece."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    n = plan.num_nodes
    g = coo_matrix(([1] * plan.num_links, (plan.link_a, plan.link_b)), shape=(n, n))
    _, comp = connected_components(g, directed=False)
    reached = {int(comp[i]) for i in rep.to_plan.values()}
    out = []

    def far(name: str) -> bool:
        try:
            return int(comp[plan.index(name)]) not in reached
        except InputError:
            return False

    keep = []
    for d in rep.missing_devices:
        (out if far(d["device"]) else keep).append(d)
    rep.missing_devices = keep
    keep = []
    for c in rep.missing_cables:
        ends = [_end(e) for e in c["ends"]]
        (out if ends[0] and far(ends[0][0]) else keep).append(c)
    rep.missing_cables = keep
    if rep.not_planned_topology:  # judged again on the pieces the discovery reached
        cables = sum(1 for a in plan.link_a if int(comp[a]) in reached)
        nodes = sum(1 for c in comp if int(c) in reached)
        if rep.correct_cables >= 0.5 * cables and len(rep.to_plan) >= 0.5 * nodes:
            rep.not_planned_topology, rep.reason = False, ""
    return [{"text": f"not reached from this host at this stage: {x['text']}"} for x in out]


def ahead_of_stage(rep, cables: CableList, later: set) -> list[dict]:
    """Take the cables and devices of later stages that are already cabled out of a stage check's
    TopologyReport (they are not errors) and return them as `ahead_of_plan` findings."""
    ahead, keep = [], []
    for x in rep.extra_cables:
        ends = [_end(e) for e in x["ends"]]
        if all(ends) and frozenset(ends) in later:
            c = cables[ends[0]]
            ahead.append({"cable_id": c.id, "stage": c.stage, "text": f"{_tag(c)} (stage {c.stage}) is already cabled"})
        else:
            keep.append(x)
    rep.extra_cables = keep
    later_devices = {e[0] for pair in later for e in pair}
    dev_keep = []
    for d in rep.extra_devices:
        if d["device"] in later_devices:
            ahead.append({"device": d["device"], "text": f"{d['device']} (a device of a later stage) is already cabled"})
        else:
            dev_keep.append(d)
    rep.extra_devices = dev_keep
    return ahead


def annotate(t: dict, cables: CableList) -> dict:
    """Add cable IDs and labels to a `verify topology` section (TopologyReport.as_dict), in place."""
    def cable_at(short: str) -> Cable | None:
        e = _end(short)
        return cables.get(e) if e else None

    def add(item: dict, c: Cable | None, text: str | None = None):
        if c is None:
            return
        item["cable_id"], item["labels"] = c.id, [c.a_label, c.b_label]
        item["text"] = text or f"{_tag(c)}: {item['text']}"

    for fx in t.get("fixes", []):
        if fx["kind"] == "move":
            c = cable_at(fx["to"])
            frm, to = _end(fx["from"]), _end(fx["to"])
            if c and frm and to:
                where = f"port {to[1]}" if frm[0] == to[0] else f"{to[0]} port {to[1]}"
                add(fx, c, f"{_tag(c)} is in {frm[0]} port {frm[1]}: move it to {where}")
        elif fx["kind"] == "swap":
            cs = [cable_at(e) for e in fx["ends"]]
            if all(cs):
                fx["cable_id"] = [c.id for c in cs]
                fx["labels"] = [[c.a_label, c.b_label] for c in cs]
                fx["text"] = f"{cs[0].id} and {cs[1].id} are swapped: {fx['text']}"
    for m in t.get("miswired", []):
        add(m, cable_at(m["port"]))
    for key in ("missing_cables", "degraded_links", "rate_mismatches"):
        for item in t.get(key, []):
            add(item, cable_at(item["ends"][0]))
    t["cable_list"] = cables.path
    return t
