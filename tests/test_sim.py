"""Real ibsim + Debian OpenSM runs (marker `ibsim`); each run has its own socket and directories."""

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from support import FIXTURES, ROOT, ibtool
from ibtool.fabric import Fabric
from ibtool.formats import ibnetdiscover
from ibtool.topologies.kns import kns

pytestmark = pytest.mark.ibsim
FIXTURE_PLAN = FIXTURES / "real" / "plan-kns-k3-n2.net"


def plan(tmp_path, name, *args):
    out = tmp_path / name
    ibtool("topo", "kns", *args, "--out", out, check=0)
    return out


def test_cellia_plan_equals_discovered(tmp_path):
    p = plan(tmp_path, "cellia", "--k", "6", "--n", "2", "--radix", "8")
    run = tmp_path / "run"
    r = ibtool("sim", "run", p / "topology.net", "--engine", "minhop", "--out", run, check=0)
    assert "subnet UP; tables configured by minhop" in r.stdout
    s = json.loads((run / "summary.json").read_text())
    assert s["subnet_up"] and s["engine"] == "minhop" and s["ok"] and not s["fallback"]
    assert s["routing_step_s"] is not None and s["routing_step_s"] >= 0
    for f in ("ibnetdiscover.out", "dump_fts.out", "opensm.log", "osm/opensm-lfts.dump", "osm/opensm-subnet.lst"):
        assert (run / f).stat().st_size > 0, f
    found = ibnetdiscover.read(run / "ibnetdiscover.out")
    assert found.count(kind=2) == 48 and found.count(kind=1) == 36
    v = ibtool("verify", "topology", "--plan", p / "topology.net", "--discovered", run / "ibnetdiscover.out",
               "--json", check=0)
    rep = json.loads(v.stdout)
    assert rep["ok"] and rep["links_found"] == rep["links_planned"] == 108
    # no ibsim left behind, no scratch dir left behind
    assert not (run / ".work").exists()
    assert subprocess.run(["pgrep", "-f", str(p / "topology.net")], capture_output=True).returncode == 1


def swapped(f, switch, p1, p2):
    """A copy of fabric `f` cabled the same, except that `switch`'s ports p1 and p2 trade cables."""
    g = Fabric(f.name)
    for i in range(f.num_nodes):
        g.add_node(f.types[i], f.names[i], f.nports[i], f.roles[i], f.labels[i], f.guids[i])
    s = f.index(switch)
    swap = {(s, p1): p2, (s, p2): p1}
    for a, pa, b, pb in zip(f.link_a, f.link_pa, f.link_b, f.link_pb):
        g.add_link(a, b, swap.get((a, pa), pa), swap.get((b, pb), pb))
    return g


def test_miswired_cables_are_caught(tmp_path):
    """Swap two router cables on a switch: verify names exactly those ports."""
    good = kns(4, 2, radix=8)
    bad = swapped(good, "S[0,1]", 1, 2)  # R[1,0] and R[1,1] trade places
    d = tmp_path / "plan"
    d.mkdir()
    ibnetdiscover.write(good, d / "plan.net")
    ibnetdiscover.write(bad, d / "cabled.net")
    run = tmp_path / "run"
    ibtool("sim", "run", d / "cabled.net", "--engine", "minhop", "--out", run, check=0)
    v = ibtool("verify", "topology", "--plan", d / "plan.net", "--discovered", run / "ibnetdiscover.out", "--json")
    assert v.returncode == 1
    rep = json.loads(v.stdout)
    assert not rep["ok"]
    wrong = {(m["port"], m["found"], m["expected"]) for m in rep["miswired"]}
    assert wrong == {("R[1,0][2]", "S[0,1][2]", "S[0,1][1]"), ("R[1,1][2]", "S[0,1][1]", "S[0,1][2]")}
    assert rep["missing"] == [] and rep["extra"] == []
    human = ibtool("verify", "topology", "--plan", d / "plan.net", "--discovered", run / "ibnetdiscover.out")
    assert human.returncode == 1 and "topology: FAIL" in human.stdout and "2 miswired" in human.stdout


