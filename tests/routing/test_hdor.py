"""hdor Python reference (docs/hdor.md): identification, coordinates, tables, spread, declines."""

import itertools
import random

import numpy as np
import pytest

from hdor_helpers import kns_with_lids, oracle, rebuild, shuffled, switch_dist, walk
from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats import ibnetdiscover
from ibtool.formats.lft import Tables
from ibtool.routing import hdor
from ibtool.routing.lids import assign_lids
from ibtool.topologies.kns import kns, tree_arity

# (k, n, s, hcas per router, multiplicity, radix)
SHAPES = [
    (4, 2, 1, 1, 1, 36),
    (6, 2, 1, 1, 1, 8),     # CELLIA
    (3, 3, 1, 1, 1, 8),
    (4, 3, 1, 2, 2, 36),    # the 4-ary 3-direct, 2 HCAs, doubled links
    (2, 3, 1, 1, 1, 8),
    (5, 1, 1, 2, 1, 8),
    (4, 2, 2, 1, 1, 8),     # 2-stage trees of arity 2
    (6, 2, 2, 1, 2, 12),    # arity 3, one leaf without routers, doubled links
    (8, 2, 3, 1, 1, 8),     # 3-stage trees of arity 2
]
IDS = [f"k{k}n{n}s{s}h{h}m{m}" for k, n, s, h, m, _ in SHAPES]


def fabric_of(shape, lmc=0):
    k, n, s, h, m, radix = shape
    return kns_with_lids(k, n, s, h, m, radix, lmc)


@pytest.fixture(scope="module", params=SHAPES, ids=IDS)
def routed(request):
    f = fabric_of(request.param)
    return request.param, f, hdor.compute(f)


def test_counts_and_coordinates(routed):
    (k, n, s, h, m, _), f, r = routed
    assert (r.k, r.n, r.s) == (k, n, s)
    a = tree_arity(k, s) if s > 1 else 1
    per_group = 1 if s == 1 else s * a ** (s - 1)
    assert len(r.routers) == k ** n and len(r.hcas) == h * k ** n
    assert len(r.switches) == n * k ** (n - 1) * per_group
    assert len(r.groups) == n * k ** (n - 1)
    assert r.lids == len(f.lid_owners())
    # The builder's GUIDs grow in its node order (R[0..0] first, dimension 0's switches first),
    # so docs/hdor.md's GUID-determined labelling is exactly the builder's labels.
    for x in range(f.num_nodes):
        lab = f.labels[x]
        assert r.role[x] == f.roles[x]
        if f.roles[x] in ("router", "hca"):
            assert r.coords[x] == tuple(lab["coords"]), f.names[x]
        else:
            assert r.dim[x] == lab["dim"], f.names[x]
            assert r.coords[x] == tuple(c for c in lab["coords"] if c is not None), f.names[x]


def test_tables_match_literal_spec_oracle(routed):
    """The vectorised fill equals a slow per-(switch, LID) reading of section 4, entry by entry."""
    _, f, r = routed
    want = oracle(f, r)
    assert set(want) == set(r.tables.lft)
    for g, row in want.items():
        got = r.tables.lft[g]
        bad = np.flatnonzero(got != row)
        assert len(bad) == 0, (r.tables.names[g], [(int(x), int(got[x]), int(row[x])) for x in bad[:5]])


def test_tables_shape(routed):
    _, f, r = routed
    top = max(f.lid_owners())
    assert len(r.tables.lft) == f.count(kind=SWITCH)
    for g, row in r.tables.lft.items():
        assert row.dtype == np.uint8 and len(row) == top + 1
        assert row[0] == 255
        assert (row[list(f.lid_owners())] != 255).all()


