"""The Python reference's routing output on the test fabrics and fault steps equals what it gave
before issue 28 sped it up (fixtures/hdor/table-digests.json, tests/hdor_digests.py): tables,
coordinates dump, SL2VL rows and path SLs, digest by digest.

The fabrics are those of tests/routing/test_hdor.py and test_hdor_faults.py (the KNS builder with
tests' LIDs), their fault steps (every router-switch cable, every indirect switch, routers,
seeded multi-faults, links inside trees, a split tree, parallel links with LMC 1), the random
multi-fault scenarios of tests/test_hdor_fault_matrix.py, and the real ibsim fixture. The C
engine's digests are asserted where the ibsim tests run it (tests/plugin)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hdor_digests import check, of_result, of_tables
from hdor_helpers import degrade, kns_with_lids, rebuild, shuffled
from test_hdor import SHAPES
from test_hdor_faults import indirect, router_switch_links, routers, split_tree

from ibtool.fabric import SWITCH
from ibtool.formats import ibnetdiscover, lft
from ibtool.routing import hdor
from ibtool.routing.lids import assign_lids
from ibtool.sim import faults
from ibtool.topologies.kns import kns

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "fixtures/real/ibsim-kns-k3-n2-hdor"
FAULT_SHAPES = {"k4n2": (4, 2, 1), "k3n3": (3, 3, 1), "k4n2s2": (4, 2, 2)}


def sid(shape) -> str:
    k, n, s, h, m, radix = shape
    return f"k{k}n{n}s{s}h{h}m{m}r{radix}"


def complete_cases():
    for shape in SHAPES:
        yield sid(shape), (lambda shape=shape: kns_with_lids(*shape[:5], radix=shape[5]))
    yield "k4n2m2-lmc1", lambda: kns_with_lids(4, 2, h=1, m=2, lmc=1)
    yield "k3n2-lmc1", lambda: kns_with_lids(3, 2, lmc=1)
    yield "k8n3", lambda: kns_with_lids(8, 3)
    for i in (0, 3, 7):
        def reordered(shape=SHAPES[i]):
            g, _ = shuffled(kns_with_lids(*shape[:5], radix=shape[5]), seed=7)
            assign_lids(g)
            return g
        yield f"{sid(SHAPES[i])}-shuffled7", reordered

    def relabelled():
        g, _ = shuffled(kns_with_lids(4, 3), seed=3, ports=False, guids=True)
        assign_lids(g)
        return g
    yield "k4n3-guids3", relabelled

    def no_switch_lids():
        f = kns_with_lids(3, 2)
        for key in [key for key in f.port_lids if f.types[key[0]] == SWITCH]:
            del f.port_lids[key]
        return f
    yield "k3n2-no-switch-lids", no_switch_lids
    yield "real-ibsim-k3n2", lambda: ibnetdiscover.read(REAL / "ibnetdiscover.out")


@pytest.mark.parametrize("name,make", list(complete_cases()), ids=[c[0] for c in complete_cases()])
def test_complete_kns_digests(name, make):
    f = make()
    check(f"ref/complete/{name}", of_result(hdor.compute(f), f))


def test_real_c_tables_digest():
    """The C engine's tables of the real fixture (ibsim + OpenSM + libhdor.so) and the reference's."""
    got = of_tables(lft.read(REAL / "opensm-lfts.dump"))
    check("c/fixture/ibsim-kns-k3-n2-hdor", got)
    f = ibnetdiscover.read(REAL / "ibnetdiscover.out")
    assert of_tables(hdor.compute(f).tables) == got


def link_name(f, li) -> str:
    return f"{f.names[f.link_a[li]]}[{f.link_pa[li]}]-{f.names[f.link_b[li]]}[{f.link_pb[li]}]"


def fault_steps(f):
    """(description, nodes, links) of the single and multiple faults test_hdor_faults.py routes."""
    for li in router_switch_links(f):
        yield f"link {link_name(f, li)}", (), (li,)
    for x in indirect(f):
        yield f"switch {f.names[x]}", (x,), ()
    rs = routers(f)
    for x in (rs[0], rs[len(rs) // 2 + 1]):
        yield f"router {f.names[x]}", (x,), ()
    for seed in range(5):
        rng = random.Random(seed)
        inside = [li for li in range(f.num_links) if f.roles[f.link_a[li]] == f.roles[f.link_b[li]] == "switch"]
        links = rng.sample(router_switch_links(f) + inside, 4)
        nodes = rng.sample(indirect(f), 2)
        if seed % 2:
            nodes.append(rng.choice(rs))
        yield f"multi seed {seed}", tuple(nodes), tuple(links)
    for li in range(f.num_links):
        if f.roles[f.link_a[li]] == f.roles[f.link_b[li]] == "switch":
            yield f"inside {link_name(f, li)}", (), (li,)


@pytest.mark.parametrize("shape", list(FAULT_SHAPES))
def test_fault_step_digests(shape):
    f = kns_with_lids(*FAULT_SHAPES[shape])
    r0 = hdor.compute(f)
    n = 0
    for what, nodes, links in fault_steps(f):
        g = degrade(f, nodes=nodes, links=links)
        check(f"ref/fault/{shape}/{what}", of_result(hdor.compute(g, baseline=(f, r0)), g))
        n += 1
    assert n > 40


def test_split_tree_parallel_links_and_real_fixture_digests():
    f = kns_with_lids(4, 2, 2)
    r0 = hdor.compute(f)
    g = split_tree(f)
    check("ref/fault/k4n2s2/split tree", of_result(hdor.compute(g, baseline=(f, r0)), g))
    for s in (1, 2):
        f = kns_with_lids(4, 2, s, h=1, m=2, lmc=1)
        r0 = hdor.compute(f)
        for li in router_switch_links(f)[::5]:
            g = degrade(f, links=[li])
            check(f"ref/fault/k4n2s{s}m2lmc1/link {link_name(f, li)}", of_result(hdor.compute(g, baseline=(f, r0)), g))
    f = ibnetdiscover.read(REAL / "ibnetdiscover.out")
    r0 = hdor.compute(f)
    for li in router_switch_links(f, r0.role)[::3]:
        g = degrade(f, links=[li])
        check(f"ref/fault/real-ibsim-k3n2/link {link_name(f, li)}", of_result(hdor.compute(g, baseline=(f, r0)), g))


@pytest.mark.parametrize("shape", list(FAULT_SHAPES))
def test_fault_matrix_random_scenario_digests(shape):
    """tests/test_hdor_fault_matrix.py's random scenarios (seeds 1-5, 3 faults piled up), on the
    plan it runs (radix 8 for s = 1), with the tests' LIDs."""
    k, n, s = FAULT_SHAPES[shape]
    f = kns(k, n, s=s, radix=8 if s == 1 else 36)
    assign_lids(f)
    r0 = hdor.compute(f)
    for seed in range(1, 6):
        nodes, links = [], []
        for st in faults.random_scenario(f, 3, seed).steps:
            node, port = faults.target(f, st.down[0], "test")
            if port is None:
                nodes.append(node)
            else:
                links.append(next(li for li in range(f.num_links)
                                  if (f.link_a[li], f.link_pa[li]) == (node, port)
                                  or (f.link_b[li], f.link_pb[li]) == (node, port)))
            g = degrade(f, nodes=nodes, links=links)
            check(f"ref/matrix/{shape}/seed {seed}/{len(nodes) + len(links)}",
                  of_result(hdor.compute(g, baseline=(f, r0)), g))
    g = rebuild(f)
    assign_lids(g)
    assert of_result(hdor.compute(g, baseline=(f, r0)), g) == of_result(r0, f)


def test_digests_see_one_changed_entry():
    """A digest changes with any one entry and not with trailing 'no route' entries."""
    f = kns_with_lids(3, 2)
    r = hdor.compute(f)
    before = of_result(r, f)
    g = next(iter(r.tables.lft))
    r.tables.lft[g] = np.append(r.tables.lft[g], [255, 255]).astype(np.uint8)
    assert of_result(r, f) == before
    r.tables.lft[g][1] ^= 1
    assert of_result(r, f)["tables"] != before["tables"]