def test_two_runs_at_once_do_not_meet(tmp_path):
    a = plan(tmp_path, "a", "--k", "3", "--n", "2", "--radix", "8")
    b = plan(tmp_path, "b", "--k", "4", "--n", "2", "--radix", "8")
    with ThreadPoolExecutor(2) as ex:
        ra, rb = ex.map(lambda x: ibtool("sim", "run", x[0] / "topology.net", "--out", x[1]),
                        [(a, tmp_path / "ra"), (b, tmp_path / "rb")])
    assert ra.returncode == 0 and rb.returncode == 0, ra.stderr + rb.stderr
    fa = ibnetdiscover.read(tmp_path / "ra" / "ibnetdiscover.out")
    fb = ibnetdiscover.read(tmp_path / "rb" / "ibnetdiscover.out")
    assert (fa.count(kind=2), fb.count(kind=2)) == (9 + 6, 16 + 8)
    sa = json.loads((tmp_path / "ra" / "summary.json").read_text())
    sb = json.loads((tmp_path / "rb" / "summary.json").read_text())
    assert sa["ibsim_sockname"] != sb["ibsim_sockname"]


def test_fallback_is_reported_and_fails(tmp_path):
    """updn without root GUIDs cannot route a KNS; OpenSM silently uses minhop; ibtool says so."""
    p = plan(tmp_path, "k", "--k", "3", "--n", "2", "--radix", "8")
    run = tmp_path / "run"
    r = ibtool("sim", "run", p / "topology.net", "--engine", "updn", "--out", run)
    assert r.returncode == 1
    s = json.loads((run / "summary.json").read_text())
    assert s["subnet_up"] and s["engine"] == "minhop" and s["fallback"] and not s["ok"]
    assert "FALLBACK" in r.stdout


def test_timeout_stops_everything(tmp_path):
    """updn,no_fallback on a KNS never comes up; `opensm -o` would sweep forever."""
    p = plan(tmp_path, "k", "--k", "3", "--n", "2", "--radix", "8")
    run = tmp_path / "run"
    r = ibtool("sim", "run", p / "topology.net", "--engine", "updn,no_fallback", "--timeout", "8",
               "--no-discover", "--out", run)
    assert r.returncode == 1
    s = json.loads((run / "summary.json").read_text())
    assert s["timed_out"] and not s["subnet_up"] and s["engine"] is None
    assert subprocess.run(["pgrep", "-f", str(p / "topology.net")], capture_output=True).returncode == 1
    assert subprocess.run(["pgrep", "-f", str(run / "opensm.conf")], capture_output=True).returncode == 1


def test_ctrl_c_stops_ibsim_and_opensm(tmp_path):
    p = plan(tmp_path, "k", "--k", "3", "--n", "2", "--radix", "8")
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "ibtool.cli.main", "sim", "run", str(p / "topology.net"),
                             "--engine", "updn,no_fallback", "--timeout", "60", "--out", str(run)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (run / "opensm.log").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (run / "opensm.log").exists()
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    for pattern in (str(p / "topology.net"), str(run / "opensm.conf")):
        assert subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 1, pattern


def test_missing_ibsim_is_one_line(tmp_path):
    p = plan(tmp_path, "k", "--k", "3", "--n", "2", "--radix", "8")
    env = {"PATH": os.path.dirname(sys.executable)}  # no /usr/bin: no ibsim
    r = ibtool("sim", "run", p / "topology.net", "--out", tmp_path / "run", env=env)
    assert r.returncode == 3
    assert r.stderr.strip().splitlines() == [
        "ibtool: error: ibsim not found; install the Debian package ibsim-utils (make setup does)"]


def test_plan_engine_and_files_are_used_by_sim_run(tmp_path):
    """`ibtool topo` names the family's engine and the files it reads in the plan's opensm.conf;
    `sim run PLAN/topology.net` without --engine routes with them."""
    from ibtool.plan import write_plan
    from ibtool.topologies import EngineFile, guid_list
    f = kns(3, 2, radix=8)
    roots = [i for i, r in enumerate(f.roles) if r == "switch"]
    out = tmp_path / "plan"
    write_plan(f, out, ["updn"], [EngineFile("root_guid_file", "root-guids", guid_list(f, roots))])
    assert (out / "root-guids").read_text().count("\n") == len(roots) == 6
    assert "\nroot_guid_file root-guids\n" in (out / "opensm.conf").read_text()  # relative: the plan can move
    run = tmp_path / "run"
    r = ibtool("sim", "run", out / "topology.net", "--out", run, "--no-discover", check=0)
    s = json.loads((run / "summary.json").read_text())
    # updn finds no roots on a KNS by itself (it falls back); with the plan's root GUIDs it routes
    assert s["engines"] == ["updn"] and s["engine"] == "updn" and s["ok"], r.stdout
    assert f"\nroot_guid_file {(out / 'root-guids').resolve()}\n" in (run / "opensm.conf").read_text()


