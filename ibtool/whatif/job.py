"""A what-if job: what it reads, which engine routes, which failures, in how many chunks; kept in
OUT/whatif.json so that every worker (a local process, a Slurm array task) and every resumed run
does the same job.

    src = source(Path("run"), plan=None)       # a run or collect directory, an ibnetdiscover file, a plan
    job = Job.new(src, engine=None, failures=..., chunks=8, ...)   # the engine: the run's or the plan's
    job.write(out); Job.read(out)

The source gives the fabric with its LIDs (a plan has none: they are numbered as `ibtool route`
numbers them, ibtool.routing.lids), the net file ibsim emulates for OpenSM's engines (the plan's
topology.net, else the discovered file), the plan directory (cable IDs and labels, the family's
drawing) and the engine the run or the plan names.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ibtool import plandir, rundir
from ibtool.errors import InputError
from ibtool.fabric import SWITCH, Fabric
from ibtool.formats import atomic_write, ibnetdiscover, read_tagged_json
from ibtool.whatif.failures import Failure

FORMAT = "ibtool-whatif-job/1"
FILE = "whatif.json"


@dataclass
class Source:
    fabric: Fabric  # with LIDs
    net: Path  # what ibsim emulates for OpenSM's engines
    plan: Path | None  # the plan directory, when known
    engines: list[str] | None  # the engines the run configured, or the plan names
    path: Path  # as given
    drawn: Fabric | None = None  # the plan with its family's labels (the drawing), when there is one


def source(path: Path, plan: Path | None = None) -> Source:
    """Read what what-if starts from (see the module docstring)."""
    from ibtool.plan import Plan, read_plan
    from ibtool.routing.lids import assign_lids
    path = Path(path)
    if not path.exists():
        raise InputError("no such file or directory", path=str(path))
    engines = None
    if path.is_dir() and Plan.at(path).net.is_file():  # a plan directory
        net, plan = Plan.at(path).net, plan or path
    elif path.is_dir():  # a run (sim run, collect) or one step of a fault scenario
        net = rundir.fabric(path)
        if not net.is_file():
            raise InputError(f"neither a plan ({plandir.NET}) nor a run ({rundir.FABRIC}) directory", path=str(path))
        s = rundir.summary(path)
        if s.get("engine"):
            engines = [s["engine"]]
        if s.get("net") and plan is None:
            p = rundir.plan_of(path, s["net"])
            if p is not None and Plan.at(p.parent).net == p:
                plan = p.parent
    else:
        net = path
    fabric = ibnetdiscover.read(net)
    ibnetdiscover.refuse_partial(fabric, net)  # failures of a part of the fabric are not the fabric's
    drawn = None
    if plan is not None:
        drawn, pl, _ = read_plan(plan)
        plan = pl.dir
        if engines is None:
            engines = pl.engines()
        if net == pl.net:  # the plan itself: its devices with the family's roles and labels
            fabric = drawn
        elif set(drawn.names) >= set(fabric.names):
            by = {n: i for i, n in enumerate(drawn.names)}
            fabric.roles = [drawn.roles[by[n]] for n in fabric.names]
    if not fabric.port_lids:  # a plan: numbered as `ibtool route` numbers it (OpenSM numbers its own)
        assign_lids(fabric)
    return Source(fabric, net, plan, engines, path, drawn)


def sm_node(src: Source, sm: str | None, sm_host: str | None = None) -> int:
    """The subnet manager's device: --sm, else the plan's SM host (its cable list names it), else
    the first device of the plan's net file (where ibsim attaches its SM, as `sim run` runs it),
    else of the file read."""
    from ibtool.plan import Plan
    names = {n: i for i, n in enumerate(src.fabric.names)}
    if sm is None and sm_host is not None and sm_host in names:
        return names[sm_host]  # the plan's SM host (cabling.json), where the crew put it
    if sm is None:
        net = Plan.at(src.plan).net if src.plan is not None and Plan.at(src.plan).net.is_file() else src.net
        return names.get(ibnetdiscover.read(net).names[0], 0)
    if sm not in names:
        raise InputError(f"--sm {sm}: no device of the fabric is called that")
    return names[sm]


def failure_spec(fabric: Fabric, fl: Failure) -> dict:
    f = fabric
    return {"id": fl.id, "kind": fl.kind, "parts": list(fl.parts),
            "links": [[f.names[f.link_a[li]], f.link_pa[li], f.names[f.link_b[li]], f.link_pb[li]] for li in fl.links],
            "nodes": [f.names[x] for x in fl.nodes]}


def failure_of(fabric: Fabric, d: dict) -> Failure:
    """A failure by names (whatif.json) on a fabric of the same devices and cables."""
    f = fabric
    names = {n: i for i, n in enumerate(f.names)}
    link_of = {(f.names[a], pa, f.names[b], pb): li for li, (a, pa, b, pb) in
               enumerate(zip(f.link_a, f.link_pa, f.link_b, f.link_pb))}
    links = []
    for a, pa, b, pb in d["links"]:
        li = link_of.get((a, pa, b, pb), link_of.get((b, pb, a, pa)))
        if li is None:
            raise InputError(f"{a} port {pa} - {b} port {pb}: not a cable of the fabric")
        links.append(li)
    nodes = []
    for n in d["nodes"]:
        if n not in names or f.types[names[n]] != SWITCH:
            raise InputError(f"{n}: not a switch of the fabric")
        nodes.append(names[n])
    return Failure(d["id"], d["kind"], tuple(links), tuple(nodes), tuple(d.get("parts") or ()))


@dataclass
class Job:
    source: str
    plan: str | None
    engine: list[str]
    offline: bool  # hdor offline (HdorC, HdorReference), else OpenSM on ibsim
    sm: str
    failures: list[dict]
    hosts: dict
    how: str
    chunks: int
    vls: int = 8
    permutations: int = 16
    seed: int = 1
    timeout: float = 300.0
    digest: str = ""  # of the fabric read: a resumed job must read the same
    implementation: str = "c"  # hdor offline: its C core, or the Python reference ("python")

    def to_dict(self) -> dict:
        return {"format": FORMAT, **{k: getattr(self, k) for k in self.__dataclass_fields__}}

    def write(self, out: Path) -> None:
        with atomic_write(Path(out) / FILE) as fh:
            json.dump(self.to_dict(), fh, indent=1)
            fh.write("\n")

    @classmethod
    def read(cls, out: Path) -> Job:
        d = read_tagged_json(Path(out) / FILE, FORMAT, "a what-if job")
        try:
            return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})  # a field added since: its default
        except (KeyError, TypeError) as e:
            raise InputError(f"malformed what-if job: {e}", path=str(Path(out) / FILE)) from None

    def chunk(self, k: int) -> range:
        """The failures (indices) of chunk k: contiguous, as even as can be."""
        n = len(self.failures)
        return range(k * n // self.chunks, (k + 1) * n // self.chunks)


def digest(fabric: Fabric) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([fabric.names, [f"{g:x}" for g in fabric.guids]]).encode())
    h.update(json.dumps(sorted((fabric.names[a], pa, fabric.names[b], pb) for a, pa, b, pb in
                               zip(fabric.link_a, fabric.link_pa, fabric.link_b, fabric.link_pb))).encode())
    h.update(json.dumps(sorted((fabric.names[x], p, v) for (x, p), v in fabric.port_lids.items())).encode())
    return h.hexdigest()[:16]
