"""Every route of a fabric, traced from its forwarding tables: delivery, length, dimension order,
deadlock freedom (channel dependency graph per VL) and balance.

Routing in InfiniBand is by destination: a packet for LID L at switch W leaves by LFT_W[L], so
the route from any source port to L is the route from the switch it is cabled to. We trace
(origin switch, destination LID) pairs for every switch and every assigned LID (each LID of an
LMC range) at once, one hop per numpy step over all pairs still in flight, and weigh each pair
by the source ports behind it (the switch's own port 0 and the CA ports cabled to it). So the
counts are over (source port, destination LID) pairs, as a per-pair trace would give them.

Channels are directed links, named by the egress slot of `Fabric.ports()`. The channel
dependency graph (Dally & Seitz) gets an edge (c_in, vl_in) -> (c_out, vl_out) wherever a CA-to-CA
route arrives on c_in and leaves on c_out; the VL on each hop comes from the SL2VL dump when given
(SL 0, the SL every path uses without a path-SL engine), else VL 0. The fabric is free of credit
loops when this graph is acyclic; otherwise a concrete cycle is printed. As ibdmchk does, traffic
to switch LIDs (management) is left out of the deadlock analysis.

This module runs the check; its parts live beside it, one job each: bound (fabric and tables as
arrays), trace (the hop-by-hop walker), delivery (certificate, walk, tally), deadlock, balance,
expect (hdor's tables and dimension order), unaffected (routes a fault did not touch).
"""

from __future__ import annotations

import time

import numpy as np

from ibtool.fabric import CA, Fabric
from ibtool.formats.lft import Tables
from ibtool.formats.pathrecord import PathSLTable
from ibtool.verify.balance import Loads, balance_section
from ibtool.verify.bound import bind, switch_distances
from ibtool.sim.opensm_options import SL_ENGINES
from ibtool.verify.deadlock import deadlock_section, sl_dependencies
from ibtool.verify.delivery import Tally, certify, delivery_ok, delivery_section, walk
from ibtool.verify.expect import expect_hdor, hdor_dims
from ibtool.verify.trace import VLMap
from ibtool.verify.unaffected import compare as compare_unaffected