def test_every_route_delivered_minimal_and_in_dimension_order(routed):
    (k, n, s, h, m, _), f, r = routed
    owners = f.lid_owners()
    D = switch_dist(f)
    hca_lids = [L for L, (node, _) in owners.items() if f.types[node] == CA]
    starts = {}  # HCA port LID -> its router
    for L in hca_lids:
        node, port = owners[L]
        starts[L] = f.peer(node, port)[0]
    coords = r.coords
    for src in set(starts.values()):
        for L in hca_lids:
            path = walk(f, r.tables, src, L, owners)
            dst_router = path[-2]
            assert dst_router == starts[L]
            # minimal: switch hops equal the fabric's shortest switch path
            assert len(path) - 2 == D[src, dst_router], (f.names[src], L)
            # dimension order: consecutive routers differ in one dimension, dimensions ascending
            rs = [x for x in path if r.role[x] == "router"]
            dims = []
            for a, b in zip(rs, rs[1:]):
                diff = [n - 1 - i for i, (u, v) in enumerate(zip(coords[a], coords[b])) if u != v]
                assert len(diff) == 1, ([f.names[x] for x in path])
                dims.append(diff[0])
            assert dims == sorted(set(dims)), [f.names[x] for x in path]
    # every switch reaches every LID (routers, switches, HCAs) minimally
    for w in r.routers + r.switches:
        for L, (node, port) in owners.items():
            path = walk(f, r.tables, w, L, owners)
            if f.types[node] == CA:
                assert len(path) - 2 == D[w, path[-2]]
            else:
                assert len(path) - 1 == D[w, node], (f.names[w], f.names[node])


def test_parallel_links_spread_evenly(routed):
    (k, n, s, h, m, _), f, r = routed
    if m == 1:
        assert r.spread == {}
        return
    assert len(r.spread) == n * k ** n
    for (router, d), per in r.spread.items():
        assert len(per) == m
        row = r.tables.lft[f.guids[router]]
        for p, c in per.items():
            assert c == int((row == p).sum())
        assert max(per.values()) - min(per.values()) <= 1, (f.names[router], d, per)
        assert min(per.values()) > 0
    assert r.spread_summary()["max_imbalance"] <= 1
    # and the other end: a switch's parallel links to one router share the LIDs routed to it
    for w in r.switches:
        row = r.tables.lft[f.guids[w]]
        by_router = {}
        for port, p, _ in f.neighbors(w):
            if r.role[p] == "router":
                by_router.setdefault(p, []).append(int((row == port).sum()))
        for counts in by_router.values():
            assert len(counts) == m and max(counts) - min(counts) <= 1, (f.names[w], counts)


def test_lmc_routes_every_lid_of_a_range():
    f = kns_with_lids(4, 2, h=1, m=2, lmc=1)
    r = hdor.compute(f)
    owners = f.lid_owners()
    assert r.lids == len(owners) == 2 * (16 + 8 + 16)
    want = oracle(f, r)
    for g, row in want.items():
        assert (r.tables.lft[g] == row).all()
    for w in r.routers:
        for L in owners:
            walk(f, r.tables, w, L, owners)
    # both LIDs of one HCA port leave a router by different parallel links
    h00 = f.index("H[3,3]")
    base = f.port_lids[(h00, 1)][0]
    row = r.tables.lft[f.guids[f.index("R[0,0]")]]
    assert row[base] != row[base + 1]


