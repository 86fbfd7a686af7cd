"""hdor on a degraded KNS (docs/hdor.md section 6): every single router-switch link failure, every
single indirect switch failure, failed routers and seeded multi-fault cases on KNS 4-ary
2-direct, 3-ary 3-direct and 4-ary 2-direct 2-indirect.

The checks are independent of the implementation: route walks over the tables, physical
reachability by BFS over the degraded fabric, the fault-free walk to decide which routes touch a
failed element, and a (channel, VL) dependency graph built here from the SLs and SL2VL rows the
engine returns (plus `ibtool verify`'s own per-VL check)."""

import random
from collections import deque
from pathlib import Path

import pytest
from hdor_helpers import degrade, kns_with_lids, walk
from support import ibtool, sample

from ibtool.fabric import CA, SWITCH
from ibtool.formats import ibnetdiscover
from ibtool.formats import lft as lftfmt
from ibtool.routing import hdor
from ibtool.verify import routes

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "fixtures/real/ibsim-kns-k3-n2-hdor"
SHAPES = {"k4n2": (4, 2, 1), "k3n3": (3, 3, 1), "k4n2s2": (4, 2, 2)}
VLS = 8  # ibsim's data VLs, and CELLIA's QDR switches'


@pytest.fixture(scope="module", params=list(SHAPES))
def base(request):
    k, n, s = SHAPES[request.param]
    f = kns_with_lids(k, n, s)
    return request.param, f, hdor.compute(f)


def split_tree(f):
    """KNS 4-ary 2-direct 2-indirect with column 3's dimension-1 tree split in two (and R[3,3]'s
    dimension-0 leaf gone): test_a_tree_split_in_two_is_two_groups explains it."""
    name = {f.names[x]: x for x in range(f.num_nodes)}
    cut = [li for li in range(f.num_links)
           if {f.names[f.link_a[li]], f.names[f.link_b[li]]} == {"S[1,3,0,0]", "S[1,3,1,1]"}]
    return degrade(f, nodes=[name["S[1,3,1,0]"], name["S[0,3,0,1]"]], links=cut)


def router_switch_links(f, role=None):
    role = role or f.roles
    return [li for li in range(f.num_links) if {role[f.link_a[li]], role[f.link_b[li]]} == {"router", "switch"}]


def indirect(f):
    return [x for x in range(f.num_nodes) if f.roles[x] == "switch"]


def routers(f):
    return [x for x in range(f.num_nodes) if f.roles[x] == "router"]


def hops(f, tables, start, lid, in_port=None):
    """[(guid, in port, out port)] from switch `start` to the LID; None if it does not arrive."""
    out, x, pin = [], start, in_port
    for _ in range(64):
        port = int(tables.lft[f.guids[x]][lid])
        if port == 255:
            return None
        out.append((f.guids[x], pin, port))
        if port == 0:
            return out
        nx = f.peer(x, port)
        if nx is None:
            return None
        if f.types[nx[0]] != SWITCH:
            return out
        x, pin = nx
    return None


def reachable(g, x):
    """Switches and CA ports reachable from switch x (CAs do not forward)."""
    seen = {x}
    q = deque([x])
    while q:
        u = q.popleft()
        for _, p, _ in g.neighbors(u):
            if p not in seen:
                seen.add(p)
                if g.types[p] == SWITCH:
                    q.append(p)
    return seen


