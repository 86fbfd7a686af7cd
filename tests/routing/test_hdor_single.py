"""hdor's degraded pass for one failure against a KNS loaded once (ibtool.routing.hdor_single) is
the full degraded pass (hdor.compute(now, baseline=...)) byte for byte: tables, VLs, SL2VL rows,
every pair's path SL, the extra hops and the declines, on every single router-switch cable,
indirect switch, router and switch-switch cable inside a tree of the test KNS (4^2, 3^3, 4^2 with
2-stage trees, 3^2 with doubled cables), pairs of failures, and the cases that split a tree or
cut a router off. `now` is built here as discovery from the SM's node finds it."""

import itertools
import random

import pytest
from hdor_helpers import discovered, kns_with_lids

from ibtool.errors import CheckFailed
from ibtool.routing import hdor
from ibtool.routing.hdor_single import Loaded

SHAPES = {"k4n2": dict(k=4, n=2), "k3n3": dict(k=3, n=3), "k4n2s2": dict(k=4, n=2, s=2),
          "k3n2m2": dict(k=3, n=2, m=2, radix=36), "k4n2h2": dict(k=4, n=2, h=2)}


@pytest.fixture(scope="module", params=list(SHAPES))
def kns(request):
    f = kns_with_lids(**SHAPES[request.param])
    br = hdor.compute(f)
    return request.param, f, br, Loaded(f, br, vls=8)


def same(f, br, kns, nodes=(), links=()):
    """The incremental pass equals the full one (or both decline, for the same reason)."""
    dn, dl = kns.piece(set(nodes), set(links), 0)
    now = discovered(f, dn, dl)
    try:
        full = hdor.compute(now, baseline=(f, br), vls=kns.vls)
    except CheckFailed as e:  # hdor refuses (not a KNS, or declined)
        with pytest.raises(CheckFailed) as got:
            kns.route(nodes, links)
        assert got.value.reason == e.reason
        return "declined"
    one = kns.route(nodes, links)
    assert hdor.compare_tables(full.tables, kns.tables(one)) == []
    assert set(full.tables.lft) == set(kns.tables(one).lft)
    assert one.vls == full.vls
    assert one.sl2vl == full.sl2vl
    assert dict(one.path_sls.expand()) == dict(full.path_sls)
    assert one.extra_hops == full.extra_hops
    # the entries it recomputed are every entry that differs from the fault-free tables
    rows, lids = one.changed
    diff = {(r, lid) for r, x in enumerate(kns.rows) if x not in dn
            for lid in range(one.table.shape[1]) if one.table[r, lid] != kns.t.T0[r, lid]
            and lid in kns.t.owners and kns.t.owners[lid][0] not in dn}
    assert diff <= set(zip(rows.tolist(), lids.tolist()))
    return "routed"


def test_every_single_failure(kns):
    name, f, br, k = kns
    role = f.roles
    cables = [li for li in range(f.num_links) if {role[f.link_a[li]], role[f.link_b[li]]} <= {"router", "switch"}]
    nodes = [x for x in range(f.num_nodes) if role[x] in ("router", "switch") and x != 0]
    got = [same(f, br, k, links=[li]) for li in cables] + [same(f, br, k, nodes=[x]) for x in nodes]
    assert got.count("routed") >= len(got) - 2, got  # a decline is rare, and then the same one


def test_pairs_of_failures(kns):
    name, f, br, k = kns
    role = f.roles
    cables = [li for li in range(f.num_links) if {role[f.link_a[li]], role[f.link_b[li]]} <= {"router", "switch"}]
    switches = [x for x in range(f.num_nodes) if role[x] == "switch"]
    rng = random.Random(7)
    for _ in range(12):
        same(f, br, k, links=rng.sample(cables, 2))
    for a, b in itertools.islice(itertools.combinations(switches, 2), 0, None, 7):
        same(f, br, k, nodes=[a, b])


def test_a_tree_split_in_two_and_a_router_cut_off():
    """4^2 with 2-stage trees: column 3's dimension-1 tree split in two (two components, the second
    indexed after every group) and R[3,3]'s dimension-0 leaf gone; 3^2: a router with every
    switch cable down is cut off with its HCA (no entry anywhere)."""
    f = kns_with_lids(4, 2, s=2)
    br = hdor.compute(f)
    k = Loaded(f, br)
    name = {f.names[x]: x for x in range(f.num_nodes)}
    cut = [li for li in range(f.num_links)
           if {f.names[f.link_a[li]], f.names[f.link_b[li]]} == {"S[1,3,0,0]", "S[1,3,1,1]"}]
    assert same(f, br, k, nodes=[name["S[1,3,1,0]"], name["S[0,3,0,1]"]], links=cut) in ("routed", "declined")
    g = kns_with_lids(3, 2)
    gr = hdor.compute(g)
    r = g.index("R[2,2]")
    links = [li for li in range(g.num_links) if r in (g.link_a[li], g.link_b[li])
             and g.roles[g.link_b[li] if g.link_a[li] == r else g.link_a[li]] == "switch"]
    kg = Loaded(g, gr)
    assert same(g, gr, kg, links=links) == "routed"
    dn, _ = kg.piece(set(), set(links), 0)
    assert {g.names[x] for x in dn} == {"R[2,2]", "H[2,2]"}
