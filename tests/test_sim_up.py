"""`ibtool sim up / status / set / sm / down` on real ibsim + OpenSM: a fabric that outlives the
command, reached by infiniband-diags with the environment it prints, changed through ibsim's
console, its SMs killed and started, stopped by pid and start time (and nothing else)."""

import json
import os
import re
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from support import ibtool

from ibtool.formats import ibnetdiscover, pathrecord

pytestmark = pytest.mark.ibsim


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    d = tmp_path_factory.mktemp("plan")
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", d, check=0)
    return d / "topology.net"


@pytest.fixture
def fabrics():
    """`sim up` runs started by a test; each is brought down at the end, whatever happened."""
    runs = []
    yield runs
    for run in runs:
        ibtool("sim", "down", run)


def up(fabrics, plan, run, *args, check=0):
    fabrics.append(run)
    r = ibtool("sim", "up", plan, "--out", run, "--json", *args, check=check, timeout=300)
    return json.loads(r.stdout) if r.stdout.strip() else r


def diag(d, *argv, **kw):
    """An infiniband-diags client, reached the way `sim up` says (its scratch dir, its environment)."""
    env = dict(os.environ, IBSIM_SOCKNAME=d["IBSIM_SOCKNAME"], LD_PRELOAD=d["LD_PRELOAD"])
    return subprocess.run(argv, cwd=d["scratch"], env=env, capture_output=True, text=True, timeout=120, **kw)


def test_up_reach_change_and_down(plan, tmp_path, fabrics):
    run = tmp_path / "run"
    d = up(fabrics, plan, run, "--engine", "hdor")
    assert d["up"] and d["ok"] and [s["state"] for s in d["sms"]] == ["MASTER"] and d["sms"][0]["engine"] == "hdor"
    # the processes outlive `sim up`, and the printed environment reaches them
    pids = [d["ibsim_pid"], d["sms"][0]["pid"]]
    assert all(alive(p) for p in pids)
    (tmp_path / "a.out").write_text(diag(d, "ibnetdiscover").stdout)
    f = ibnetdiscover.read(tmp_path / "a.out")
    assert f.num_links == ibnetdiscover.read(plan).num_links and f.count(kind=1) == 9
    # a second `sim up` into the same directory is refused while the fabric runs
    r = ibtool("sim", "up", plan, "--out", run)
    assert r.returncode == 2 and "an emulated fabric is up there" in r.stderr and "sim down" in r.stderr
    # a cable down: ibsim's Unlink, and the SM reroutes (--wait); a counter: PerformanceSet
    s = json.loads(ibtool("sim", "set", run, "--down", "R[1,1] 3", "--counter", "R[1,1] 2 SymbolErrorCounter=250",
                          "--wait", "--json", check=0).stdout)
    assert [c["command"].split()[0] for c in s["commands"]] == ["Unlink", "PerformanceSet"]
    assert s["engine"] == "hdor" and s["sm"] == 1
    (tmp_path / "b.out").write_text(diag(d, "ibnetdiscover").stdout)
    assert ibnetdiscover.read(tmp_path / "b.out").num_links == f.num_links - 1
    r11 = f.index("R[1,1]")
    lid = f.port_lids[(r11, 0)][0]
    assert re.search(r"SymbolErrorCounter:\.+250$", diag(d, "perfquery", str(lid), "2").stdout, re.MULTILINE)
    # the same cable down again is a note, not a failure; unknown devices and counters are refused
    again = ibtool("sim", "set", run, "--down", "R[1,1] 3", check=0)
    assert "is not linked" in again.stdout
    bad = ibtool("sim", "set", run, "--down", "R[7,7] 1")
    assert bad.returncode == 2 and "no device 'R[7,7]' in the plan" in bad.stderr
    bad = ibtool("sim", "set", run, "--counter", "R[1,1] 2 NoSuchCounter=1")
    assert bad.returncode == 2 and "'NoSuchCounter' is not a PortCounters counter" in bad.stderr  # before ibsim
    # the cable back, then an SM restart: the same engine again
    s = json.loads(ibtool("sim", "set", run, "--up", "R[1,1] 3", "--wait", "--json", check=0).stdout)
    assert s["commands"][0]["command"].startswith("ReLink") and s["engine"] == "hdor"
    st = json.loads(ibtool("sim", "sm", run, "--restart", "--json", check=0).stdout)
    assert st["state"] == "MASTER" and st["subnet_up"]
    assert ibtool("sim", "sm", run, "--sm", "2").returncode == 2  # one SM only
    # down stops exactly what it started
    new_sm = json.loads(ibtool("sim", "status", run, "--json", check=0).stdout)["sms"][0]["pid"]
    assert new_sm != pids[1] and not alive(pids[1])
    out = ibtool("sim", "down", run, check=0).stdout
    assert f"SM 1 (pid {new_sm})" in out and f"ibsim (pid {pids[0]})" in out
    assert not alive(new_sm) and not alive(pids[0])
    assert ibtool("sim", "status", run).returncode == 1
    assert "nothing was running" in ibtool("sim", "down", run, check=0).stdout


