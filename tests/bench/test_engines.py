"""Routing-engine switching against a local ibsim fabric: OpenSM restarted with each engine,
the engine that configured the tables read from its log, a silent fallback detected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchkit import HPCC_PARAMS, OMPI_ENV, ibtool, write_yaml
from ibtool.bench import engines
from ibtool.bench.runners.base import Local
from ibtool.errors import CheckFailed
from ibtool.sim.runner import UMAD2SIM, ibsim

pytestmark = pytest.mark.ibsim

NET = "/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca"


def sm_config(sim, d: Path) -> dict:
    return {"host": "local", "opensm": "opensm", "args": [], "timeout": 60, "stop": None, "workdir": str(d),
            "env": {"IBSIM_SOCKNAME": sim.sockname, "LD_PRELOAD": UMAD2SIM, "OSM_TMP_DIR": str(d),
                    "OSM_CACHE_DIR": str(d)}}


def running(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def alive(pidfile: Path) -> bool:
    try:
        return running(int(pidfile.read_text()))
    except (FileNotFoundError, ValueError):
        return False


def test_switch_confirms_the_engine_and_detects_fallback(tmp_path):
    with ibsim(NET, tmp_path / "sim") as sim:
        sm = sm_config(sim, tmp_path / "osm")
        t = Local()
        try:
            check_switch(t, sm, tmp_path)
        finally:
            engines.stop(t, sm)
        assert not (tmp_path / "osm" / "opensm.pid").exists()


def check_switch(t, sm, tmp_path):
    ok = engines.switch(t, sm, "minhop")
    assert ok["subnet_up"] and ok["engine"] == "minhop" and not ok["fallback"] and "error" not in ok
    first_pid = int((tmp_path / "osm" / "opensm.pid").read_text())
    bad = engines.switch(t, sm, "updn")  # no root GUIDs on this fabric: updn declines, minhop routes
    assert bad["subnet_up"] and bad["engine"] == "minhop" and bad["fallback"]
    assert bad["error"].startswith("OpenSM fell back: minhop configured the tables, not updn")
    assert int((tmp_path / "osm" / "opensm.pid").read_text()) != first_pid  # restarted, not reused
    assert not running(first_pid)  # the first OpenSM was stopped
    with pytest.raises(CheckFailed, match="fell back"):
        engines.require(bad)


def test_a_users_opensm_conf_without_log_flush_is_refused_before_opensm_is_stopped(tmp_path):
    """sm.args -F FILE: OpenSM would buffer its log (SUBNET UP only at exit) and ibtool would wait for
    its timeout; the file is checked first, and the running OpenSM is left running."""
    with ibsim(NET, tmp_path / "sim") as sim:
        sm = sm_config(sim, tmp_path / "osm")
        t = Local()
        try:
            assert engines.switch(t, sm, "minhop")["engine"] == "minhop"
            pid = int((tmp_path / "osm" / "opensm.pid").read_text())
            (tmp_path / "osm" / "mine.conf").write_text("force_log_flush TRUE\nforce_log_flush FALSE  # last wins\n")
            with pytest.raises(CheckFailed) as e:
                engines.switch(t, {**sm, "args": ["-F", "mine.conf"]}, "minhop")
            assert str(e.value).startswith("sm.args -F mine.conf: it must set force_log_flush TRUE")
            assert running(pid)  # refused before anything was stopped
            with pytest.raises(CheckFailed, match=r"sm.args -F nothere.conf: cannot read it on the SM node"):
                engines.switch(t, {**sm, "args": ["--config=nothere.conf"]}, "minhop")
            (tmp_path / "osm" / "mine.conf").write_text("force_log_flush TRUE\n")
            ok = engines.switch(t, {**sm, "args": [f"--config={tmp_path / 'osm' / 'mine.conf'}"]}, "minhop")
            assert ok["subnet_up"] and ok["engine"] == "minhop" and "error" not in ok
            assert not running(pid)
        finally:
            engines.stop(t, sm)


def test_campaign_switches_engines_and_fails_the_fallback_group(tmp_path):
    with ibsim(NET, tmp_path / "sim") as sim:
        inv = {
            "hosts": [{"name": "local", "address": "127.0.0.1", "slots": 2}],
            "runner": "local",
            "workdir": str(tmp_path / "work"),
            "mpi": {"launcher": "openmpi", "env": OMPI_ENV,
                    "args": ["--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "--mca", "pml", "ob1"]},
            "sm": {**sm_config(sim, tmp_path / "osm"), "verify_routes": True},
            "benchmarks": {"hpcc": {"params": HPCC_PARAMS, "nprocs": 2, "timeout": 120}},
        }
        write_yaml(tmp_path / "inv.yaml", inv)
        out = tmp_path / "camp"
        p = ibtool("bench", "run", "-i", tmp_path / "inv.yaml", "-b", "hpcc", "-e", "minhop,updn", "-o", out,
                   "--no-progress", check=1)
        assert "ok 1, failed 1" in p.stdout
        assert "engine updn: OpenSM fell back: minhop configured the tables, not updn" in p.stderr
        good = json.loads((out / "runs/minhop--hpcc--linear--r1/run.json").read_text())
        assert good["status"] == "ok" and good["engine"] == "minhop" and good["engine_check"] == "engines/minhop.json"
        bad = json.loads((out / "runs/updn--hpcc--linear--r1/run.json").read_text())
        assert bad["status"] == "failed" and "exit_code" not in bad  # never launched
        assert bad["reasons"][0].startswith("routing engine updn not in effect: OpenSM fell back")
        check = json.loads((out / "engines/updn.json").read_text())
        assert check["fallback"] is True and check["engine"] == "minhop" and check["requested_engine"] == "updn"
        minhop = json.loads((out / "engines/minhop.json").read_text())
        assert minhop["engine"] == "minhop" and minhop["verify_routes"]["ok"] is True and not minhop["error"]
        report = json.loads((out / "engines/minhop/verify_routes.json").read_text())
        assert report["schema"].startswith("ibtool-verify/") and report["ok"] is True
        assert "Switch1" in (out / "engines/minhop/ibnetdiscover.out").read_text()
        assert "verify_routes" not in check  # a fallback is not worth verifying
        assert not alive(tmp_path / "osm" / "opensm.pid")  # the campaign stops the OpenSM it started
