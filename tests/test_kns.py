import pytest

from ibtool.errors import InputError
from ibtool.topologies.kns import kns, tree_arity


def expected_counts(k, n, s, h, m):
    routers = k ** n
    lines = n * k ** (n - 1)
    if s == 1:
        per_line_switches, per_line_links = 1, 0
    else:
        a = tree_arity(k, s)
        per_line_switches = s * a ** (s - 1)
        per_line_links = (s - 1) * a ** (s - 1) * a
    switches = routers + lines * per_line_switches
    links = h * routers + n * routers * m + lines * per_line_links
    return routers, h * routers, switches, links


@pytest.mark.parametrize("k,n,s,h,m,radix", [
    (6, 2, 1, 1, 1, 8),    # CELLIA
    (3, 3, 1, 1, 1, 8),
    (4, 2, 1, 1, 1, 36),
    (4, 3, 1, 2, 2, 36),
    (5, 1, 1, 3, 1, 8),
    (8, 2, 2, 1, 1, 8),    # each line a 2-stage tree of arity 3
    (16, 2, 2, 2, 2, 16),
    (27, 1, 3, 1, 1, 8),   # a 3-stage tree of arity 3
])
def test_counts(k, n, s, h, m, radix):
    f = kns(k, n, s=s, hcas_per_router=h, multiplicity=m, radix=radix)
    routers, hcas, switches, links = expected_counts(k, n, s, h, m)
    assert f.count(role="router") == routers
    assert f.count(role="hca") == hcas
    assert f.count(kind=2) == switches
    assert f.num_links == links


def test_paper_counts():
    cellia = kns(6, 2, radix=8)
    assert (cellia.count(role="hca"), cellia.count(role="router"), cellia.count(role="switch")) == (36, 36, 12)
    k3 = kns(3, 3, radix=8)
    assert (k3.count(role="router"), k3.count(role="switch")) == (27, 27)


def test_paper_labels():
    """Paper 000 3.2.3: a router linked to switches [0,4] and [1,2] is router [4,2]."""
    f = kns(6, 2, radix=8)
    r = f.index("R[4,2]")
    switches = {f.names[b] for _, b, _ in f.neighbors(r) if f.roles[b] == "switch"}
    assert switches == {"S[0,4]", "S[1,2]"}
    hcas = [f.names[b] for _, b, _ in f.neighbors(r) if f.roles[b] == "hca"]
    assert hcas == ["H[4,2]"]
    # switch [0,0] links routers [0,0]..[0,5] in ascending order of its ports
    s00 = f.index("S[0,0]")
    assert [f.names[b] for _, b, _ in f.neighbors(s00)] == [f"R[0,{y}]" for y in range(6)]


def test_every_line_is_one_indirect_network():
    f = kns(4, 3, radix=36)
    for i in range(f.num_nodes):
        if f.roles[i] != "switch":
            continue
        d = f.labels[i]["dim"]
        coords = [f.labels[b]["coords"] for _, b, _ in f.neighbors(i)]
        axis = 3 - 1 - d
        assert sorted(c[axis] for c in coords) == [0, 1, 2, 3]
        assert len({c[:axis] + c[axis + 1:] for c in coords}) == 1


def test_parallel_links_and_multiple_hcas():
    f = kns(4, 2, hcas_per_router=2, multiplicity=3, radix=36)
    r = f.index("R[1,2]")
    nb = f.neighbors(r)
    assert [f.names[b] for p, b, _ in nb if p <= 2] == ["H[1,2]-0", "H[1,2]-1"]
    to_switch = [(p, f.names[b]) for p, b, _ in nb if p > 2]
    assert to_switch == [(3, "S[0,1]"), (4, "S[0,1]"), (5, "S[0,1]"), (6, "S[1,2]"), (7, "S[1,2]"), (8, "S[1,2]")]


def test_multistage_tree_connects_each_line():
    f = kns(8, 2, s=2, radix=8)
    # every leaf of line (d=0, p=0) reaches all 8 routers of that line within the tree
    leaves = [i for i in range(f.num_nodes) if f.names[i].startswith("S[0,0,0,")]
    assert len(leaves) == 3
    seen, stack = set(), list(leaves)
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        for _, b, _ in f.neighbors(x):
            if f.roles[b] == "switch":
                stack.append(b)
    routers = {f.names[b] for x in seen for _, b, _ in f.neighbors(x) if f.roles[b] == "router"}
    assert routers == {f"R[0,{y}]" for y in range(8)}


@pytest.mark.parametrize("kw,needle", [
    (dict(k=6, n=2, radix=5), "switch S[0,0] needs 6 ports"),
    (dict(k=4, n=3, hcas_per_router=4, multiplicity=2, radix=8), "router R[0,0,0] needs 10 ports"),
    (dict(k=16, n=2, s=2, multiplicity=2, radix=8), "leaf switch"),
    (dict(k=1, n=2), "--k must be >= 2"),
    (dict(k=4, n=0), "--n must be >= 1"),
    (dict(k=4, n=2, s=3), "more stages"),
    (dict(k=4, n=2, radix=300), "--radix must be <= 254"),
])
def test_refusals(kw, needle):
    with pytest.raises(InputError) as e:
        kns(**kw)
    assert needle in str(e.value)


def test_guids_are_deterministic_and_unique():
    a, b = kns(4, 3, radix=36), kns(4, 3, radix=36)
    assert a.guids == b.guids
    assert len(set(a.guids)) == a.num_nodes