@pytest.mark.parametrize("shape", [SHAPES[0], SHAPES[3], SHAPES[7]], ids=[IDS[0], IDS[3], IDS[7]])
def test_independent_of_port_and_node_order(tmp_path, shape):
    """Shuffle the node records and renumber every port: same coordinates, the same next hops."""
    f = fabric_of(shape)
    r = hdor.compute(f)
    g, port_map = shuffled(f, seed=7)
    ibnetdiscover.write(g, tmp_path / "shuffled.net")
    g = ibnetdiscover.read(tmp_path / "shuffled.net")
    assign_lids(g)  # by GUID: the same LIDs as f
    r2 = hdor.compute(g)
    for guid, row in oracle(g, r2).items():  # spreading follows the new port numbers
        assert (r2.tables.lft[guid] == row).all()
    by_name = {f.names[i]: i for i in range(f.num_nodes)}
    assert g.num_nodes == f.num_nodes
    for j in range(g.num_nodes):
        i = by_name[g.names[j]]
        assert r2.coords[j] == r.coords[i] and r2.role[j] == r.role[i]
        assert r2.dim.get(j) == r.dim.get(i)
    assert f.lid_owners() == {L: (by_name[g.names[x]], p and next(q for q, v in port_map[by_name[g.names[x]]].items()
                                                                   if v == p))
                              for L, (x, p) in g.lid_owners().items()}
    m, s = shape[4], shape[2]
    D = switch_dist(f)
    owners = f.lid_owners()
    tgt = {L: (x if f.types[x] == SWITCH else f.peer(x, p)[0]) for L, (x, p) in owners.items()}
    for j in range(g.num_nodes):
        if g.types[j] != SWITCH:
            continue
        i = by_name[g.names[j]]
        row1, row2 = r.tables.lft[f.guids[i]], r2.tables.lft[g.guids[j]]
        assert np.array_equal(row1 == 0, row2 == 0)
        hop1 = [f.peer(i, int(p))[0] if p not in (0, 255) else -int(p) for p in row1]
        hop2 = [by_name[g.names[g.peer(j, int(p))[0]]] if p not in (0, 255) else -int(p) for p in row2]
        if m == 1:
            assert np.array_equal(row2, [port_map[i][int(p)] if p not in (0, 255) else p for p in row1])
        if s == 1:
            assert hop1 == hop2, f.names[i]
        else:  # equal up-ports are taken in port order, so only the distance left must agree
            for L in owners:
                assert (hop1[L] == hop2[L] if hop1[L] < 0 else D[hop1[L], tgt[L]] == D[hop2[L], tgt[L]]), (f.names[i], L)


def test_guid_relabelling_gives_a_hamming_automorphism():
    """New GUIDs change which router is [0,0] and how axes are numbered, but the coordinates stay a
    KNS labelling: they map to the planned ones by a dimension permutation and per-axis relabelling."""
    f = fabric_of((4, 3, 1, 1, 1, 36))
    g, _ = shuffled(f, seed=3, ports=False, guids=True)
    assign_lids(g)
    r = hdor.compute(g)
    n, k = 3, 4
    planned = {g.names[x]: g.labels[x]["coords"] for x in r.routers}
    found = {g.names[x]: r.coords[x] for x in r.routers}
    # which planned axis becomes which found axis: the one whose values determine it
    perm = {}
    for fa in range(n):
        for pa in range(n):
            ok = all(len({found[a][fa] for a in planned if planned[a][pa] == v}) == 1 for v in range(k))
            if ok:
                perm[fa] = pa
    assert sorted(perm.values()) == list(range(n))
    for fa, pa in perm.items():
        relabel = {planned[a][pa]: found[a][fa] for a in planned}
        assert sorted(relabel.values()) == list(range(k))
    assert sorted(found.values()) == list(itertools.product(range(k), repeat=n))
    owners = g.lid_owners()
    for w in r.routers[:8]:
        for L in owners:
            walk(g, r.tables, w, L, owners)


# ------------------------------------------------------------------------------- declines

def fat_tree():
    f = Fabric("fat-tree")
    spines = [f.add_switch(f"spine{i}", 8) for i in range(2)]
    for j in range(4):
        leaf = f.add_switch(f"leaf{j}", 8)
        for sp in spines:
            f.add_link(leaf, sp)
        for x in range(2):
            f.add_link(leaf, f.add_hca(f"h{j}-{x}"))
    return f


def declined(f: Fabric, first_sight: bool = False) -> hdor.NotFamily:
    """The NotFamily hdor raises for `f` (LIDs assigned first) as a complete KNS (sections 1-3; with
    first_sight, also at first sight, section 7); fails the test when hdor routes it."""
    assign_lids(f)
    with pytest.raises(hdor.NotFamily) as e:
        hdor.compute(f, first_sight=first_sight)
    return e.value


