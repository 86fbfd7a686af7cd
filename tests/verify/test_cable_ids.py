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


def at(r, t):
    return f"{r[t + '_rack']} U{int(r[t + '_u']):02d} {r[t + '_side']}, {r[t + '_device']} port {r[t + '_port']}"


@pytest.fixture(scope="module")
def miswired(plan, tmp_path_factory):
    """One real discovery of the plan with three faults: a cable in the wrong port of its switch,
    two cables of one switch crossed, and two hosts swapped."""
    d, rows = plan
    m = Miswire(ibnetdiscover.read(d / "topology.net"))
    m.move("R[1,0]", 2, to_port=6)  # the cable from R[1,0] port 2 lands in S[0,1] port 6 instead of 2
    m.swap("S[1,1]", 1, "S[1,1]", 2)  # the router ends of the cables at S[1,1] ports 1 and 2 crossed
    m.swap("R[2,0]", 1, "R[2,1]", 1)  # hosts H[2,0] and H[2,1] swapped
    tmp = tmp_path_factory.mktemp("miswired")
    disc = discover(tmp, m.build(disguise=False))
    html = tmp / "fixes.html"
    r = ibtool("verify", "topology", "--plan", d, "--discovered", disc, "--json", "--html", html)
    return d, rows, disc, html, r


def test_findings_name_cable_ids_places_and_the_html_lists_only_the_fixes(miswired):
    d, rows, disc, html, r = miswired
    assert r.returncode == 1, r.stderr
    t = json.loads(r.stdout)
    fx = {tuple(x["cable_id"]) if isinstance(x["cable_id"], list) else x["cable_id"]: x for x in t["fixes"]}
    assert len(t["fixes"]) == 3 and t["misplaced_devices"] == []
    # the move: where the technician stands, rack, U and side of both ports
    c = cable(rows, "R[1,0]", 2)
    s = "b" if c["b_device"] == "S[0,1]" else "a"
    wrong = at(c, s).replace(f"port {c[s + '_port']}", "port 6")
    assert fx[c["cable_id"]]["labels"] == [c["a_label"], c["b_label"]]
    assert fx[c["cable_id"]]["text"] == (f"{c['cable_id']} ({c['a_device']} P{c['a_port']} -> {c['b_device']} "
                                         f"P{c['b_port']}) is in {wrong}: move it to {at(c, s)}")
    # the crossed pair: each cable back to the link its labels name, never "swap the ends"
    x, y = cable(rows, "S[1,1]", 1), cable(rows, "S[1,1]", 2)
    pair = next(v for k, v in fx.items() if set(k) == {x["cable_id"], y["cable_id"]})
    assert "swap the cable ends" not in pair["text"] and "as its labels say" in pair["text"]
    for z in (x, y):
        assert f"{z['cable_id']} {at(z, 'a')} to {at(z, 'b')}" in pair["text"]
    assert sorted(map(tuple, pair["labels"])) == sorted([(x["a_label"], x["b_label"]), (y["a_label"], y["b_label"])])
    # two hosts swapped: one action naming both, no 'move device' rows that would undo it
    hosts = next(v for v in t["fixes"] if v.get("hosts"))
    assert sorted(hosts["hosts"]) == ["H[2,0]", "H[2,1]"] and hosts["text"].startswith("hosts H[2,")
    sheet = html.read_text()
    assert sheet.count('class="fix"') == 3 and "move device" not in sheet and c["cable_id"] in sheet
    text = ibtool("verify", "topology", "--plan", d, "--discovered", disc)
    assert c["cable_id"] in text.stdout and "cable IDs and labels from" in text.stdout