def verify(fabric: Fabric, tables: Tables, sl2vl=None, expect: str | None = None, reference=None,
           permutations: int = 16, seed: int = 1, progress=None, balance: bool = True, path_sls=None,
           engine: str | None = None, baseline: tuple[Fabric, Tables] | None = None) -> dict:
    """All route checks; returns the 'routes' section of the report (see docs/verify.md).

    balance=False skips the link loads (routes per link, all-to-all, permutations): delivery,
    lengths, dimension order and deadlock freedom only. path_sls ((SLID, DLID) -> SL, e.g. from
    `saquery -p`) gives each HCA-to-HCA route its SL, and with sl2vl the VL of each hop; `engine`
    names the engine that made the tables: for one that gives paths their own SLs (SL_ENGINES)
    without path SLs, the SL2VL dump cannot say which VL a route takes, so every route is put on
    one VL: acyclic there proves freedom whatever the SLs, a cycle there is NOT CHECKED (the
    engine's VLs may break it), never a credit loop it may not have.
    baseline: (fabric, tables) before a fault (step 0 of `sim run --faults`): routes that touch
    no failed element must be unchanged (ibtool.verify.unaffected), and with expect="hdor" a
    dimension-order violation is accepted on a detoured route (the scheme moves it to a higher VL:
    the per-VL deadlock check is what proves that safe), not on any other."""
    say = progress or (lambda m: None)
    t0 = time.monotonic()
    if path_sls is not None and not isinstance(path_sls, PathSLTable):  # a dict: looked up 3 M pairs at a time
        path_sls = PathSLTable.of(path_sls)
    b = bind(fabric, tables)
    sls_unknown = engine in SL_ENGINES and path_sls is None  # the VL of a route depends on its SL
    vl = VLMap(b, sl2vl) if sl2vl is not None and path_sls is None and not sls_unknown else None
    ns = len(b.sw_nodes)
    nslots = int(b.offset[-1])
    dist = switch_distances(b) if ns <= 20000 else None
    pw = int(b.nports.max()) + 1
    uniform = vl is None or vl.uniform is not None
    seen = np.zeros(nslots * pw, dtype=bool) if uniform else None
    edges: list[np.ndarray] = []
    t = Tally()
    lids = b.lids[b.lids != b.top_missing] if b.top_missing else b.lids
    todo = lids
    if dist is not None and uniform:
        say(f"checking {ns} switches x {len(lids)} LIDs")
        cert = certify(b, dist, t, seen, pw, say)
        todo = lids[~cert[lids]]
    if not uniform:  # the VL changes along paths: dependencies of every route from the tracer
        todo = lids
    if len(todo):
        say(f"tracing {ns} switch origins x {len(todo)} LIDs")
        walk(b, todo, dist, t, seen, pw, edges, vl, None, None, {}, say)
    if path_sls is not None:
        say("channel dependencies per VL from the path SLs")
        vl, edges, seen, nosl = sl_dependencies(b, sl2vl, path_sls)
    deadlock = deadlock_section(b, seen, pw, edges, vl, sl2vl is not None and not sls_unknown, say)
    if path_sls is not None:
        deadlock["path_sls"] = {"file": path_sls.path, "pairs_without_record": nosl}
    elif sls_unknown:
        deadlock["one_vl"] = True  # every route on one VL: acyclic there is acyclic on any VLs
        if not deadlock["free"]:  # the cycle may be split across VLs by the engine's SLs, which we do not have
            deadlock.update(free=None, checked=False, note=(
                f"{engine} gives each path its own SL (and so VL), and the path SLs were not given: on one VL "
                f"the routes form a cycle of {len(deadlock['cycle'])} channels, which the engine's VLs may "
                f"break. Check it with the path SLs: `ibtool sim run --path-sls` (saquery-paths.out), "
                f"`verify routes --path-sls FILE`"))
    dims = hdor_dims(fabric, reference) if expect == "hdor" and reference is not None else None
    dimt = {"checked": 0, "violations": 0, "example": None, "accepted": 0, "detoured": None}
    unaffected = None
    if baseline is not None:
        say("routes a fault did not touch, against the tables before it")
        unaffected, dimt["detoured"] = compare_unaffected(bind(*baseline), b)
        if path_sls is not None:
            dimt["sls"] = path_sls
            dimt["cas"] = {}
            for (c, p), (lid, _) in fabric.port_lids.items():
                peer = fabric.peer(c, p)
                if fabric.types[c] == CA and peer is not None:
                    dimt["cas"].setdefault(peer[0], []).append(lid)
    bal = None
    if balance or dims is not None:
        say("link loads" if balance else "dimension order")
        loads = Loads(np.zeros(nslots, dtype=np.int64), np.zeros(nslots, dtype=np.int64)) if balance else None
        walk(b, lids, None, None, None, pw, [], None, loads, dims, dimt, say)
        if balance:
            bal = balance_section(b, loads, permutations, seed)
    res = delivery_section(b, t, dist is not None)
    res["deadlock"] = deadlock
    res["balance"] = bal
    res["seconds"] = round(time.monotonic() - t0, 3)
    if expect == "hdor":
        res["expect"] = expect_hdor(fabric, tables, b, reference, dimt["checked"], dimt["violations"],
                                    dimt["example"])
        if baseline is not None:
            res["expect"]["dimension_order"]["accepted_on_detours"] = dimt["accepted"]
    if unaffected is not None:
        res["unaffected"] = unaffected
    res["ok"] = bool(delivery_ok(res) and deadlock["free"] is not False and not b.missing_tables
                     and (expect != "hdor" or res["expect"]["ok"]) and (unaffected is None or unaffected["ok"]))
    return res