def test_declines_fat_tree():
    e = declined(fat_tree(), first_sight=True)
    assert "k^n = 16 routers; found 4" in e.reason and "share routers" in e.reason  # at first sight too
    assert str(e).startswith("hdor: not a KNS fabric: ") and (e.routing, e.family) == ("hdor", "KNS")
    assert e.exit_code == 1 and "\n" not in str(e)


def test_declines_missing_router_switch_link():
    f = kns(4, 2)
    r12, s = f.index("R[1,2]"), f.index("S[1,2]")
    (li,) = [i for i in range(f.num_links) if {f.link_a[i], f.link_b[i]} == {r12, s}]
    reason = declined(rebuild(f, drop_links=[li])).reason
    assert "router 0x" in reason and "'R[1,2]' is in 1 group(s), others in 2" in reason


def test_declines_missing_router():
    f = kns(4, 2)
    reason = declined(rebuild(f, drop_nodes=[f.index("R[1,1]"), f.index("H[1,1]")])).reason
    assert "has 3 member router(s), others 4" in reason
    assert "'S[0,1]'" in reason or "'S[1,1]'" in reason


def test_declines_hca_to_hca_and_lonely_switch():
    f = Fabric("pair")
    a, b = f.add_hca("a"), f.add_hca("b")
    f.add_link(a, b)
    assert "cabled to another HCA" in declined(f).reason
    f = Fabric("star")
    s = f.add_switch("sw", 8)
    for i in range(3):
        f.add_link(s, f.add_hca(f"h{i}"))
    assert "'sw' is linked to no indirect switch" in declined(f).reason


def test_declines_groups_that_are_not_a_grid():
    """Right counts (9 routers, 6 groups of 3, 2 groups each) but the second family of groups is not
    transversal to the first: no consistent coordinates."""
    f = Fabric("twisted")
    R = [f.add_switch(f"R{i}", 8) for i in range(9)]
    for i, x in enumerate(R):
        f.add_link(x, f.add_hca(f"H{i}"))
    for gi, members in enumerate([(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 1, 3), (2, 4, 6), (5, 7, 8)]):
        s = f.add_switch(f"S{gi}", 8)
        for m in members:
            f.add_link(R[m], s)
    reason = declined(f, first_sight=True).reason
    assert "dimension" in reason or "hyperplane" in reason


def test_declines_infiniband_router_nodes():
    f = kns(3, 2)
    f.add_node(3, "ib-router", 2, "router")
    assert "'ib-router' is neither a switch nor a CA" in declined(f).reason


def test_switches_without_lids_still_route_every_hca():
    f = kns_with_lids(3, 2)
    for key in [key for key in f.port_lids if f.types[key[0]] == SWITCH]:
        del f.port_lids[key]
    r = hdor.compute(f)
    owners = f.lid_owners()
    assert r.lids == len(owners) == 9
    want = oracle(f, r)
    for g, row in want.items():
        assert (r.tables.lft[g] == row).all()
    for w in r.routers + r.switches:
        for L in owners:
            walk(f, r.tables, w, L, owners)


def test_plan_without_lids_is_an_input_error():
    with pytest.raises(InputError, match="no LIDs"):
        hdor.compute(kns(3, 2))


# ------------------------------------------------------------------------------- outputs

def test_dump_format(tmp_path):
    f = fabric_of((4, 2, 1, 1, 2, 36))
    r = hdor.compute(f)
    hdor.write_dump(r, f, tmp_path / "opensm-hdor.dump")
    text = (tmp_path / "opensm-hdor.dump").read_text()
    assert text.endswith("\n")
    lines = text.splitlines()
    assert lines[0] == "# hdor k=4 n=2 routers=16 switches=8 hcas=16 lids=40"
    assert lines[1] == f'router 0x{f.guids[f.index("R[0,0]")]:016x} [0,0] "R[0,0]"'
    assert lines[17] == f'switch 0x{f.guids[f.index("S[0,0]")]:016x} dim=0 [0] "S[0,0]"'
    assert lines[25] == f'hca    0x{f.guids[f.index("H[0,0]")]:016x} [0,0] "H[0,0]"'
    roles = [ln.split()[0] for ln in lines[1:]]
    assert roles == ["router"] * 16 + ["switch"] * 8 + ["hca"] * 16 + ["spread"] * 32
    spread = lines[41:]
    r00 = f.guids[f.index("R[0,0]")]
    # R[0,0]: port 1 HCA, ports 2,3 to its dimension-0 switch, ports 4,5 to dimension 1
    row = r.tables.lft[r00]
    c = [int((row == p).sum()) for p in range(6)]
    assert spread[0] == f"spread 0x{r00:016x} dim=0 ports=2:{c[2]},3:{c[3]}"
    assert spread[1] == f"spread 0x{r00:016x} dim=1 ports=4:{c[4]},5:{c[5]}"
    assert abs(c[2] - c[3]) <= 1 and abs(c[4] - c[5]) <= 1
    guids = [int(ln.split()[1], 16) for ln in spread]
    assert guids == sorted(guids)