def check(f, r0, g, res):
    """Delivery of every physically connected pair, unaffected routes unchanged, extra hops as
    reported, coordinates kept, VL = violations so far, and an acyclic (channel, VL) graph."""
    owners_g = g.lid_owners()
    # coordinates of surviving devices
    for y in range(g.num_nodes):
        x = f.by_guid(g.guids[y])
        if res.role[y] != "hca" or g.neighbors(y):
            assert res.role[y] == r0.role[x], g.names[y]
            assert res.coords[y] == r0.coords[x], g.names[y]
    # LIDs nobody owns any more (failed routers and their HCAs) have no entry anywhere
    for row in res.tables.lft.values():
        assert all(row[lid] == 255 for lid in range(len(row)) if lid not in owners_g)
    # delivery and unchanged routes, from every switch to every LID
    alive = {(g.guids[a], pa, g.guids[b]) for a in range(g.num_nodes) for pa, b, _ in g.neighbors(a)}
    changed = 0
    for y in range(g.num_nodes):
        if g.types[y] != SWITCH:
            continue
        reach = reachable(g, y)
        x = f.by_guid(g.guids[y])
        for lid, (o, _) in owners_g.items():
            if o not in reach:
                continue
            walk(g, res.tables, y, lid, owners_g)  # raises unless delivered to the right port
            before = hops(f, r0.tables, x, lid)
            intact = before is not None and all(
                port == 0 or (guid, port, f.guids[f.peer(f.by_guid(guid), port)[0]]) in alive
                for guid, _, port in before)
            if intact:
                assert hops(g, res.tables, y, lid) == before, (g.names[y], lid)
            else:
                changed += 1
    # CA-to-CA pairs: extra links, VLs, and the (channel, VL) dependency graph
    srcs = [(lid, c, p) for (c, p), (lid, _) in g.port_lids.items() if g.types[c] == CA and g.peer(c, p)]
    dsts = [lid for lid, (c, p) in owners_g.items() if g.types[c] == CA and g.peer(c, p)]
    dimof = {g.guids[y]: d for y, d in res.dim.items()}
    extra, edges, most, cut = [], {}, 0, 0
    for slid, c, p in srcs:
        y, pin = g.peer(c, p)
        reach = reachable(g, y)
        fc = f.by_guid(g.guids[c])
        x, fpin = f.peer(fc, p)
        for dlid in dsts:
            if owners_g[dlid] == (c, p):
                continue
            if owners_g[dlid][0] not in reach:
                assert (slid, dlid) not in res.path_sls
                cut += 1
                continue
            now, was = hops(g, res.tables, y, dlid, pin), hops(f, r0.tables, x, dlid, fpin)
            assert now is not None
            if now != was:
                extra.append(len(now) - len(was))
            sl = res.path_sls[(slid, dlid)]
            viol, prev = 0, None
            for guid, a, b in now:
                node = g.by_guid(guid)
                ia, ib = g.guids[g.peer(node, a)[0]], g.guids[g.peer(node, b)[0]]
                if res.role[node] == "router" and ia in dimof and ib in dimof and dimof[ib] <= dimof[ia]:
                    viol += 1
                vl = res.sl2vl.get(guid, {}).get((a, b), (0,) * 16)[sl]  # rows not listed: VL 0
                assert vl == viol, (g.names[node], slid, dlid, vl, viol)
                chan = (guid, b, vl)
                if prev is not None:
                    edges.setdefault(prev, set()).add(chan)
                prev = chan
            most = max(most, viol)
    assert res.vls == most + 1 <= VLS
    assert res.extra_hops["detoured"] == len(extra)
    assert res.extra_hops["max"] == max(extra, default=0)
    assert res.extra_hops["mean"] == pytest.approx(sum(extra) / len(extra) if extra else 0.0, abs=1e-3)
    assert acyclic(edges)
    # the verifier's per-VL check agrees
    v = routes.verify(g, res.tables, sl2vl=res.sl2vl, path_sls=res.path_sls, balance=False)
    assert v["deadlock"]["free"] is True, v["deadlock"]["cycle"]
    assert v["deadlock"]["path_sls"]["pairs_without_record"] == cut
    return changed


def acyclic(edges) -> bool:
    state = {}
    for start in edges:
        if start in state:
            continue
        stack = [(start, iter(edges.get(start, ())))]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return False
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(edges.get(nxt, ()))))
    return True


def test_no_fault_is_byte_identical(base):
    _, f, r0 = base
    res = hdor.compute(f, baseline=(f, r0))
    assert hdor.compare_tables(r0.tables, res.tables) == []
    assert res.vls == 1 and res.path_sls is None


