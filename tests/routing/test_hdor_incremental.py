"""The C engine's degraded pass is incremental (issue 39): against the state kept from the passes
before, it recomputes only the LIDs and pairs a failure touches and writes only the table entries
that change. Its results must be byte for byte those of the full degraded pass -- every LID and
every pair looked at, the tables written whole (`Engine(incremental=False)`, the pass as it was
before) -- for every failure, routed one after the other on one loaded fabric as what-if does.

Compared per failure: the decline (code and reason) or else the whole table buffer, the LIDs per
port, the summary (VLs, failed links and nodes, pairs detoured, extra links, highest SL), the
SL2VL rows, the pairs with an SL above 0 and those not delivered, the entries recomputed, the
coordinates dump and which nodes are there. Every single router-switch and switch-switch cable,
indirect switch and router of KNS 4^3 and of 3^3 with s = 2, a sample of 6^3, and random double
failures (what-if's --pairs)."""

from __future__ import annotations

import ctypes
import random

import numpy as np
import pytest
from hdor_helpers import kns_with_lids, shuffled
from test_hdor_c import core, digests  # noqa: F401  (the library built)

from ibtool.fabric import SWITCH
from ibtool.routing import hdor_c
from ibtool.routing.hdor_c import _U8, _U64
from ibtool.routing.lids import assign_lids


