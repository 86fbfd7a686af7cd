"""What-if's evaluation of one failure (ibtool.whatif.evaluate.measure: the fault-free measures
patched with the routes the failure changed) equals verify's whole route check (verify.routes)
on the fabric after the failure with the same tables, SL2VL rows and path SLs: delivery by kind,
the switch-to-switch share, every channel's routes and all-to-all load, the worst permutation's
load, the (channel, VL) dependencies per VL and deadlock freedom; and the rerouted pairs and their
extra hops equal hdor's own count. On every single failure of KNS 4^2, 3^3 and 4^2 with 2-stage
trees, and pairs of failures; the tables are the Python reference's (no ibsim here: the ibsim
comparison is tests/whatif/test_ibsim.py)."""

import random
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "routing"))
from hdor_helpers import discovered, kns_with_lids  # noqa: E402
from support import sample  # noqa: E402

from ibtool.formats.lft import NO_ROUTE  # noqa: E402
from ibtool.routing import hdor  # noqa: E402
from ibtool.routing.hdor_single import Loaded  # noqa: E402
from ibtool.verify import routes  # noqa: E402
from ibtool.verify.bound import chan_name  # noqa: E402
from ibtool.whatif.base import Base  # noqa: E402
from ibtool.whatif.evaluate import measure  # noqa: E402

SHAPES = {"k4n2": (4, 2, 1), "k3n3": (3, 3, 1), "k4n2s2": (4, 2, 2)}


@pytest.fixture(scope="module", params=list(SHAPES))
def kns(request):
    f = kns_with_lids(*SHAPES[request.param])
    br = hdor.compute(f)
    return f, br, Loaded(f, br), Base(f, br.tables)


def compare(f, br, k, base, **failed):
    b = base.b
    one = k.route(**failed)
    rows = b.row[np.asarray(k.rows)]
    lft = np.full(b.lft.shape, NO_ROUTE, dtype=np.uint8)
    lft[rows] = one.table
    m = measure(base, set(one.dead_nodes), set(one.dead_links), lft, one.sl2vl, one.path_sls,
                changed=(rows[one.changed[0]], one.changed[1]))
    now = discovered(f, set(one.dead_nodes), set(one.dead_links))
    full = hdor.compute(now, baseline=(f, br))
    v = routes.verify(now, full.tables, sl2vl=full.sl2vl, path_sls=full.path_sls)
    assert (m["pairs"], m["delivered"], m["undelivered"], m["undelivered_switch_to_switch"]) == \
        (v["pairs"], v["delivered"], v["undelivered"], v["undelivered_switch_to_switch"])
    d = v["deadlock"]
    assert (m["deadlock_free"], m["dependencies"], m["dependencies_per_vl"]) == \
        (d["free"], d["dependencies"], d["dependencies_per_vl"])
    bal = v["balance"]
    assert m["a2a_max_load"] == bal["all_to_all_max_link_load"]
    assert m["perm_max_load"] == bal["permutations"]["max_link_load"]["max"]
    assert m["routes_per_link"] == bal["routes_per_link"]
    mine = {chan_name(b, x): (int(m["_loads"].routes[x]), int(m["_loads"].a2a[x])) for x in np.flatnonzero(base.isl)}
    assert {f"{a} -> {c}": (r, a2a) for a, c, r, a2a in bal["links"]} == \
        {name: val for name, val in mine.items() if name in {f"{a} -> {c}" for a, c, _, _ in bal["links"]}}
    assert m["pairs_rerouted"] == full.extra_hops["detoured"]
    assert m["extra_hops"]["max"] == full.extra_hops["max"]
    assert m["vls_used"] == full.vls
    return m


def test_every_single_failure(kns):
    f, br, k, base = kns
    role = f.roles
    every = 1 if f.num_nodes < 100 else 3  # 3^3 in `make test`: every 3rd (each kind, each dimension)
    cables = [li for li in range(f.num_links) if {role[f.link_a[li]], role[f.link_b[li]]} <= {"router", "switch"}]
    for li in sample(cables, every):
        compare(f, br, k, base, links=[li])
    lost = []
    for x in sample([x for x in range(1, f.num_nodes) if role[x] in ("router", "switch")], every):
        m = compare(f, br, k, base, nodes=[x])
        if role[x] == "router":
            lost.append(m)
    # a router takes its HCA with it: its pairs are lost, none of the others is cut off
    hcas = len(base.src)
    assert all(m["pairs_lost"] == 2 * (hcas - 1) and m["pairs_undelivered"] == 0 for m in lost)


def test_pairs_of_failures(kns):
    f, br, k, base = kns
    role = f.roles
    cables = [li for li in range(f.num_links) if {role[f.link_a[li]], role[f.link_b[li]]} <= {"router", "switch"}]
    switches = [x for x in range(f.num_nodes) if role[x] == "switch"]
    rng = random.Random(3)
    for _ in range(4):
        compare(f, br, k, base, links=rng.sample(cables, 2))
        compare(f, br, k, base, nodes=rng.sample(switches, 1), links=rng.sample(cables, 1))