def test_real_fixture_fault_free_and_degraded():
    """The C engine's tables under ibsim (real OpenSM output) are what the reference gives with a
    baseline and nothing failed; the same fabric with a cable pulled is routed and checked."""
    f = ibnetdiscover.read(REAL / "ibnetdiscover.out")
    r0 = hdor.compute(f)
    real = lftfmt.read(REAL / "opensm-lfts.dump")
    assert hdor.compare_tables(real, hdor.compute(f, baseline=(f, r0)).tables) == []
    for li in router_switch_links(f, r0.role)[::3]:
        g = degrade(f, links=[li])
        check(f, r0, g, hdor.compute(g, baseline=(f, r0)))


def test_every_router_switch_link(base):
    """Every router-switch cable down alone (`make test`: every 3rd, support.sample)."""
    _, f, r0 = base
    for li in sample(router_switch_links(f), 3):
        g = degrade(f, links=[li])
        res = hdor.compute(g, baseline=(f, r0))
        assert check(f, r0, g, res) > 0, f.names[f.link_a[li]]
        assert res.vls == 2 and res.extra_hops["detoured"] > 0
    head = hdor.dump_lines(res, g)[0]
    assert head.endswith(f" vls=2 detoured={res.extra_hops['detoured']} extra_max={res.extra_hops['max']} "
                         f"extra_mean={res.extra_hops['mean']:.3f}")
    assert " vls=" not in hdor.dump_lines(r0, f)[0]


def test_every_indirect_switch(base):
    """Every indirect switch down alone (`make test`: every 2nd)."""
    _, f, r0 = base
    for x in sample(indirect(f), 2):
        g = degrade(f, nodes=[x])
        check(f, r0, g, hdor.compute(g, baseline=(f, r0)))