def test_a_dead_fabric_is_cleaned_up_by_the_next_up(plan, tmp_path, fabrics):
    """ibsim dies under its OpenSM (a crash, a kill): commands say so, and the next `sim up`
    into the same directory stops the orphaned OpenSM and starts afresh."""
    run = tmp_path / "run"
    d = up(fabrics, plan, run, "--engine", "minhop")
    os.kill(d["ibsim_pid"], signal.SIGKILL)
    time.sleep(0.5)
    orphan = d["sms"][0]["pid"]
    assert alive(orphan)
    r = ibtool("sim", "set", run, "--down", "R[1,1] 3")
    assert r.returncode == 1 and "ibsim is not running" in r.stderr
    d2 = up(fabrics, plan, run, "--engine", "minhop")
    assert not alive(orphan) and d2["ok"] and d2["ibsim_pid"] != d["ibsim_pid"]
    assert ibtool("sim", "set", tmp_path / "nothing", "--down", "R[1,1] 3").returncode == 2


def test_collect_reads_every_path_sl_the_sa_gives(plan, tmp_path, fabrics):
    """`ibtool collect` against a `sim up` fabric with a cable down (hdor moves detours onto
    other SLs): the path SLs it collects in bulk are, pair for pair, what `saquery -p` answers."""
    run = tmp_path / "run"
    d = up(fabrics, plan, run, "--engine", "hdor")
    ibtool("sim", "set", run, "--down", "R[1,1] 3", "--wait", check=0)
    env = dict(os.environ, IBSIM_SOCKNAME=d["IBSIM_SOCKNAME"], LD_PRELOAD=d["LD_PRELOAD"])
    import sys
    r = subprocess.run([sys.executable, "-m", "ibtool.cli.main", "collect", "-o", str(tmp_path / "c"), "--json"],
                       cwd=d["scratch"], env=env, capture_output=True, text=True, timeout=300)
    item = json.loads(r.stdout)["items"]["path_sls"]
    assert item["collected"] and item["pairs"] == item["records"] == 9 * 8 and item["without_record"] == 0
    got = pathrecord.read(tmp_path / "c" / "saquery-paths.out")

    def saquery(pair):
        out = diag(d, "saquery", "-p", "--slid", str(pair[0]), "--dlid", str(pair[1])).stdout
        return pair, int(out.split("sl......................")[1].split()[0], 16)

    with ThreadPoolExecutor(4) as pool:
        want = dict(pool.map(saquery, list(got)))
    assert got == want
    assert any(sl > 0 for sl in got.values())  # the detours: a check that could fail


def test_collect_records_an_sa_that_does_not_answer(plan, tmp_path, fabrics):
    """The SM stopped (`sim sm --stop`): the bulk PathRecord queries go unanswered, are sent again,
    and collect records the SA as not answering — path SLs not collected, nothing half-written."""
    run = tmp_path / "run"
    d = up(fabrics, plan, run, "--engine", "minhop")
    assert json.loads(ibtool("sim", "sm", run, "--stop", "--json", check=0).stdout)["signal"] == "SIGTERM"
    env = dict(os.environ, IBSIM_SOCKNAME=d["IBSIM_SOCKNAME"], LD_PRELOAD=d["LD_PRELOAD"])
    import sys
    r = subprocess.run([sys.executable, "-m", "ibtool.cli.main", "collect", "-o", str(tmp_path / "c"), "--json"],
                       cwd=d["scratch"], env=env, capture_output=True, text=True, timeout=300)
    item = json.loads(r.stdout)["items"]["path_sls"]
    assert item["collected"] is False and "the SA answered no PathRecord query for 72 of 72" in item["why"]
    assert not (tmp_path / "c" / "saquery-paths.out").exists()
