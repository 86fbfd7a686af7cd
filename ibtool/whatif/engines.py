"""The engines what-if routes a fabric with, behind one seam: an Engine routes the fault-free fabric
and then each failure of a list, in order, and hands each result to a sink.

    engine.run(failures, sink)
        sink.fault_free(FaultFree(fabric, tables, sl2vl, path_sls))   # once, first
        sink.routed(failure, Routed(...))                              # then one per failure

Which engine routes which family (`pick`):

* **hdor (a KNS)**: offline, the fabric loaded once and each failure routed against it, by
  `HdorC`: hdor's C core without OpenSM (libhdorcore.so through routing/hdor_c.py, the same code
  the plugin runs in OpenSM), whose degraded pass for a failure is incremental (docs/plugin.md
  "The degraded pass"); or, with `--implementation python`, `HdorReference`, the Python reference
  (routing/hdor_single.py: the degraded pass of docs/hdor.md section 6 for one failure). Both give
  the full degraded pass's tables, SL2VL rows and path SLs, byte for byte, or the same decline.
* **every other engine** (minhop, updn, ftree, dfsssp, nue, lash, torus-2QoS, and hdor itself
  when asked for `--engine opensm:hdor`): `OpenSMOnIbsim`, as in production: one long-running
  OpenSM on ibsim per worker, each failure applied and repaired through ibsim's console and the
  tables read back, exactly as `ibtool sim run --faults` does it (it *is* ibtool.sim.faults.run:
  step k takes failure k down and brings failure k-1 back; every step's dumps are what `verify
  all` would read).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ibtool import rundir
from ibtool.errors import CheckFailed, InputError
from ibtool.fabric import SWITCH, Fabric
from ibtool.formats import ibnetdiscover, lft
from ibtool.formats import pathrecord
from ibtool.formats.pathrecord import PathSLTable
from ibtool.formats import sl2vl as sl2vl_format
from ibtool.whatif.failures import Failure

# hdor's decline classes (docs/plugin.md "Log lines"), for the reasons the Python reference gives
_CODES = ((re.compile(r"need \d+ VLs|VLs, and OpenSM programs"), "HD31"),
          (re.compile(r"more than \d+ SLs"), "HD32"),
          (re.compile(r"only by a route the scheme does not allow"), "HD30"))


def decline_code(reason: str) -> str:
    return next((code for pat, code in _CODES if pat.search(reason)), "HD10")


@dataclass
class FaultFree:
    """The fabric before any failure, as the engine routed it (with LIDs)."""

    fabric: Fabric
    tables: lft.Tables
    sl2vl: dict | None = None
    path_sls: object | None = None  # a PathSLTable, or None: every pair on SL 0


@dataclass
class Routed:
    """One failure routed. table: the forwarding tables after it, one row per switch node of
    `rows` (None: rows in the order of `FaultFree.fabric`'s switches by node index, as
    verify.bound binds them); changed: (row indices, LIDs) the engine recomputed, a hint;
    dead_nodes, dead_links: what failed and what it cut off, in FaultFree.fabric's numbering."""

    table: np.ndarray | None = None
    rows: list[int] | None = None
    changed: tuple | None = None
    sl2vl: dict | None = None
    path_sls: object | None = None
    dead_nodes: set[int] = field(default_factory=set)
    dead_links: set[int] = field(default_factory=set)
    vls: int | None = None  # the VLs the engine says its routes need (hdor)
    declined: dict | None = None  # {"code": "HD31", "reason": ...}: the engine refused
    engine: str | None = None  # the engine that configured the tables
    fallback: bool = False  # ... another than the one asked for
    error: str | None = None  # no tables (OpenSM timed out ...)
    seconds: float = 0.0  # the engine's time for this failure


def _not_complete(reason: str) -> InputError:
    return InputError(f"hdor: not a complete KNS ({reason}): what-if routes failures of the complete fabric "
                      f"(give the fabric before any failure, or its plan)")


class Engine:
    """The seam (see the module docstring). `name`: the routing engine(s); `how`: how it runs."""

    name = "?"
    how = "?"

    def run(self, failures: list[Failure], sink) -> None:
        raise NotImplementedError


