"""The tree families' placement (switch racks by stage, nodes in node racks) and `ibtool analyze`
on their plans."""

import json

import pytest

from support import ibtool
from ibtool.layout import place
from ibtool.fabric import switch_stages as stages
from ibtool.topologies.fattree import clos, fattree
from ibtool.topologies.kantc import kantc, mikant, mikantc
from ibtool.topologies.sft import sft


@pytest.mark.parametrize("f", [fattree(3, 3), clos(4, 4, 4, radix=8), sft(preset="cellia"), mikant(3, 3),
                               kantc(3, 3), mikantc(3, 3)], ids=lambda f: f.name)
def test_switch_racks_by_stage_then_node_racks(f):
    lay = place(f)
    assert lay.policy == "tree-stages"
    st = stages(f)
    sw = sorted(st, key=lambda i: (st[i], i))
    racks = [int(lay.cabinet[i]) for i in sw]
    assert racks == sorted(racks)  # stage by stage, never back
    for a in sw:  # a stage never shares a rack with another
        for b in sw:
            if st[a] != st[b]:
                assert lay.cabinet[a] != lay.cabinet[b]
    kinds = lay.cabinet_kind
    hcas = [i for i in range(f.num_nodes) if not f.is_switch(i)]
    assert all(kinds[lay.cabinet[i]] == "switch" for i in sw)
    assert all(kinds[lay.cabinet[h]] == "node" for h in hcas)


def test_sft_cellia_racks():
    """9 leaves, 9 middle and 3 top switches in three switch racks; 45 nodes in two node racks in
    leaf order."""
    f = sft(preset="cellia")
    lay = place(f)
    assert lay.cabinet_kind == ["switch"] * 3 + ["node"] * 2
    assert {int(lay.cabinet[f.index(f"E[{g},{e}]")]) for g in range(3) for e in range(3)} == {0}
    assert {int(lay.cabinet[f.index(f"M[{g},{m}]")]) for g in range(3) for m in range(3)} == {1}
    assert {int(lay.cabinet[f.index(f"T[{m},0]")]) for m in range(3)} == {2}
    order = sorted((i for i in range(f.num_nodes) if not f.is_switch(i)),
                   key=lambda h: (int(lay.cabinet[h]), int(lay.u[h])))
    assert [f.names[h] for h in order[:6]] == ["H[0,0,0]", "H[0,0,1]", "H[0,0,2]", "H[0,0,3]", "H[0,0,4]", "H[0,1,0]"]


@pytest.mark.parametrize("family,args,diameter,avg", [
    ("sft", ["--preset", "cellia"], 6, 5.181818),
    ("kantc", ["--k", "3", "--n", "3"], 8, 6.581818),
    ("mikantc", ["--k", "3", "--n", "3"], 8, 6.793258),
])
def test_analyze_covers_the_plan(tmp_path, family, args, diameter, avg):
    """`ibtool analyze` reads the plan back (no labels: stages from the wiring) and places it with
    the family's policy; its distances are those docs/papers.md reports."""
    plan = tmp_path / "plan"
    ibtool("topo", family, *args, "--out", plan, check=0)
    r = ibtool("analyze", plan, "--layout", "default", "--bisection", "none", "--json", check=0)
    rep = json.loads(r.stdout)
    assert rep["layout"]["policy"] == "tree-stages"
    assert rep["distance"]["hca"]["diameter"] == diameter and rep["distance"]["hca"]["average"] == pytest.approx(avg)