def test_stage_checks_of_a_partly_cabled_fabric(plan, tmp_path):
    """Stages 1-2 cabled (the fabric grown from the SM host: every switch cable) plus one node
    cable of stage 3 already laid: stage 2 passes, the early cable is ahead of its stage."""
    d, rows = plan
    p = ibnetdiscover.read(d / "topology.net")
    m = Miswire(p)
    last = max(int(r["stage"]) for r in rows)
    early = next(r for r in rows if r["stage"] == str(last))
    for r in rows:
        if r["stage"] == str(last) and r is not early:
            m.remove(r["a_device"], int(r["a_port"]))
    disc = discover(tmp_path, m.build(disguise=False))
    r = ibtool("verify", "topology", "--plan", d, "--discovered", disc, "--stage", str(last - 1), "--json")
    t = json.loads(r.stdout)
    assert r.returncode == 0, [x["text"] for k in ("missing_cables", "extra_cables", "fixes", "not_checked") for x in t[k]]
    assert t["not_checked"] == [] and t["correct_cables"] == sum(1 for x in rows if int(x["stage"]) < last)
    ahead = {x.get("cable_id"): x["text"] for x in t["ahead_of_plan"]}
    assert early["cable_id"] in ahead and "cabled ahead of its stage" in ahead[early["cable_id"]]
    assert t["stage"] == last - 1 and t["sm_host"] == "H[0,0]"
    # without --stage, the same fabric misses every later cable
    r = ibtool("verify", "topology", "--plan", d, "--discovered", disc, "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["verdict"] == "MISWIRED"
    # a stage the list does not have, or no cable list
    r = ibtool("verify", "topology", "--plan", d, "--discovered", disc, "--stage", "9")
    assert r.returncode == 2 and "--stage 9: the cable list" in r.stderr and f"stages 1..{last}" in r.stderr
    r = ibtool("verify", "topology", "--plan", d / "topology.net", "--discovered", disc, "--stage", "1",
               "--cables", tmp_path / "none.csv")
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_a_cable_of_a_later_stage_is_never_an_action(plan, tmp_path):
    """Every stage cabled, checked at the stage before the hosts' cables: each host cable is ahead
    of its stage and nothing else. No output calls it an action: no 'move device ... belongs on
    nothing' in the JSON, the text or the HTML fix sheet (where an action has a check box)."""
    d, rows = plan
    last = max(int(r["stage"]) for r in rows)
    later = {r["cable_id"] for r in rows if int(r["stage"]) == last}
    hosts = {r[e + "_device"] for r in rows if r["cable_id"] in later for e in "ab" if r[e + "_device"].startswith("H[")}
    assert hosts, "the last stage cables hosts"
    disc = discover(tmp_path, ibnetdiscover.read(d / "topology.net"))
    html = tmp_path / "fixes.html"
    args = ("verify", "topology", "--plan", d, "--discovered", disc, "--stage", str(last - 1))
    r = ibtool(*args, "--json", "--html", html)
    t = json.loads(r.stdout)
    assert r.returncode == 0 and t["verdict"] == "PASS", r.stdout
    assert {x["cable_id"] for x in t["ahead_of_plan"]} == later
    actions = {k: t[k] for k in ("misplaced_devices", "fixes", "miswired", "extra_cables", "extra_devices")}
    assert actions == {k: [] for k in actions} and t["counts"]["misplaced_devices"] == 0
    text = ibtool(*args).stdout
    assert "belongs on nothing" not in text and "hosts not where planned" not in text
    assert text.count("cabled ahead of its stage") == len(later)
    sheet = html.read_text()
    assert "belongs on nothing" not in sheet and "move device" not in sheet
    assert sheet.count("&#9744;") == 0 and sheet.count("<td>cabled ahead of its stage</td>") == len(later)
    # two hosts of the last stage swapped: each belongs where its own later cable goes, not "on nothing"
    x, y = [r for r in rows if r["cable_id"] in later][:2]  # router (a) ends: the hosts' cables cross
    m = Miswire(ibnetdiscover.read(d / "topology.net"))
    m.swap(x["a_device"], int(x["a_port"]), y["a_device"], int(y["a_port"]))
    t = json.loads(ibtool(*args[:5], discover(tmp_path, m.build(disguise=False), "swapped"), *args[6:], "--json").stdout)
    said = " ".join(v["text"] for v in t["misplaced_devices"])
    assert "belongs on nothing" not in said and len(t["misplaced_devices"]) == 2
    for c in (x, y):
        assert f"belongs on {c['a_device']} port {c['a_port']} ({c['cable_id']}, stage {last})" in said


def test_a_stage_check_never_passes_blind(plan, tmp_path):
    """A cable list whose first stage leaves the fabric in pieces (the node cables first, as
    ibtool staged KNS before): one discovery sees one piece. Every cable it could not see is
    'not checked' (exit 1), the report starts with that, and the findings of --html list each such
    cable (never 'No findings')."""
    d, rows = plan
    staged = tmp_path / "plan"
    staged.mkdir()
    for f in ("topology.net", "fabric.json"):
        (staged / f).write_text((d / f).read_text())
    (staged / "cabling").mkdir()
    (staged / "cabling" / "cabling.json").write_text((d / "cabling" / "cabling.json").read_text())
    old = [dict(r, stage="1" if "H[" in r["a_device"] + r["b_device"] else "2") for r in rows]
    with open(staged / "cabling" / "cables.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(old)
    m = Miswire(ibnetdiscover.read(d / "topology.net"))
    for r in old:
        if r["stage"] == "2":
            m.remove(r["a_device"], int(r["a_port"]))
    disc = discover(tmp_path, m.build(disguise=False))
    html = tmp_path / "fixes.html"
    r = ibtool("verify", "topology", "--plan", staged, "--discovered", disc, "--stage", "1", "--json", "--html", html)
    t = json.loads(r.stdout)
    nodes = [x for x in old if x["stage"] == "1"]
    assert r.returncode == 5 and t["verdict"] == "NOT CHECKED" and t["correct_cables"] == 1  # one rule: exit 5
    assert sorted(x["cable_id"] for x in t["not_checked"] if "cable_id" in x) == \
        sorted(x["cable_id"] for x in nodes if "H[0,0]" not in (x["a_device"], x["b_device"]))
    assert all("discover from the SM host H[0,0] after stage 1" in x["text"] for x in t["not_checked"])
    sheet = html.read_text()
    assert "No findings" not in sheet and sheet.count("<td>not checked</td>") == len(t["not_checked"])
    text = ibtool("verify", "topology", "--plan", staged, "--discovered", disc, "--stage", "1").stdout
    assert text.startswith("verify: NOT CHECKED\n  topology: NOT CHECKED  1 of 9 planned cables right")


def test_verify_all_speaks_in_cables_too(miswired):
    """`verify all RUN --plan DIR`: the plan directory, and its cable list, as `verify topology`."""
    d, rows, disc, _, r = miswired
    want = {json.dumps(x["cable_id"]): x["text"] for x in json.loads(r.stdout)["fixes"]}
    a = ibtool("verify", "all", disc.parent, "--plan", d, "--json", "--permutations", "0")
    assert a.returncode == 1, a.stderr
    t = json.loads(a.stdout)["topology"]
    assert t["cable_list"].endswith("cabling/cables.csv")
    assert {json.dumps(x["cable_id"]): x["text"] for x in t["fixes"]} == want
    text = ibtool("verify", "all", disc.parent, "--plan", d, "--permutations", "0").stdout
    c = cable(rows, "R[1,0]", 2)
    assert f"{c['cable_id']} ({c['a_device']} P{c['a_port']}" in text