class HdorReference(Engine):
    """hdor offline: the Python reference, the fabric loaded once (routing/hdor_single.Loaded)."""

    how = "offline: the Python reference of hdor (ibtool.routing.hdor_single), the fabric loaded once"

    def __init__(self, fabric: Fabric, sm: int, vls: int = 8):
        self.fabric, self.sm, self.vls, self.name = fabric, sm, vls, "hdor"
        self.kns = self.tables = None

    def run(self, failures: list[Failure], sink) -> None:
        from ibtool.routing import hdor
        from ibtool.routing.hdor_single import Loaded
        if self.kns is None:  # once per process: the next chunk a process runs starts from here
            try:
                base = hdor.compute(self.fabric, first_sight=False)
            except CheckFailed as e:  # hdor's refusal (not a KNS)
                raise _not_complete(e.reason) from None
            self.kns, self.tables = Loaded(self.fabric, base, self.vls), base.tables
        kns = self.kns
        sink.fault_free(FaultFree(self.fabric, self.tables))
        for fl in failures:
            t0 = time.process_time()
            dn, dl = kns.piece(set(fl.nodes), set(fl.links), self.sm)
            try:
                one = kns.route(fl.nodes, fl.links, self.sm)
            except CheckFailed as e:  # hdor declines (its reason names the class)
                sink.routed(fl, Routed(dead_nodes=dn, dead_links=dl, engine=None,
                                       declined={"code": decline_code(e.reason), "reason": e.reason},
                                       seconds=time.process_time() - t0))
                continue
            sink.routed(fl, Routed(one.table, kns.rows, one.changed, one.sl2vl, one.path_sls, set(one.dead_nodes),
                                   set(one.dead_links), one.vls, engine="hdor", seconds=time.process_time() - t0))


class HdorC(Engine):
    """hdor offline: the C core (routing/hdor_c.Engine), the fabric loaded once, the fault-free state
    kept in C; each failure's degraded pass recomputes only what it touches."""

    how = "offline: hdor's C core without OpenSM (libhdorcore.so), the fabric loaded once, each failure's pass incremental"

    def __init__(self, fabric: Fabric, sm: int, vls: int = 8):
        self.fabric, self.sm, self.vls, self.name = fabric, sm, vls, "hdor"
        self.c = None

    def _load(self) -> None:
        from ibtool.hops import Pieces
        from ibtool.routing import hdor_c
        f = self.fabric
        c = hdor_c.Engine(self.vls)
        c.load(f)
        try:
            base = c.route(dump=False)
        except hdor_c.Declined as e:  # not a KNS
            raise _not_complete(e.reason) from None
        self.tables = base.tables
        del base  # the next pass writes over the engine's tables: nothing left to copy out
        self.c = c
        self.pieces = Pieces(f.num_nodes, f.link_a, f.link_b)
        self.sw = np.flatnonzero(np.asarray(f.types) == SWITCH)
        self.width = max((len(r) for r in self.tables.lft.values()), default=0)

    def run(self, failures: list[Failure], sink) -> None:
        from ibtool.routing import hdor_c
        from ibtool.routing.hdor_single import DetourSLs
        if self.c is None:  # once per process: the next chunk a process runs starts from here
            self._load()
        f, c = self.fabric, self.c
        sink.fault_free(FaultFree(f, self.tables))
        row_of = np.full(f.num_nodes, -1, dtype=np.int64)
        row_of[self.sw] = np.arange(len(self.sw))
        for fl in failures:
            t0 = time.process_time()
            dn, dl = self.pieces.cut_off(set(fl.nodes), set(fl.links), self.sm)
            ends = [(f.link_a[li], f.link_pa[li]) for li in fl.links]
            try:
                res = c.route_failures(fl.nodes, ends, self.sm, dump=False)
            except hdor_c.Declined as e:
                sink.routed(fl, Routed(dead_nodes=dn, dead_links=dl, engine=None,
                                       declined={"code": f"HD{e.code:02X}", "reason": e.reason},
                                       seconds=time.process_time() - t0))
                continue
            # the engine's buffer itself, read by the sink before the next pass writes over it;
            # rows in the bound's order (switches by node index), a failed switch's never read
            table = c.matrix(self.width)
            nodes, lids = res.changed
            keys, sls, gone = res.detour_sls
            # the engine's keys are dlid << 16 | slid; the reference's tables slid << 16 | dlid
            table_sls = PathSLTable(keys & 0xFFFF, keys >> 16, sls, None)
            undelivered = list(zip((gone & 0xFFFF).tolist(), (gone >> 16).tolist()))
            routed = Routed(table, None, (row_of[nodes], lids), res.sl2vl,
                            DetourSLs(table_sls, undelivered, None, None, []),  # lookups only: no expand()
                            dn, dl, res.vls, engine="hdor", seconds=time.process_time() - t0)
            del res  # nothing holds the pass: the next one writes over its tables without a copy
            sink.routed(fl, routed)


