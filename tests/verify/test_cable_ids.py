"""`verify topology` with the plan's cable list: findings in cable IDs and labels, a fix sheet for
the technician, and stage-by-stage checks of a partly cabled fabric (real ibsim discovery)."""

import csv
import json

import pytest

from support import ibtool
from verify_fabrics import Cabling as Miswire, write_net
from ibtool.formats import ibnetdiscover

pytestmark = pytest.mark.ibsim


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    d = tmp_path_factory.mktemp("kns") / "plan"
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", d, check=0)
    ibtool("cabling", d, "--out", d / "cabling", check=0)
    with open(d / "cabling" / "cables.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return d, rows


def discover(tmp_path, fabric, name="run"):
    net = tmp_path / f"{name}.net"
    write_net(fabric, net)
    ibtool("sim", "run", net, "--engine", "minhop", "--out", tmp_path / name, check=0)
    return tmp_path / name / "ibnetdiscover.out"


def cable(rows, dev, port):
    return next(r for r in rows if (r["a_device"], r["a_port"]) == (dev, str(port))
                or (r["b_device"], r["b_port"]) == (dev, str(port)))


def test_findings_name_cable_ids_and_the_html_lists_only_the_fixes(plan, tmp_path):
    d, rows = plan
    p = ibnetdiscover.read(d / "topology.net")
    m = Miswire(p)
    m.move("R[1,0]", 2, to_port=6)  # the cable from R[1,0] port 2 lands in S[0,1] port 6 instead of 2
    disc = discover(tmp_path, m.build(disguise=False))
    html = tmp_path / "fixes.html"
    r = ibtool("verify", "topology", "--plan", d, "--discovered", disc, "--json", "--html", html)
    assert r.returncode == 1, r.stderr
    t = json.loads(r.stdout)
    c = cable(rows, "R[1,0]", 2)
    fx = t["fixes"]
    assert len(fx) == 1 and fx[0]["cable_id"] == c["cable_id"] and fx[0]["labels"] == [c["a_label"], c["b_label"]]
    assert fx[0]["text"] == (f"{c['cable_id']} ({c['a_device']} P{c['a_port']} -> {c['b_device']} P{c['b_port']}) "
                             f"is in S[0,1] port 6: move it to port {c['b_port'] if c['b_device'] == 'S[0,1]' else c['a_port']}")
    assert t["cable_list"].endswith("cabling/cables.csv")
    sheet = html.read_text()
    assert sheet.count('class="fix"') == 1 and c["cable_id"] in sheet and "move it to port" in sheet
    text = ibtool("verify", "topology", "--plan", d, "--discovered", disc)
    assert c["cable_id"] in text.stdout and "cable IDs and labels from" in text.stdout


def test_stage_checks_of_a_partly_cabled_fabric(plan, tmp_path):
    """Stages 1-2 cabled (node cables, dimension 0) plus one dimension-1 cable already laid."""
    d, rows = plan
    p = ibnetdiscover.read(d / "topology.net")
    m = Miswire(p)
    early = next(r for r in rows if r["stage"] == "3")
    for r in rows:
        if r["stage"] == "3" and r is not early:
            m.remove(r["a_device"], int(r["a_port"]))
    disc = discover(tmp_path, m.build(disguise=False))
    r = ibtool("verify", "topology", "--plan", d, "--discovered", disc, "--stage", "2", "--json")
    t = json.loads(r.stdout)
    assert r.returncode == 0, [x["text"] for k in ("missing_cables", "extra_cables", "fixes") for x in t[k]]
    ahead = [x.get("cable_id") for x in t["ahead_of_plan"]]
    assert early["cable_id"] in ahead and t["stage"] == 2
    # without --stage, the same fabric misses every later cable
    r = ibtool("verify", "topology", "--plan", d, "--discovered", disc, "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["verdict"] == "MISWIRED"
    # a stage the list does not have, or no cable list
    r = ibtool("verify", "topology", "--plan", d, "--discovered", disc, "--stage", "9")
    assert r.returncode == 2 and "--stage 9: the cable list" in r.stderr and "stages 1..3" in r.stderr
    r = ibtool("verify", "topology", "--plan", d / "topology.net", "--discovered", disc, "--stage", "1",
               "--cables", tmp_path / "none.csv")
    assert r.returncode == 2 and "cannot read" in r.stderr