def test_failed_router(base):
    _, f, r0 = base
    rs = routers(f)
    for x in (rs[0], rs[len(rs) // 2 + 1]):
        g = degrade(f, nodes=[x])
        res = hdor.compute(g, baseline=(f, r0))
        check(f, r0, g, res)
        assert len(res.routers) == len(rs) - 1


@pytest.mark.parametrize("seed", range(5))
def test_seeded_multi_fault(base, seed):
    _, f, r0 = base
    rng = random.Random(seed)
    inside = [li for li in range(f.num_links) if f.roles[f.link_a[li]] == f.roles[f.link_b[li]] == "switch"]
    links = rng.sample(router_switch_links(f) + inside, 4)
    nodes = rng.sample(indirect(f), 2)
    if seed % 2:
        nodes.append(rng.choice(routers(f)))
    g = degrade(f, nodes=nodes, links=links)
    res = hdor.compute(g, baseline=(f, r0))
    check(f, r0, g, res)


def test_restored_fabric_gives_the_original_tables(base):
    _, f, r0 = base
    g = degrade(f, links=router_switch_links(f)[:1])
    hdor.compute(g, baseline=(f, r0))
    back = degrade(f)  # everything up again
    assert hdor.compare_tables(r0.tables, hdor.compute(back, baseline=(f, r0)).tables) == []


def test_declines_when_the_vls_do_not_suffice(base):
    _, f, r0 = base
    g = degrade(f, links=router_switch_links(f)[:1])
    with pytest.raises(hdor.NotFamily, match=r"the failures need 2 VLs, the ports offer 1"):
        hdor.compute(g, baseline=(f, r0), vls=1)


def test_declines_a_cable_not_in_the_remembered_kns():
    f = kns_with_lids(3, 2)
    r0 = hdor.compute(f)
    li = router_switch_links(f)[0]
    g = degrade(f, links=[li])
    a, b = f.link_a[li], f.link_b[li]
    ga, gb = g.by_guid(f.guids[a]), g.by_guid(f.guids[b])
    # recable the freed router port to the freed switch port of another router's group switch
    other = next(x for x in indirect(f) if x != b)
    free = next(p for p in range(1, f.nports[other] + 1) if f.peer(other, p) is None)
    g.add_link(ga, g.by_guid(f.guids[other]), f.link_pa[li], free)
    with pytest.raises(hdor.NotFamily, match=r"is cabled to .* not as in the KNS"):
        hdor.compute(g, baseline=(f, r0))
    assert gb is not None


def switch_hops(g, a, b):
    """Fewest links between switches a and b over g's working links (CAs do not forward)."""
    dist = {a: 0}
    q = deque([a])
    while q:
        u = q.popleft()
        for _, p, _ in g.neighbors(u):
            if g.types[p] == SWITCH and p not in dist:
                dist[p] = dist[u] + 1
                q.append(p)
    return dist.get(b)


@pytest.mark.parametrize("shape", [(4, 2, 1), (3, 3, 1)], ids=["k4n2", "k3n3"])
def test_single_link_detours_are_shortest(shape):
    """With one router-switch cable down on single-switch groups, every CA-to-CA route is as
    short as the degraded fabric allows (the kept routes do not lengthen any detour)."""
    f = kns_with_lids(*shape)
    r0 = hdor.compute(f)
    for li in sample(router_switch_links(f)[::3], 3):
        g = degrade(f, links=[li])
        res = hdor.compute(g, baseline=(f, r0))
        cas = [(c, p) for (c, p) in g.port_lids if g.types[c] == CA and g.peer(c, p)]
        for c, p in cas:
            y, pin = g.peer(c, p)
            for d, q in cas:
                if (d, q) == (c, p):
                    continue
                t = g.peer(d, q)[0]
                route = hops(g, res.tables, y, g.port_lids[(d, q)][0], pin)
                assert len(route) == switch_hops(g, y, t) + 1, (g.names[c], g.names[d])


def test_parallel_link_failure_stays_on_one_vl():
    """multiplicity 2: a router that loses one of its two links into a group keeps using the other,
    so no route gets longer and no VL is added; LMC 1 spreads both LIDs of a port."""
    for s in (1, 2):
        f = kns_with_lids(4, 2, s, h=1, m=2, lmc=1)
        r0 = hdor.compute(f)
        for li in router_switch_links(f)[::5]:
            g = degrade(f, links=[li])
            res = hdor.compute(g, baseline=(f, r0))
            check(f, r0, g, res)
            assert res.vls == 1 and res.extra_hops["max"] == 0 and res.extra_hops["detoured"] > 0


def test_degraded_without_a_remembered_kns():
    """Without a remembered KNS a missing cable is identified at first sight (docs/hdor.md section
    7): the same tables and SLs as against the remembered KNS, since the cable decides nothing;
    without first sight it is declined as before."""
    f = kns_with_lids(4, 2)
    g = degrade(f, links=router_switch_links(f)[:1])
    with pytest.raises(hdor.NotFamily):
        hdor.compute(g, first_sight=False)
    fs = hdor.compute(g)
    ref = hdor.compute(g, baseline=(f, hdor.compute(f)))
    assert fs.faults["first_sight"] == {"routers": 0, "switches": 0, "cables": 1}
    assert hdor.compare_tables(fs.tables, ref.tables) == [] and fs.path_sls == ref.path_sls
    assert fs.coords == ref.coords and fs.vls == ref.vls == 2


def test_every_link_inside_the_trees():
    """s = 2: every single switch-switch cable inside a dimension's tree (`make test`: every 2nd)."""
    f = kns_with_lids(4, 2, 2)
    r0 = hdor.compute(f)
    inside = [li for li in range(f.num_links) if f.roles[f.link_a[li]] == f.roles[f.link_b[li]] == "switch"]
    assert len(inside) == 8 * 4
    for li in sample(inside, 2):
        g = degrade(f, links=[li])
        res = hdor.compute(g, baseline=(f, r0))
        assert check(f, r0, g, res) > 0


def test_a_moved_lid_recomputes_the_fault_free_tables_an_unknown_node_declines():
    """A LID that moved (a restart that lost guid2lid): the remembered KNS's fault-free tables are
    computed again for the LIDs of now (docs section 7), as a long-running hdor with these LIDs
    from the start would have them; an unknown device is not a fault."""
    f = kns_with_lids(3, 2)
    r0 = hdor.compute(f)
    g = degrade(f, links=router_switch_links(f)[:1])
    (c, p), (_, lmc) = next((k, v) for k, v in g.port_lids.items() if g.types[k[0]] == CA)
    g.port_lids[(c, p)] = (max(g.lid_owners()) + 1, lmc)
    got = hdor.compute(g, baseline=(f, r0))
    f2 = degrade(f)  # the complete KNS with g's LIDs
    f2.port_lids = {(f2.by_guid(g.guids[x]), q): v for (x, q), v in g.port_lids.items()}
    f2.port_lids.update({(y, q): v for (y, q), v in f.port_lids.items() if g.by_guid(f.guids[y]) is None})
    want = hdor.compute(g, baseline=(f2, hdor.compute(f2)))
    assert got.faults["links"] and hdor.compare_tables(got.tables, want.tables) == []
    assert got.path_sls == want.path_sls and got.sl2vl == want.sl2vl
    g = degrade(f, links=router_switch_links(f)[:1])
    g.add_node(CA, "stranger", 1, "hca", guid=0x1234)
    with pytest.raises(hdor.NotFamily, match=r"'stranger' is not in the KNS"):
        hdor.compute(g, baseline=(f, r0))


def test_a_tree_split_in_two_is_two_groups():
    """s = 2: column 3's dimension-1 tree loses a top switch and the other top switch's link to
    leaf 0, so its leaves part; R[3,3] also loses its dimension-0 leaf and can only reach R[2,3],
    through its own half of the tree. Each half gets its own exit (docs/hdor.md section 6)."""
    f = kns_with_lids(4, 2, 2)
    r0 = hdor.compute(f)
    name = {f.names[x]: x for x in range(f.num_nodes)}
    g = split_tree(f)
    res = hdor.compute(g, baseline=(f, r0))
    check(f, r0, g, res)
    rows = res.tables.lft[f.guids[name["R[3,3]"]]]
    lid = f.port_lids[(name["R[0,0]"], 0)][0]
    assert g.names[g.peer(g.by_guid(f.guids[name["R[3,3]"]]), int(rows[lid]))[0]] == "S[1,3,0,1]"


@pytest.mark.ibsim
@pytest.mark.parametrize("args,steps", [
    (("--k", "3", "--n", "2"), ['["R[1,1] 3"]', '["S[0,2]"]', '["R[2,0] 1", "R[0,1] 3"]']),
    (("--k", "4", "--n", "2", "--s", "2", "--radix", "8"), ['["S[1,2,1,0]"]', '["R[3,3] 2"]']),
], ids=["k3n2", "k4n2s2"])
def test_real_fault_steps_under_ibsim(tmp_path, args, steps):
    """Faults injected into a real ibsim through its console while one real OpenSM runs
    (`ibtool sim run --faults`): the reference routes every step's real `ibnetdiscover` against
    step 0's, with the LIDs OpenSM kept, and every check holds."""
    ibtool("topo", "kns", *args, "--out", tmp_path / "plan", check=0)
    scenario = tmp_path / "faults.yaml"
    scenario.write_text("steps:\n" + "".join(f"  - down: {s}\n" for s in steps))
    run = tmp_path / "run"
    ibtool("sim", "run", tmp_path / "plan/topology.net", "--engine", "minhop", "--faults", scenario, "--out", run,
           check=0)
    f = ibnetdiscover.read(run / "step-0/ibnetdiscover.out")
    r0 = hdor.compute(f)
    for n in range(1, len(steps) + 1):
        g = ibnetdiscover.read(run / f"step-{n}/ibnetdiscover.out")
        assert g.num_links < f.num_links
        res = hdor.compute(g, baseline=(f, r0))
        assert res.faults["links"] and check(f, r0, g, res) > 0


def test_a_complete_kns_with_new_lids_is_routed_afresh():
    """Not a degraded KNS (every port has another LID, e.g. after an OpenSM restart) but a
    complete one: routed by sections 1-4, not declined."""
    f = kns_with_lids(3, 2)
    r0 = hdor.compute(f)
    g = degrade(f)
    g.port_lids = {k: (lid + 100, lmc) for k, (lid, lmc) in g.port_lids.items()}
    res = hdor.compute(g, baseline=(f, r0))
    assert hdor.compare_tables(res.tables, hdor.compute(g).tables) == [] and res.vls == 1