class OpenSMOnIbsim(Engine):
    """OpenSM with `engines` on ibsim emulating `net`, one run of `sim run --faults` for the list."""

    how = "OpenSM on ibsim, as in production: one OpenSM per worker, each failure through ibsim's console"

    def __init__(self, source: Fabric, net: Path, engines: list[str], work: Path, conf_base: str | None = None,
                 hdor_conf: Path | None = None, timeout: float = 300, settle: float = 120):
        self.source, self.net, self.engines, self.work = source, Path(net), engines, Path(work)
        self.conf_base, self.hdor_conf, self.timeout, self.settle = conf_base, hdor_conf, timeout, settle
        self.name = ",".join(engines)

    def run(self, failures: list[Failure], sink) -> None:
        from ibtool.sim import faults
        plan = ibnetdiscover.read(self.net)
        names = {n: i for i, n in enumerate(plan.names)}
        steps, before = [], []
        for fl in failures:
            down = [_spec(plan, names, x) for x in fl.down(self.source)]
            steps.append(faults.Step(down=down, up=before, name=fl.id))
            before = down
        attempt = 1
        while (self.work / f"attempt-{attempt}").exists():
            attempt += 1
        out = self.work / f"attempt-{attempt}"  # a resumed chunk starts a run of its own
        state = {"next": 0, "base": None, "t": time.monotonic()}

        def ready(_msg=None):
            while (rundir.step(out, state["next"]) / rundir.SUMMARY).is_file():
                k = state["next"]
                d = rundir.step(out, k)
                if k == 0:
                    state["base"] = _fault_free(d)
                    sink.fault_free(state["base"])
                else:
                    now = time.monotonic()
                    sink.routed(failures[k - 1], _routed(d, state["base"], now - state["t"]))
                    state["t"] = now
                state["next"] += 1

        faults.run(self.net, out, self.engines, faults.Scenario(steps, 2, self.settle), self.timeout, progress=ready,
                   hdor_conf=self.hdor_conf, conf_base=self.conf_base)
        ready()
        if state["next"] != len(failures) + 1:
            raise CheckFailed(f"OpenSM on ibsim stopped after {max(state['next'] - 1, 0)} of {len(failures)} "
                              f"failures (see {out})")


def _spec(plan: Fabric, names: dict, spec: str) -> str:
    """A failure's element in the names of the net ibsim emulates (they are the fabric's)."""
    dev, _, port = spec.rpartition(" ")
    if spec in names or (dev in names and port.isdigit()):
        return spec
    raise InputError(f"{spec}: not a device of {plan.name}")


def _read_step(d: Path):
    fabric = ibnetdiscover.read(rundir.fabric(d))
    tables = lft.read(rundir.lfts(d))
    p = rundir.sl2vl(d)
    s2v = sl2vl_format.read(p) if p is not None else None
    p = rundir.path_sls(d)
    sls = pathrecord.read_table(p) if p is not None else None
    return fabric, tables, s2v, sls


def _fault_free(d: Path) -> FaultFree:
    s = rundir.summary(d)
    if not s.get("ok"):
        raise CheckFailed(f"OpenSM did not route the fault-free fabric ({s.get('engine') or 'no engine'}"
                          f"{', fell back' if s.get('fallback') else ''}): see {d}")
    return FaultFree(*_read_step(d))


def _routed(d: Path, base: FaultFree, seconds: float) -> Routed:
    """A step of the run as one failure routed: the tables read back, mapped onto the fault-free
    fabric (by GUID and port), with what discovery no longer finds as failed."""
    s = rundir.summary(d)
    f0 = base.fabric
    declined = None
    if s.get("hdor_declined"):
        reason = str(s["hdor_declined"])
        m = re.match(r"\(?(HD[0-9A-F]{2})\)?:?\s*(.*)", reason)
        declined = {"code": m.group(1), "reason": m.group(2)} if m else {"code": decline_code(reason), "reason": reason}
    if not s.get("subnet_up") or s.get("timed_out") or not s.get("engine"):
        return Routed(error=f"no tables within the settle time ({d})", declined=declined, seconds=seconds)
    now, tables, s2v, sls = _read_step(d)
    dead_nodes = {x for x in range(f0.num_nodes) if now.by_guid(f0.guids[x]) is None}
    dead_links = set()
    for li in range(f0.num_links):
        a, b = now.by_guid(f0.guids[f0.link_a[li]]), now.by_guid(f0.guids[f0.link_b[li]])
        if a is None or b is None or now.peer(a, f0.link_pa[li]) != (b, f0.link_pb[li]):
            dead_links.add(li)
    for (x, port), lids in f0.port_lids.items():
        y = now.by_guid(f0.guids[x])
        if y is not None and (y, port) in now.port_lids and now.port_lids[(y, port)] != lids:
            return Routed(error=f"{f0.names[x]} port {port}: its LID moved ({lids[0]} -> "
                                f"{now.port_lids[(y, port)][0]}): the tables cannot be compared", seconds=seconds)
    sw = [x for x in range(f0.num_nodes) if f0.is_switch(x)]
    top = max(lid + (1 << lmc) - 1 for lid, lmc in f0.port_lids.values())
    table = tables.matrix([f0.guids[x] for x in sw], top)
    return Routed(table, None, None, s2v, sls, dead_nodes, dead_links, None, declined, s.get("engine"),
                  bool(s.get("fallback")), None, seconds)