def failures(f, every: int = 1, pairs: int = 0, seed: int = 1) -> list[tuple[tuple, tuple]]:
    """(nodes, cable ends) of every single router-switch and switch-switch cable, indirect switch and
    router (every `every`-th of each kind), a few HCA cables and HCAs, and `pairs` random doubles."""
    role = f.roles
    cables = [li for li in range(f.num_links) if {role[f.link_a[li]], role[f.link_b[li]]} <= {"router", "switch"}]
    hca_cables = [li for li in range(f.num_links) if "hca" in (role[f.link_a[li]], role[f.link_b[li]])]
    switches = [x for x in range(f.num_nodes) if role[x] == "switch"]
    routers = [x for x in range(f.num_nodes) if role[x] == "router"]
    hcas = [x for x in range(f.num_nodes) if role[x] == "hca"]

    def end(li):
        return (f.link_a[li], f.link_pa[li]) if li % 2 else (f.link_b[li], f.link_pb[li])
    out = [((), (end(li),)) for li in cables[::every]]
    out += [((x,), ()) for x in switches[::every]] + [((x,), ()) for x in routers[::every]]
    out += [((), (end(li),)) for li in hca_cables[:: max(1, len(hca_cables) // 3)]] + [((hcas[1],), ())]
    rnd = random.Random(seed)
    things = [("link", li) for li in cables] + [("node", x) for x in switches + routers]
    for _ in range(pairs):
        a, b = rnd.sample(things, 2)
        out.append((tuple(x for k, x in (a, b) if k == "node"), tuple(end(li) for k, li in (a, b) if k == "link")))
    return out


def state(e: hdor_c.Engine, res) -> dict:
    """Everything a pass leaves readable in the engine, or its decline."""
    if isinstance(res, hdor_c.Declined):
        return {"declined": (res.code, res.reason)}
    lib, h, f = e._lib, e._h, e.fabric
    nsw = sum(1 for t in f.types if t == SWITCH)
    stride = ctypes.c_uint32(0)
    lft = np.ctypeslib.as_array(lib.hdor_off_lft(h, ctypes.byref(stride)), shape=(nsw * stride.value,))
    paths = np.ctypeslib.as_array(lib.hdor_off_paths(h), shape=(nsw * 256,))
    out = (ctypes.c_uint32 * 13)()
    mean = ctypes.c_double(0)
    lib.hdor_off_summary(h, out, ctypes.byref(mean))
    g, io, vl = _U64(), _U64(), _U8()
    n = lib.hdor_off_sl2vl(h, ctypes.byref(g), ctypes.byref(io), ctypes.byref(vl))
    rows = (np.ctypeslib.as_array(g, shape=(n,)).tobytes(), np.ctypeslib.as_array(io, shape=(n,)).tobytes(),
            np.ctypeslib.as_array(vl, shape=(16 * n,)).tobytes()) if n else ()
    here = np.zeros(f.num_nodes, dtype=np.uint8)
    lib.hdor_off_here(h, here.ctypes.data_as(_U8))
    sls = tuple(a.tobytes() for a in res.detour_sls) if res.detour_sls is not None else None
    return {"lft": lft.tobytes(), "paths": paths.tobytes(), "summary": (tuple(out), mean.value), "sl2vl": rows,
            "detour_sls": sls, "changed": tuple(a.tobytes() for a in res.changed), "dump": res.dump_lines,
            "faults": res.faults, "extra": res.extra_hops, "vls": res.vls, "lids": res.lids}


def routed(e: hdor_c.Engine, nodes, links, sm) -> dict:
    try:
        return state(e, e.route_failures(nodes, links, sm=sm))
    except hdor_c.Declined as x:
        return state(e, x)


def compare(f, sets, sm: int, vls: int = 8) -> dict:
    """Each failure set routed by an incremental engine and by a full one, both with f loaded
    once: the first difference fails; returns how many were routed and how many declined."""
    counts = {"routed": 0, "declined": 0, "changed": 0}
    with hdor_c.Engine(vls) as inc, hdor_c.Engine(vls, incremental=False) as full:
        for e in (inc, full):
            e.load(f)
            e.route()
        for nodes, links in sets:
            a, b = routed(inc, nodes, links, sm), routed(full, nodes, links, sm)
            diff = [k for k in a if a[k] != b.get(k)] if a.keys() == b.keys() else ["declined"]
            assert not diff, (nodes, links, diff, a.get("declined"), b.get("declined"))
            counts["declined" if "declined" in a else "routed"] += 1
            counts["changed"] += len(np.frombuffer(a.get("changed", (b"",))[0], np.uint32))
        # repaired, both route the complete fabric as they did first
        assert state(inc, inc.route()) == state(full, full.route())
    return counts


def sm_of(f) -> int:
    """The SM's node: the last HCA (what its node no longer reaches goes with a failure)."""
    return max(x for x in range(f.num_nodes) if f.roles[x] == "hca")


def dealt(k, n, s=1, h=1):
    """The KNS with its nodes, ports and GUIDs dealt anew, then its LIDs: a router's HCAs are not
    in its order, so the pairs of one destination come from switches in another order than their
    source LIDs (the path SLs are given in source LID order)."""
    g, _ = shuffled(kns_with_lids(k, n, s, h=h), seed=5, guids=True)
    assign_lids(g)
    return g


CASES = {"k4n3": lambda: kns_with_lids(4, 3), "k4n3-dealt": lambda: dealt(4, 3),
         "k3n3s2": lambda: kns_with_lids(3, 3, 2), "k3n3s2h2-dealt": lambda: dealt(3, 3, 2, h=2)}


@pytest.mark.parametrize("case", list(CASES))
def test_every_single_failure_as_the_full_pass(case):
    f = CASES[case]()
    c = compare(f, failures(f, pairs=12), sm_of(f))
    assert c["routed"] > 150 and c["changed"] > 10000, c


def test_a_sample_of_kns_6_3_as_the_full_pass():
    f = dealt(6, 3)
    c = compare(f, failures(f, every=7, pairs=6, seed=3), sm_of(f))
    assert c["routed"] > 100, c


def test_declines_as_the_full_pass():
    """With ports of one VL every detour that needs a second one declines (HD31), in the middle of
    failures that route: the same declines, and the passes after them the same."""
    f = kns_with_lids(4, 2, 2, h=1, m=2)
    c = compare(f, failures(f, pairs=8), sm_of(f), vls=1)
    assert c["declined"] > 5 and c["routed"] > 5, c


def test_a_described_kns_as_the_full_pass(tmp_path):
    """A KNS from a description whose fabric comes up with a router missing: the fault-free tables
    are made for the LIDs of then, without routes to the missing router's LIDs (they keep them
    while no other port has them); when it comes back every switch's entry for them is affected.
    Then failures of the complete fabric against that KNS. Each step as the full pass."""
    from hdor_helpers import degrade

    from ibtool.formats import hdor_conf
    from ibtool.routing import hdor, hdor_description

    f = kns_with_lids(4, 2, 2)
    desc = tmp_path / "hdor.conf"
    hdor_conf.write(hdor_description.describe(f, hdor.compute(f)), desc)
    rtr = [x for x in range(f.num_nodes) if f.roles[x] == "router"]
    sets = failures(f, every=5, pairs=3)
    with hdor_c.Engine() as inc, hdor_c.Engine(incremental=False) as full:
        got = {}
        for name, e in (("inc", inc), ("full", full)):
            e.describe(desc)
            steps = []
            for g in (degrade(f, nodes=[rtr[5]]), f, degrade(f, nodes=[rtr[2], rtr[7]]), f):
                e.load(g)
                steps.append(state(e, e.route()))
            steps += [routed(e, nodes, links, sm_of(f)) for nodes, links in sets]
            got[name] = steps
        for i, (a, b) in enumerate(zip(got["inc"], got["full"])):
            assert a == b, (i, [k for k in a if a[k] != b.get(k)])
        assert "declined" not in got["inc"][1] and got["inc"][1]["summary"][0][0] == 2  # (degraded: nothing failed)


def test_incremental_passes_as_a_fresh_engine():
    """The kept state is no part of the answer: each failure set of a sequence routed by a new
    engine (the complete pass, then that set) gives the same digests as in the sequence."""
    f = kns_with_lids(4, 2, 2)
    sm = sm_of(f)
    sets = failures(f, every=3, pairs=4)
    with hdor_c.Engine() as e:
        e.load(f)
        e.route()
        for nodes, links in sets:
            try:
                got = digests(e.route_failures(nodes, links, sm=sm))
            except hdor_c.Declined as x:
                got = (x.code, x.reason)
            with hdor_c.Engine() as fresh:
                fresh.load(f)
                fresh.route()
                try:
                    want = digests(fresh.route_failures(nodes, links, sm=sm))
                except hdor_c.Declined as x:
                    want = (x.code, x.reason)
            assert got == want, (nodes, links)


def test_changed_entries_are_the_entries_that_differ():
    """`changed` lists the recomputed entries: every entry of a switch there that differs from the
    fault-free table is one of them, or belongs to a LID whose port is gone."""
    f = kns_with_lids(4, 3)
    with hdor_c.Engine() as e:
        e.load(f)
        base = e.route().tables
        for nodes, links in failures(f, every=17):
            r = e.route_failures(nodes, links)
            t = r.tables
            gone = set(range(1, max(lid for lid, _ in f.port_lids.values()) + 2)) - {
                d for (x, p), (lid, lmc) in f.port_lids.items() for d in range(lid, lid + (1 << lmc))
                if r.role[x] != "hca" or x in r.hcas}
            listed = set(zip(r.changed[0].tolist(), r.changed[1].tolist()))
            for x in range(f.num_nodes):
                g = f.guids[x]
                if g not in t.lft:
                    continue
                for lid in np.nonzero(t.lft[g] != base.lft[g][:len(t.lft[g])])[0].tolist():
                    assert (x, lid) in listed or lid in gone, (nodes, links, x, lid)
            assert all(f.types[x] == SWITCH for x in r.changed[0].tolist())


def test_results_held_keep_their_own_tables_and_dump_false():
    """A result still held when the next failure set is routed keeps its tables (copied out of the
    engine then), and one dropped costs nothing; `dump=False` gives the same tables, SL2VL rows and
    SLs without a coordinates dump."""
    f = kns_with_lids(4, 2, 2)
    sets = failures(f, every=9)
    with hdor_c.Engine() as e:
        e.load(f)
        e.route()
        held = [e.route_failures(nodes, links) for nodes, links in sets]  # each read after the last pass
        lean = e.route_failures(*sets[0], dump=False)
        assert lean.dump_lines == [] and lean.role == ["hca"] * f.num_nodes
        assert (tables_of(lean), lean.sl2vl) == (tables_of(held[0]), held[0].sl2vl)
        assert [a.tobytes() for a in lean.detour_sls] == [a.tobytes() for a in held[0].detour_sls]
    for (nodes, links), r in zip(sets, held):
        with hdor_c.Engine() as fresh:
            fresh.load(f)
            fresh.route()
            assert digests(r) == digests(fresh.route_failures(nodes, links)), (nodes, links)


def tables_of(r) -> dict:
    return {g: row.tobytes() for g, row in r.tables.lft.items()}