def test_dump_n1_switch_has_empty_coordinates():
    f = fabric_of((3, 1, 1, 1, 1, 8))
    r = hdor.compute(f)
    lines = hdor.dump_lines(r, f)
    assert f'switch 0x{f.guids[f.index("S[0,0]")]:016x} dim=0 [] "S[0,0]"' in lines
    assert f'router 0x{f.guids[f.index("R[2]")]:016x} [2] "R[2]"' in lines


def test_compare_tables():
    a = Tables({1: np.array([255, 1, 2, 3], np.uint8), 2: np.array([255, 0], np.uint8)}, {1: "x", 2: "y"})
    b = Tables({1: np.array([255, 1, 5, 3, 255], np.uint8), 3: np.array([255, 0], np.uint8)}, {1: "x", 3: "z"})
    assert hdor.compare_tables(a, a) == []
    d = hdor.compare_tables(a, b)
    assert len(d) == 3
    assert "only in the first" in d[0] and "'y'" in d[0]
    assert "only in the second" in d[1] and "'z'" in d[1]
    assert "1 LID(s) differ" in d[2] and "LID 0x0002: 2 vs 5" in d[2]
    # a longer array with 255 past the other's end is equal
    c = Tables({1: np.array([255, 1, 2, 3, 255, 255], np.uint8), 2: np.array([255, 0], np.uint8)})
    assert hdor.compare_tables(a, c) == []


def test_assign_lids():
    f = kns(3, 2)
    top = assign_lids(f, lmc=2)
    sw = sorted((i for i in range(f.num_nodes) if f.types[i] == SWITCH), key=lambda i: f.guids[i])
    assert [f.port_lids[(i, 0)] for i in sw[:2]] == [(4, 2), (8, 2)]
    owners = f.lid_owners()
    assert len(owners) == 4 * (f.num_nodes) and max(owners) == top
    with pytest.raises(InputError):
        assign_lids(f, lmc=8)


@pytest.mark.slow
def test_kns_16_ary_3_direct_in_seconds():
    """4,864 switches, 8,960 LIDs: the whole computation in a few seconds of CPU (about 1 s here
    unloaded; the bound is generous for a shared machine), and sampled routes delivered minimally."""
    import time

    f = kns_with_lids(16, 3)
    t0 = time.process_time()
    r = hdor.compute(f)
    cpu = time.process_time() - t0
    assert cpu < 15, cpu
    assert (r.k, r.n, r.s, len(r.routers), len(r.switches), r.lids) == (16, 3, 1, 4096, 768, 8960)
    owners = f.lid_owners()
    rnd = random.Random(1)
    lids = rnd.sample(sorted(owners), 300)
    for w in rnd.sample(r.routers + r.switches, 40):
        for L in lids:
            path = walk(f, r.tables, w, L, owners)
            node = owners[L][0]
            dst = path[-2] if f.types[node] == CA else node
            # KNS distances from coordinates: 2 hops per differing dimension between routers
            if r.role[w] == "router" and r.role[dst] == "router":
                hamming = sum(a != b for a, b in zip(r.coords[w], r.coords[dst]))
                assert len(path) - 1 - (f.types[node] == CA) == 2 * hamming