def test_a_plan_copied_elsewhere_comes_up_with_its_own_engine(tmp_path):
    """Issue 24: a fat-tree plan named its GUID files by absolute path, so a copy used the
    original's files and, the original gone, ftree declined ("Problem parsing CN guid file") and
    minhop routed. The plan names them relative to itself; `sim run PLAN` resolves them."""
    import shutil
    first, moved = tmp_path / "checkout-a" / "ft", tmp_path / "checkout-b" / "ft"
    ibtool("topo", "fattree", "--k", "2", "--n", "3", "--out", first, check=0)
    shutil.copytree(first, moved)
    shutil.rmtree(tmp_path / "checkout-a")
    run = tmp_path / "run"
    r = ibtool("sim", "run", moved / "topology.net", "--out", run, "--no-discover", check=0)
    s = json.loads((run / "summary.json").read_text())
    assert (s["engines"], s["engine"], s["fallback"], s["ok"]) == (["ftree"], "ftree", False, True), r.stdout
    conf = (run / "opensm.conf").read_text()
    assert f"\ncn_guid_file {moved.resolve() / 'cn-guids'}\n" in conf and "checkout-a" not in conf


@pytest.mark.parametrize("args, said", [
    (["--opensm-arg=--bogus-flag"], "/usr/sbin/opensm: unrecognized option '--bogus-flag'"),
    (["--opensm-arg=-h"], "it printed its usage"),
    (["--opensm-arg=--bogus-flag", "--path-sls"], "/usr/sbin/opensm: unrecognized option '--bogus-flag'"),
])
def test_opensm_usage_error_is_bad_input_with_opensms_own_words(tmp_path, args, said):
    """Issue 24: this ended in 'subnet NOT UP; tables configured by no engine', exit 1, OpenSM's
    'unrecognized option' and its exit 2 only in summary.json."""
    run = tmp_path / "run"
    r = ibtool("sim", "run", FIXTURE_PLAN, "--out", run, *args)
    assert r.returncode == 2, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("ibtool: error:")]
    extra = args[0].split("=", 1)[1]
    assert errors == [f"ibtool: error: OpenSM refused its command line (exit 2): {said}; its extra arguments: "
                      f"{extra} (--opensm-arg)"], r.stderr
    s = json.loads((run / "summary.json").read_text())
    assert s["opensm_exit"] == 2 and not s["ok"] and s["opensm_error"].endswith(said)
    assert not (run / "ibnetdiscover.out").exists()  # nothing discovered after OpenSM refused to start


def test_path_records_in_bulk_equal_saqueries(tmp_path):
    """ibtool.mad asks the SA the SubnAdmGetTable(PathRecord) of `saquery -p --slid S --dlid D` for
    every pair from one process: the same SLs as saquery pair by pair (lash: an engine whose SLs
    are deterministic; dfsssp draws one VL of a split layer at random per query)."""
    import random
    from types import SimpleNamespace

    from ibtool.formats import pathrecord
    from ibtool.mad import path_sls
    from ibtool.sim.live import LiveFabric
    ibtool("topo", "slimfly", "--q", 3, "--hcas-per-router", 1, "--out", tmp_path / "sf3", check=0)
    with LiveFabric(tmp_path / "sf3" / "topology.net", tmp_path / "w", ["lash"]) as lf:
        assert lf.outcome["engine"] == "lash"
        lf.client(["ibnetdiscover"], tmp_path / "fabric.out")
        f = ibnetdiscover.read(tmp_path / "fabric.out")
        got = path_sls(SimpleNamespace(work=lf.scratch, env=lf.env), tmp_path / "bulk.out", f, timeout=60)
        assert got["pairs"] == got["records"] == 18 * 17
        lids = sorted(lid for (n, _), (lid, _) in f.port_lids.items() if not f.is_switch(n))
        pairs = random.Random(1).sample([(a, b) for a in lids for b in lids if a != b], 30)
        slow = "".join(subprocess.run(["saquery", "-p", "--slid", str(a), "--dlid", str(b)], env=lf.env(),
                                      cwd=lf.scratch, capture_output=True, text=True, check=True).stdout
                       for a, b in pairs)
    (tmp_path / "slow.out").write_text(slow)
    bulk, want = pathrecord.read(tmp_path / "bulk.out"), pathrecord.read(tmp_path / "slow.out")
    assert {p: bulk[p] for p in pairs} == want and len(set(want.values())) > 1  # lash uses several SLs here
