"""SM failover on ibsim (issue 22): two OpenSM instances with the hdor plugin on two HCAs of one
emulated KNS (`ibtool sim up --sms 2`: master and standby by sm_priority), the master killed with
SIGKILL as if its host died; the standby's polls of the master time out, it takes over, routes
with hdor, and everything it programs — forwarding tables, LIDs, SL2VL tables, the SL of every
path the SA hands out (`ibtool collect`) — equals what the master had programmed for the same
fabric, before and after a cable fails.

`make test` runs KNS 4^2; IBTOOL_FAULT_MATRIX=full adds 3^3 and 4^2 with 2-stage indirect
networks. (The standby never routed the fabric before it takes over: it starts from its first
sweep, as a restarted OpenSM does, knowing the KNS from the plan's hdor.conf beside its
opensm.conf, or without it at first sight.)

Two SMs on one ibsim can stall: an OpenSM waits for ever for a MAD ibsim never answers (umad2sim
has no MAD timeouts; docs/sim.md, "When an SM stalls"). The last tests make that happen — for sure
with a planned handover, by chance with the old master's return under CPU load — and check that
`sim sm` sees it within 30 s, says which MAD was lost, and restarts the SM, which then routes."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from hdor_walk import libhdor  # noqa: F401
from support import ibtool

from ibtool.formats import ibnetdiscover, lft, pathrecord
from ibtool.routing import hdor

pytestmark = [pytest.mark.ibsim, pytest.mark.usefixtures("libhdor")]

FULL = os.environ.get("IBTOOL_FAULT_MATRIX") == "full"
SHAPES = {"k4n2": ("--k", 4, "--n", 2, "--radix", 8)}
if FULL:
    SHAPES.update({"k3n3": ("--k", 3, "--n", 3, "--radix", 8), "k4n2s2": ("--k", 4, "--n", 2, "--s", 2, "--radix", 36)})
# a standby that polls the master every second and gives up after two misses takes over in ~3 s;
# no light sweeps (the SMs sweep on the switches' traps): fewer MADs between the SMs while cables
# change (an SM's answer to another whose way back a cable just left is lost too, docs/sim.md)
FAST_POLLS = ("--conf", "sminfo_polling_timeout=1000", "--conf", "polling_retry_number=2",
              "--conf", "sweep_interval=0")


@pytest.fixture(params=list(SHAPES))
def fabric(request, tmp_path):
    """A KNS up in ibsim with two SMs (SM 1 master on the first HCA, SM 2 standby on the last);
    yields (run dir, what `sim up` printed, the plan's net file, a router-switch cable far from both SMs)."""
    ibtool("topo", "kns", *SHAPES[request.param], "--out", tmp_path / "plan", check=0)
    net = tmp_path / "plan" / "topology.net"
    plan = ibnetdiscover.read(net)
    run = tmp_path / "run"
    try:
        d = json.loads(ibtool("sim", "up", net, "--sms", "2", "--engine", "hdor", *FAST_POLLS, "--out", run,
                              "--json", check=0, timeout=300).stdout)
        routers = [i for i in range(plan.num_nodes) if plan.names[i].startswith("R[")]  # the plan's names
        r = routers[len(routers) // 2]
        port = next(p for p, peer, _ in plan.neighbors(r) if plan.names[peer].startswith("S["))
        yield run, d, net, f"{plan.names[r]} {port}"
    finally:
        ibtool("sim", "down", run)


def collect(d: dict, out):
    """`ibtool collect` from the fabric's scratch directory, with the environment `sim up` printed."""
    env = dict(os.environ, IBSIM_SOCKNAME=d["IBSIM_SOCKNAME"], LD_PRELOAD=d["LD_PRELOAD"])
    r = subprocess.run([sys.executable, "-m", "ibtool.cli.main", "collect", "-o", str(out), "--json"],
                       cwd=d["scratch"], env=env, capture_output=True, text=True, timeout=600)
    s = json.loads(r.stdout)
    assert s["items"]["path_sls"].get("collected"), s["items"]["path_sls"]
    assert s["items"]["dump_fts"]["ok"] and s["items"]["sl2vl"]["ok"], s["items"]
    return out


def same(a, b):
    """What a and b (two collections) programmed is the same: tables, LIDs, SL2VL, path SLs."""
    assert hdor.compare_tables(lft.read(a / "dump_fts.out"), lft.read(b / "dump_fts.out")) == []
    fa, fb = ibnetdiscover.read(a / "ibnetdiscover.out"), ibnetdiscover.read(b / "ibnetdiscover.out")
    lids = [{(f.guids[n], p): lid for (n, p), (lid, _) in f.port_lids.items()} for f in (fa, fb)]
    assert lids[0] == lids[1]
    assert (a / "sl2vl.dump").read_text() == (b / "sl2vl.dump").read_text()
    assert dict(pathrecord.read(a / "saquery-paths.out")) == dict(pathrecord.read(b / "saquery-paths.out"))


def sm(run, *args, check=0):
    return json.loads(ibtool("sim", "sm", run, *args, "--json", check=check, timeout=300).stdout)


def test_standby_takes_over_and_routes_as_the_master(fabric, tmp_path):
    """The master routes the complete KNS and a cable failure; the cable is repaired; the master's
    host dies; the standby takes over and routes the complete KNS, then the same cable failure,
    exactly as the master did."""
    run, d, net, cable = fabric
    assert [s["state"] for s in d["sms"]] == ["MASTER", "STANDBY"] and d["sms"][0]["engine"] == "hdor"
    master0 = collect(d, tmp_path / "master-complete")
    s = json.loads(ibtool("sim", "set", run, "--down", cable, "--wait", "--json", check=0).stdout)
    assert s["engine"] == "hdor" and s["sm"] == 1
    master1 = collect(d, tmp_path / "master-degraded")
    sls = pathrecord.read(master1 / "saquery-paths.out")
    assert any(v > 0 for v in sls.values()), "hdor's detours around the cable should use SLs above 0"
    ibtool("sim", "set", run, "--up", cable, "--wait", check=0)
    assert sm(run, "--kill")["signal"] == "SIGKILL"
    took = sm(run, "--wait-master", "--sm", "2")
    assert took["state"] == "MASTER" and took["engine"] == "hdor" and not took["fallback"]
    same(master0, collect(d, tmp_path / "standby-complete"))
    s = json.loads(ibtool("sim", "set", run, "--down", cable, "--wait", "--json", check=0).stdout)
    assert s["engine"] == "hdor" and s["sm"] == 2
    same(master1, collect(d, tmp_path / "standby-degraded"))


@pytest.mark.parametrize("knows", ["described", "first-sight"])
def test_standby_takes_over_while_a_cable_is_down(fabric, tmp_path, knows):
    """The master routes around a failed cable; its host dies while the cable is still down: the
    standby, which never saw the complete KNS, takes over and programs what the master had
    programmed — knowing the KNS from the description file (the plan's hdor.conf, put beside its
    opensm.conf by `sim up`) or, without one, from what is left of it (first sight: a missing
    router-switch cable leaves every coordinate fixed, docs/hdor.md section 7)."""
    run, d, net, cable = fabric
    desc = run / "sim" / "sm-2" / "hdor.conf"  # the standby's -F directory: `sim up` put the plan's there
    assert desc.is_file() and desc.read_bytes() == net.with_name("hdor.conf").read_bytes()
    if knows == "first-sight":  # a standby host without the file: hdor reads it when OpenSM starts
        desc.unlink()
        assert sm(run, "--restart", "--sm", "2")["state"] == "STANDBY"
    s = json.loads(ibtool("sim", "set", run, "--down", cable, "--wait", "--json", check=0).stdout)
    assert s["engine"] == "hdor" and s["sm"] == 1
    master1 = collect(d, tmp_path / "master-degraded")
    sm(run, "--kill")
    took = sm(run, "--wait-master", "--sm", "2", check=None)
    assert took["state"] == "MASTER" and took["engine"] == "hdor" and not took["fallback"], took
    log = (run / "sim" / "sm-2").glob("opensm-*.log")
    said = "".join(p.read_text(errors="replace") for p in log)
    assert ("hdor: the KNS is described by" in said) == (knows == "described"), said[-2000:]
    assert ("first sight" in said) == (knows == "first-sight"), said[-2000:]
    same(master1, collect(d, tmp_path / "standby-degraded"))


def test_a_planned_handover_that_stalls_is_seen_and_retried(tmp_path):
    """A standby whose sm_priority is raised above the master's (opensm.conf edited, SIGHUP — a
    planned handover) says so to the master with a Trap 144, and the master hands over. ibsim drops
    the master's TrapRepress, so the Trap is never answered and the new master's first sweep waits
    for it for ever: before ibtool watched for stalls, `--wait-master` waited out its timeout with
    no SUBNET UP. Now it sees the stall within 30 s, names the lost Trap (OpenSM's ERR 5401 at
    exit, and the old master's log that received it), restarts the SM with its opensm.conf as
    edited, and the SM routes as MASTER."""
    ibtool("topo", "kns", *SHAPES["k4n2"], "--out", tmp_path / "plan", check=0)
    run = tmp_path / "run"
    try:
        d = json.loads(ibtool("sim", "up", tmp_path / "plan" / "topology.net", "--sms", "2", "--sm-priority", "14",
                              "--sm-priority", "13", "--engine", "hdor", *FAST_POLLS, "--out", run, "--json",
                              check=0, timeout=300).stdout)
        assert [s["state"] for s in d["sms"]] == ["MASTER", "STANDBY"]
        standby = json.loads((run / "sim" / "sim.json").read_text())["sms"][1]
        with open(standby["conf"], "a") as fh:
            fh.write("sm_priority 15\n")
        os.kill(standby["pid"], signal.SIGHUP)
        t0 = time.monotonic()
        took = sm(run, "--wait-master", "--sm", "2", "--timeout", "90", check=None)
        assert took["ok"] and took["state"] == "MASTER" and took["engine"] == "hdor", took
        [stall] = took["stalls"]
        assert stall["sms"] == [2] and stall["states"] == {"2": "MASTER"} and stall["retried"], stall
        assert stall["after_s"] < 30 and time.monotonic() - t0 < 60, stall
        assert "its Trap 144 to SM 1, whose TrapRepress ibsim drops" in stall["lost"][0], stall
        logs = sorted((run / "sim" / "sm-2").glob("opensm-*.log"))
        assert len(logs) == 2 and "ERR 5401" in logs[0].read_text() and "SUBNET UP" not in logs[0].read_text()
        assert "sm_priority 15" in sorted((run / "sim" / "sm-2").glob("opensm-*.conf"))[-1].read_text()
        st = json.loads(ibtool("sim", "status", run, "--json", check=0).stdout)
        assert [(s["state"], s["engine"]) for s in st["sms"]] == [("STANDBY", None), ("MASTER", "hdor")]
    finally:
        ibtool("sim", "down", run)


@pytest.mark.parametrize("fabric", ["k4n2"], indirect=True)
def test_the_old_master_returns_under_load(fabric):
    """The issue's case: the master dies, the standby takes over, the old master starts again and
    takes mastership back. Under CPU load (busy loops beside it: IBTOOL_FAULT_MATRIX=full runs 8
    rounds under 3, `make test` one round as it comes) that return stalled in 5 of 11 rounds at load 11-14
    (its Trap 144 to the standby-to-be lost, or the master's SMInfo query to it): `--start` waited
    its whole timeout. Every round now ends with SM 1 MASTER with tables by hdor; a stall met on the
    way was seen within 30 s and retried."""
    run, d, net, cable = fabric
    rounds, burners = (8, 3) if FULL else (1, 0)
    loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(burners)]
    try:
        for _ in range(rounds):
            assert sm(run, "--kill")["signal"] == "SIGKILL"
            took = sm(run, "--wait-master", "--sm", "2", "--timeout", "120", check=None)
            assert took["ok"] and took["state"] == "MASTER", took
            back = sm(run, "--start", "--timeout", "120", check=None)
            assert back["ok"] and back["state"] == "MASTER" and back["engine"] == "hdor", back
            for stall in took.get("stalls", []) + back.get("stalls", []):
                assert stall["retried"] and stall["after_s"] < 30, stall
    finally:
        for p in loops:
            p.kill()
            p.wait()
