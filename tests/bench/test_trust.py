"""Issue 10: campaigns an admin can trust. Real sshd on 127.0.0.1/127.0.0.2, Open MPI, Debian's
hpcc, ibsim + OpenSM, single-node Slurm; every test names the numbered item it covers."""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support import FULL
from benchkit import (
    HPCC_PARAMS,
    IBTOOL,
    OMPI_ENV,
    REPO,
    ibtool,
    ssh_inventory,
    write_yaml,
)

from ibtool.bench import inventory
from ibtool.bench.runners.base import MARK, Local, end_processes
from ibtool.errors import InputError

LOCAL_MPI = {"launcher": "openmpi", "env": OMPI_ENV,
             "args": ["--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "--mca", "pml", "ob1"]}


def runs(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((out / "runs").glob("*/run.json"))}


def local_inventory(tmp_path: Path, **hpcc) -> dict:
    return {"hosts": [{"name": "here", "address": "127.0.0.1", "slots": 2}], "runner": "local",
            "workdir": str(tmp_path / "work"), "mpi": LOCAL_MPI,
            "benchmarks": {"hpcc": {"params": dict(HPCC_PARAMS), "nprocs": 2, "timeout": 120, **hpcc}}}


def kns_inventory(tmp_path: Path) -> Path:
    """A local inventory whose campaign brings up KNS 3^2 in ibsim under each engine, routes verified."""
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", tmp_path / "kns", check=0)
    data = local_inventory(tmp_path)
    data["sm"] = {"fabric": str(tmp_path / "kns" / "topology.net"), "workdir": str(tmp_path / "osm"),
                  "verify_routes": True, "timeout": 120}
    return write_yaml(tmp_path / "inv.yaml", data)


def marked(prefix: str) -> list[str]:
    """Processes of this machine carrying a bench run's mark (what `ps` over ssh would show: both
    inventory hosts are this machine)."""
    found, _ = end_processes(Local(), prefix, kill=False)
    return found.split() if found else []


def hpcc_up(out: Path, ranks: int = 1) -> bool:
    """RANKS HPCC ranks of the campaign in OUT run. By its campaign id (campaign.json names it from
    the start): under pytest-xdist another test's campaign may run HPCC beside this one."""
    try:
        cid = json.loads((out / "campaign.json").read_text())["campaign_id"]
    except (OSError, ValueError, KeyError):
        return False
    return len([x for x in marked(cid) if "(hpcc)" in x]) >= ranks


def wait_for(cond, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


# ------------------------------------------------------------------ 1: no mixed parameters

def test_1_resume_with_changed_parameters_is_refused_or_a_new_generation(tmp_path):
    data = local_inventory(tmp_path)
    inv = write_yaml(tmp_path / "inv.yaml", data)
    out = tmp_path / "camp"
    args = ["bench", "run", "-i", inv, "-b", "hpcc", "-r", "2", "-o", out, "--no-progress"]
    ibtool(*args, check=0)
    manifest = (out / "campaign.json").read_text()
    # an interrupted campaign: the second run was in flight
    import shutil
    shutil.rmtree(out / "runs" / "current--hpcc--linear--r2")
    data["benchmarks"]["hpcc"]["params"]["N"] = 240
    write_yaml(inv, data)
    p = ibtool(*args, check=2)
    assert "benchmarks.hpcc.params.N: 200 in the stored campaign, 240 now" in p.stderr
    assert "--new-parameters" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert (out / "campaign.json").read_text() == manifest  # not rewritten to claim 240
    assert not (out / "runs" / "current--hpcc--linear--r2").exists()
    data["mpi"] = {**LOCAL_MPI, "args": LOCAL_MPI["args"] + ["--mca", "btl_vader_single_copy_mechanism", "none"]}
    write_yaml(inv, data)
    p = ibtool(*args, check=2)  # MPI settings count too, and every differing key is counted
    assert "(also changed: mpi.args)" in p.stderr
    data["mpi"] = LOCAL_MPI
    write_yaml(inv, data)
    p = ibtool(*args, "--new-parameters", check=0)
    assert "new parameter generation 2: benchmarks.hpcc.params.N: 200 in the stored campaign, 240 now" in p.stderr
    r = runs(out)
    assert r["current--hpcc--linear--r1"]["generation"] == 1 and r["current--hpcc--linear--r1"]["request"]["N"] == 200
    assert r["current--hpcc--linear--r2"]["generation"] == 2 and r["current--hpcc--linear--r2"]["request"]["N"] == 240
    m = json.loads((out / "campaign.json").read_text())
    assert [g["generation"] for g in m["generations"]] == [1, 2]
    assert m["generations"][0]["measures"]["benchmarks.hpcc.params.N"] == 200
    assert m["generations"][1]["measures"]["benchmarks.hpcc.params.N"] == 240
    ibtool("bench", "report", out, check=0)
    md = (out / "report" / "report.md").read_text()
    assert "mixes parameter generations" in md and "generation 2" in md
    groups = {(x["engine"], x["runs"]) for x in csv.DictReader(open(out / "report" / "summary.csv"))
              if x["metric"] == "hpl"}
    assert groups == {("current (gen 1)", "1"), ("current (gen 2)", "1")}  # never pooled


# ------------------------------------------------------------------ 2: no orphaned jobs

@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_2_interrupt_ends_the_remote_process_tree(sshd, tmp_path, how):
    data = ssh_inventory(sshd, tmp_path / "remote")
    data["benchmarks"]["hpcc"].update({"params": {"N": 6000, "NB": 40}, "timeout": 600})
    inv = write_yaml(tmp_path / "inv.yaml", data)
    out = tmp_path / "camp"
    proc = subprocess.Popen([*IBTOOL, "bench", "run", "-i", str(inv), "-b", "hpcc", "-o", str(out), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    try:
        wait_for(lambda: hpcc_up(out, 4) or proc.poll() is not None, 120, "hpcc to start")
        assert proc.poll() is None, proc.communicate()
        cid = json.loads((out / "campaign.json").read_text())["campaign_id"]
        assert len([x for x in marked(cid) if "(hpcc)" in x]) == 4, marked(cid)  # 4 ranks, 2 per "host"
        os.kill(proc.pid, getattr(signal, how))
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + getattr(signal, how)  # as a shell reports a command ended by the signal
    assert marked(cid) == []  # no timeout, mpirun, hpcc rank or ssh of the run is left
    left = subprocess.run(["pgrep", "-af", str(tmp_path / "remote")], capture_output=True, text=True).stdout
    assert left == "", left
    assert not (out / "runs").exists() or not list((out / "runs").iterdir())  # nothing stored as if complete


def test_2_run_timeout_ends_the_remote_processes(sshd, tmp_path):
    data = ssh_inventory(sshd, tmp_path / "remote")
    data["benchmarks"]["hpcc"].update({"params": {"N": 6000, "NB": 40}, "timeout": 8})
    inv = write_yaml(tmp_path / "inv.yaml", data)
    ibtool("bench", "run", "-i", inv, "-b", "hpcc", "-o", tmp_path / "camp", "--no-progress", check=1)
    run = runs(tmp_path / "camp")["current--hpcc--linear--r1"]
    assert run["status"] == "failed" and run["exit_code"] == 124
    assert any("walltime" in x for x in run["reasons"])
    assert marked(run["marker"]) == []


def test_2_a_run_never_starts_while_an_earlier_runs_processes_live(sshd, tmp_path):
    data = ssh_inventory(sshd, tmp_path / "remote")
    data["benchmarks"]["hpcc"]["nprocs"] = 2
    inv = write_yaml(tmp_path / "inv.yaml", data)
    out = tmp_path / "camp"
    args = ["bench", "run", "-i", inv, "-b", "hpcc", "-m", "linear,random", "-o", out, "--no-progress"]
    ibtool(*args, "--dry-run", check=0)
    ibtool(*args, check=0)
    cid = json.loads((out / "campaign.json").read_text())["campaign_id"]
    import shutil
    shutil.rmtree(out / "runs" / "current--hpcc--random--r1")
    # an orphan of the "interrupted" run, as a hard kill of ibtool leaves it on a host
    orphan = subprocess.Popen(["sleep", "300"], env={**os.environ, MARK: f"{cid}/current--hpcc--random--r1"},
                              start_new_session=True)
    try:
        p = ibtool(*args, check=0)
        run = runs(out)["current--hpcc--random--r1"]
        assert run["status"] == "ok"
        assert "(sleep)" in run["runner_info"]["ended_before_start"]
        assert orphan.wait(timeout=10) is not None  # ended before the run started
        assert "resuming: 1 of 2 runs already stored, 1 to do" in p.stderr
    finally:
        if orphan.poll() is None:
            orphan.kill()


# ------------------------------------------------------------------ 3: same machine twice, sanity bounds

def test_3_two_hosts_at_one_address_are_refused_unless_deliberate(sshd, tmp_path):
    data = ssh_inventory(sshd, tmp_path / "remote")
    data["hosts"][1]["address"] = "127.0.0.1"
    with pytest.raises(InputError, match=r"inv.yaml: hosts\[1\].address: n2 and n1 \(hosts\[0\]\) are the same "
                                         r"machine \(127.0.0.1:\d+\).*set oversubscribe: true"):
        inventory.parse(data, "inv.yaml")
    data2 = ssh_inventory(sshd, tmp_path / "remote")
    data2["benchmarks"]["hpcc"]["hosts"] = ["n1", "n1"]
    with pytest.raises(InputError, match=r"benchmarks.hpcc.hosts: 'n1' is listed twice"):
        inventory.parse(data2, "inv.yaml")
    data["oversubscribe"] = True
    inv = write_yaml(tmp_path / "inv.yaml", data)
    ibtool("bench", "run", "-i", inv, "-b", "hpcc", "-o", tmp_path / "camp", "--no-progress", check=0)
    m = json.loads((tmp_path / "camp" / "campaign.json").read_text())
    assert m["measures"]["oversubscribe"] is True  # recorded with the campaign


def test_3_every_benchmark_has_default_sanity_bounds(tmp_path):
    from ibtool.bench.benchmarks.base import ParseResult
    from ibtool.bench.campaign import sanity_bounds
    from ibtool.bench.registry import BENCHMARKS

    for name in BENCHMARKS.names():
        assert BENCHMARKS.get(name).expect, f"{name} has no default bounds"
    r = ParseResult("hpcc")
    r.metric("pingpong_latency_avg", 4000.0, "us")  # ranks sharing a core: 4 ms
    r.metric("pingpong_latency_min", 3.0, "us")
    bounds = sanity_bounds("hpcc", r, {})
    r.check_expect(bounds)
    assert r.status == "invalid" and "pingpong_latency_avg = 4000 us is above the expected maximum 1000 us" in r.reasons[0]
    ok = ParseResult("hpcc")
    ok.metric("pingpong_latency_avg", 8.0, "us")
    ok.check_expect(sanity_bounds("hpcc", ok, {"pingpong_latency_avg": {"max": 5.0}}))  # inventory overrides
    assert ok.status == "invalid"
    fine = ParseResult("hpcc")
    fine.metric("pingpong_latency_avg", 8.0, "us")
    fine.check_expect(sanity_bounds("hpcc", fine, {}))  # missing metrics are not held against a run
    assert fine.status == "ok"


# ------------------------------------------------------------------ 5: mpirun reaches the hosts it was given

def test_5_mpirun_gets_the_inventorys_ssh_settings_and_check_runs_mpi(sshd, tmp_path):
    data = ssh_inventory(sshd, tmp_path / "remote")
    data["mpi"]["args"] = [a for a in data["mpi"]["args"]]
    i = data["mpi"]["args"].index("plm_rsh_agent")
    del data["mpi"]["args"][i - 1:i + 2]  # no hand-made agent: the sshd port must come from the inventory
    data["benchmarks"]["hpcc"]["nprocs"] = 2
    inv = write_yaml(tmp_path / "inv.yaml", data)
    p = ibtool("bench", "check", "-i", inv, check=0)
    assert "mpi          ok           2 ranks (n1, n2) answered" in p.stdout
    ibtool("bench", "run", "-i", inv, "-b", "hpcc", "-o", tmp_path / "camp", "--no-progress", check=0)
    run = runs(tmp_path / "camp")["current--hpcc--linear--r1"]
    assert run["status"] == "ok"
    assert "plm_rsh_args" in run["launch_argv"]
    cfg = (tmp_path / "camp/runs/current--hpcc--linear--r1/inputs/ssh_config").read_text()
    assert f"Host 127.0.0.2\n  Port {sshd['port']}" in cfg and f"UserKnownHostsFile {sshd['known_hosts']}" in cfg


def test_5_a_failed_launch_stores_mpiruns_own_stderr(sshd, tmp_path):
    data = ssh_inventory(sshd, tmp_path / "remote")
    i = data["mpi"]["args"].index("plm_rsh_agent")
    data["mpi"]["args"][i + 1] = f"ssh -p {sshd['closed_port']} -o BatchMode=yes"  # mpirun's ssh: wrong port
    data["benchmarks"]["hpcc"]["nprocs"] = 2
    inv = write_yaml(tmp_path / "inv.yaml", data)
    p = ibtool("bench", "check", "-i", inv, check=1)
    assert f"port {sshd['closed_port']}: Connection refused" in p.stdout
    ibtool("bench", "run", "-i", inv, "-b", "hpcc", "-o", tmp_path / "camp", "--no-progress", check=1)
    run = runs(tmp_path / "camp")["current--hpcc--linear--r1"]
    assert run["status"] == "failed"
    assert any(f"port {sshd['closed_port']}: Connection refused" in x for x in run["reasons"]), run["reasons"]


# ------------------------------------------------------------------ 4, 6, 11: engines on an emulated fabric

@pytest.mark.ibsim
def test_4_6_11_campaign_on_an_emulated_fabric(tmp_path):
    inv = kns_inventory(tmp_path)
    out = tmp_path / "camp"
    p = ibtool("bench", "run", "-i", inv, "-b", "hpcc", "-e", "updn,dfsssp", "-o", out, "--no-progress", check=1)
    assert "engine updn: OpenSM fell back: minhop configured the tables, not updn" in p.stderr
    r = runs(out)
    assert r["updn--hpcc--linear--r1"]["status"] == "failed"
    dfsssp = json.loads((out / "engines" / "dfsssp.json").read_text())
    assert dfsssp["engine"] == "dfsssp" and dfsssp["vls_needed"] == 2 and not dfsssp.get("error")
    vr = dfsssp["verify_routes"]  # traced (delivery checked); its credit loop on one VL NOT CHECKED, not failed
    assert (vr["ok"], vr["checked"], vr["verdict"], vr["exit_code"]) == (None, False, "NOT CHECKED", 5), vr
    assert vr["reason"].startswith("routes: deadlock freedom: NOT CHECKED: dfsssp gives each path its own SL")
    assert r["dfsssp--hpcc--linear--r1"]["status"] == "ok"  # not failed by a VL0-only credit loop
    for e in ("updn", "dfsssp"):  # each engine's OpenSM output kept with the campaign
        assert "SUBNET UP" in (out / "engines" / e / "opensm.log").read_text()
        assert (out / "engines" / e / "opensm.out").exists()
    assert "dfsssp tables configured" in (out / "engines" / "dfsssp" / "opensm.log").read_text()
    assert not subprocess.run(["pgrep", "-f", str(tmp_path / "osm")], capture_output=True).stdout  # all stopped


def test_6_opensm_error_is_quoted_and_kept(tmp_path):
    data = local_inventory(tmp_path)
    data["sm"] = {"host": "local", "workdir": str(tmp_path / "osm"), "timeout": 30,
                  "env": {"OSM_TMP_DIR": str(tmp_path / "osm"), "OSM_CACHE_DIR": str(tmp_path / "osm")}}
    inv = write_yaml(tmp_path / "inv.yaml", data)  # no ibsim, no HCA: OpenSM finds no port and exits
    out = tmp_path / "camp"
    ibtool("bench", "run", "-i", inv, "-b", "hpcc", "-e", "minhop", "-o", out, "--no-progress", check=1)
    run = runs(out)["minhop--hpcc--linear--r1"]
    assert "OpenSM exited with routing engine minhop: No local ports detected!" in run["reasons"][0]
    assert "No local ports detected!" in (out / "engines" / "minhop" / "opensm.out").read_text()


# ------------------------------------------------------------------ 7: Slurm controller checked

@pytest.mark.slurm
def test_7_check_asks_the_slurm_controller(slurm, tmp_path):
    data = {"hosts": [{"name": slurm["host"], "address": "127.0.0.1", "slots": 2}], "runner": "slurm",
            "workdir": str(tmp_path / "work"), "slurm": {"env": {"SLURM_CONF": str(slurm["conf"])},
                                                       "options": ["--partition=debug"]}}
    inv = write_yaml(tmp_path / "inv.yaml", data)
    p = ibtool("bench", "check", "-i", inv, check=0)
    assert "controller ok: Slurmctld(primary) at" in p.stdout and "is UP" in p.stdout
    assert "partition ok: debug* up 1 nodes idle" in p.stdout
    data["slurm"]["options"] = ["--partition=nosuch"]
    write_yaml(inv, data)
    p = ibtool("bench", "check", "-i", inv, check=3)
    assert "partition nosuch" in p.stdout
    dead = tmp_path / "slurm.conf"
    text = slurm["conf"].read_text()
    port = next(ln for ln in text.splitlines() if ln.startswith("SlurmctldPort="))
    from benchkit import free_port
    dead.write_text(text.replace(port, f"SlurmctldPort={free_port()}"))
    data["slurm"] = {"env": {"SLURM_CONF": str(dead)}}
    write_yaml(inv, data)
    p = ibtool("bench", "check", "-i", inv, check=3)
    assert "controller not reachable: scontrol ping" in p.stdout and "DOWN" in p.stdout
    assert p.stderr.startswith("ibtool: error: Slurm is not usable: controller not reachable")


# ------------------------------------------------------------------ 8, 9, 10, 12: tooling

def test_8_to_12_parse_progress_list_compare_json_report(tmp_path):
    inv = write_yaml(tmp_path / "inv.yaml", local_inventory(tmp_path))
    a, b = tmp_path / "a", tmp_path / "b"
    args = ["bench", "run", "-i", inv, "-b", "hpcc", "-m", "linear,random", "-r", "2", "--no-progress"]
    p = ibtool(*args, "-o", a, check=0)
    # 9: one line per run start and end, not silence
    err = p.stderr.splitlines()
    assert err[0] == "[1/4] start hpcc mapping=linear engine=current repeat=1"
    assert err[1].startswith("[1/4] end   hpcc mapping=linear engine=current repeat=1: ok pingpong_latency_avg=")
    assert len([x for x in err if "] end " in x]) == 4
    import shutil
    shutil.rmtree(a / "runs" / "current--hpcc--random--r2")
    p = ibtool(*args, "-o", a, check=0)
    assert "1 runs done (3 stored before)" in p.stdout and "campaign: 4 of 4 runs stored: ok 4" in p.stdout
    # 10: --json on run, dry-run honours stored runs
    p = ibtool(*args, "-o", a, "--dry-run", "--json", check=0)
    plan = json.loads(p.stdout)["runs"]
    assert [x["will_run"] for x in plan] == [False] * 4 and all(x["stored"] == "ok" for x in plan)
    assert plan[2]["mapping_files"]["rankfile.txt"].startswith("rank 0=127.0.0.1 slot=")
    p = ibtool(*args, "-o", b, "--json", check=0)
    res = json.loads(p.stdout)
    assert res["counts"]["ok"] == 4 and len(res["runs"]) == 4 and res["runs"][0]["figure"].startswith("pingpong")
    # 8: parse a stored run directory
    p = ibtool("bench", "parse", "hpcc", a / "runs" / "current--hpcc--linear--r1", check=0)
    assert p.stdout.startswith("hpcc: ok") and "param N = 200" in p.stdout
    # 10: list, filtered, JSON
    p = ibtool("bench", "list", a, "--json", check=0)
    rows = json.loads(p.stdout)
    assert [r["run_id"] for r in rows] == json.loads((a / "campaign.json").read_text())["runs"]
    assert all(r["status"] == "ok" for r in rows)
    p = ibtool("bench", "list", a, "--status", "failed", check=0)
    assert p.stdout.strip() == "0 runs"
    p = ibtool("bench", "list", a, "--engine", "current", check=0)
    assert "current--hpcc--random--r2" in p.stdout and "4 runs" in p.stdout
    # 10: compare two campaigns
    p = ibtool("bench", "compare", a, b, "--json", check=0)
    cells = json.loads(p.stdout)
    lat = [c for c in cells if c["metric"] == "pingpong_latency_avg"]
    assert {(c["engine"], c["mapping"]) for c in lat} == {("current", "linear"), ("current", "random")}
    for c in lat:
        assert c["n_a"] == c["n_b"] == 2 and c["ratio"] == pytest.approx(c["mean_b"] / c["mean_a"], rel=1e-5)
        assert 0 <= c["p_value"] <= 1
    p = ibtool("bench", "compare", a, b, "--metric", "hpl", check=0)
    assert "hpl" in p.stdout and "2 cells compared" in p.stdout
    # 12: report: HPL figure, separated whiskers, rounded numbers, seed once
    p = ibtool("bench", "report", a, "--json", check=0)
    rep = json.loads(p.stdout)
    assert "hpcc_hpl" in rep["figures"] and "hpcc_hpl.svg" in rep["files"]
    svg = (a / "report" / "hpcc_pingpong_latency.svg").read_text()
    assert "min..max over repeats" in svg and "own min..max" in svg
    for row in csv.DictReader(open(a / "report" / "summary.csv")):
        for k in ("mean", "min", "max"):
            assert len(row[k].split("e")[0].replace("-", "").replace(".", "").lstrip("0")) <= 6, row
    for run in runs(a).values():
        assert "seed" not in run and ("seed" in run["mapping"])
        assert (run["mapping"]["seed"] is None) == (run["mapping"]["policy"] == "linear")


def test_12_parsed_figures_carry_no_float_noise():
    from ibtool.bench.benchmarks.base import ParseResult
    r = ParseResult("hpcc")
    r.metric("hpl", 8.86557e-04 * 1000.0, "Gflop/s")
    assert repr(r.metrics["hpl"]["value"]) == "0.886557"


# ------------------------------------------------------------------ 13: host key error

def test_13_unknown_host_key_names_the_files_and_the_keyscan_line(sshd, tmp_path):
    from ibtool.bench.runners.ssh import SSH
    from ibtool.errors import EnvironmentProblem
    inv = inventory.parse(ssh_inventory(sshd, tmp_path / "remote", known_hosts=sshd["empty_known_hosts"]))
    with pytest.raises(EnvironmentProblem) as e:
        SSH(inv.host("n2")).run("true", 10)
    kh = sshd["empty_known_hosts"]
    assert f"host key unknown (not in {kh})" in str(e.value)
    assert str(e.value).endswith(f"ssh-keyscan -p {sshd['port']} 127.0.0.2 >> {kh}")


# ------------------------------------------------------------------ done when: interrupted 3 times

def test_done_when_a_campaign_interrupted_three_times_ends_like_an_uninterrupted_one(sshd, tmp_path):
    """`make test-full`: 6 runs interrupted by SIGINT, SIGTERM and SIGKILL; `make test`: 2 runs and
    SIGKILL, the one no handler sees (test_2_* interrupt by SIGINT and SIGTERM)."""
    data = ssh_inventory(sshd, tmp_path / "remote")
    data["benchmarks"]["hpcc"]["nprocs"] = 2
    inv = write_yaml(tmp_path / "inv.yaml", data)
    repeats = 3 if FULL else 1
    base = ["bench", "run", "-i", str(inv), "-b", "hpcc", "-m", "linear,random", "-r", str(repeats), "--seed", "7",
            "--no-progress"]
    ibtool(*base, "-o", tmp_path / "whole", check=0)
    out = tmp_path / "cut"
    rnd = random.Random(10)
    signals = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL] if FULL else [signal.SIGKILL]
    for sig in signals:
        proc = subprocess.Popen([*IBTOOL, *base, "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=REPO)
        # a random point inside a run: once its hpcc ranks are up (a signal sent at a fixed delay
        # once landed after the whole campaign had run on a quiet machine, proving nothing)
        wait_for(lambda: hpcc_up(out) or proc.poll() is not None, 120, "hpcc to start")
        time.sleep(rnd.uniform(0.0, 1.0))
        if proc.poll() is None:
            proc.send_signal(sig)
        proc.communicate(timeout=120)
        assert not (out / ".partial").exists() or all(p.name.startswith("current--") for p in
                                                       (out / ".partial").iterdir())
    assert len(runs(out)) < 2 * repeats, "the interruptions came too late to interrupt anything"
    ibtool(*base, "-o", out, check=0)
    whole, cut = runs(tmp_path / "whole"), runs(out)
    assert set(whole) == set(cut) and len(cut) == 2 * repeats
    for rid, w in whole.items():
        c = cut[rid]
        for k in ("benchmark", "engine", "repeat", "status", "request", "nprocs", "generation"):
            assert c[k] == w[k], (rid, k)
        assert c["mapping"] == w["mapping"]  # same placement and seed
        mw = json.loads((tmp_path / "whole/runs" / rid / "metrics.json").read_text())
        mc = json.loads((out / "runs" / rid / "metrics.json").read_text())
        assert set(mc["metrics"]) == set(mw["metrics"]) and mc["params"] == mw["params"]
        # every figure is parsed from the run's own output
        from ibtool.bench.benchmarks.base import RunFiles
        from ibtool.bench.registry import BENCHMARKS
        again = BENCHMARKS.get("hpcc").parse(RunFiles.from_path(out / "runs" / rid))
        assert again.metrics == mc["metrics"]
    cid = json.loads((out / "campaign.json").read_text())["campaign_id"]
    assert marked(cid) == []  # nothing of it left on the hosts
    ps = subprocess.run(["pgrep", "-af", str(tmp_path / "remote")], capture_output=True, text=True).stdout
    assert ps == "", ps


@pytest.mark.parametrize("runner", ["ssh", "local"])
def test_a_kill_9_of_ibtool_ends_the_ranks_at_once(runner, request, tmp_path):
    """kill -9 of `bench run` mid-run: the job (mpirun, its daemon on the other host, every HPCC
    rank) ends within seconds, not at the job's timeout nor at the campaign's next start."""
    if runner == "ssh":
        data = ssh_inventory(request.getfixturevalue("sshd"), tmp_path / "remote")
        data["benchmarks"]["hpcc"].update(nprocs=2, params={"N": 6000, "NB": 40}, timeout=600)
    else:
        data = local_inventory(tmp_path, params={"N": 6000, "NB": 40}, timeout=600)
    inv = write_yaml(tmp_path / "inv.yaml", data)
    out = tmp_path / "camp"
    proc = subprocess.Popen([*IBTOOL, "bench", "run", "-i", str(inv), "-b", "hpcc", "-m", "linear", "-o", str(out),
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    wait_for(lambda: hpcc_up(out, 2) or proc.poll() is not None, 120, "hpcc to start")
    assert proc.poll() is None, proc.communicate()
    cid = json.loads((out / "campaign.json").read_text())["campaign_id"]
    proc.kill()
    proc.communicate(timeout=30)
    try:
        # HPL of N=6000 alone runs for minutes on this machine: gone within 20 s is the watcher's doing
        wait_for(lambda: marked(cid) == [], 20, f"the run's processes to end: {marked(cid)}")
    finally:
        end_processes(Local(), cid)  # on failure, leave no ranks to the tests after
    assert not runs(out)


def test_9_on_a_terminal_the_bar_names_the_run_in_progress(tmp_path):
    import pty
    inv = write_yaml(tmp_path / "inv.yaml", local_inventory(tmp_path))
    master, slave = pty.openpty()
    proc = subprocess.Popen([*IBTOOL, "bench", "run", "-i", str(inv), "-b", "hpcc", "-m", "linear,random",
                             "-o", str(tmp_path / "camp")], stdout=subprocess.PIPE, stderr=slave, cwd=REPO)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed: ibtool exited
            break
        if not chunk:
            break
        seen += chunk
    proc.communicate(timeout=120)
    os.close(master)
    text = seen.decode(errors="replace")
    assert proc.returncode == 0, text
    assert "running current--hpcc--linear--r1" in text and "running current--hpcc--random--r1" in text
    assert "] start " not in text  # the bar, not the lines meant for logs


def slurm_inventory(slurm, tmp_path: Path) -> Path:
    data = {"hosts": [{"name": slurm["host"], "address": "127.0.0.1", "slots": 2}], "runner": "slurm",
            "workdir": str(tmp_path / "shared"),
            "mpi": {"launcher": "srun", "args": ["--mpi=pmix"],
                    "env": {**OMPI_ENV, "OMPI_MCA_btl": "self,vader", "OMPI_MCA_pml": "ob1"}},
            "slurm": {"env": {"SLURM_CONF": str(slurm["conf"])}, "poll": 0.5, "options": ["--partition=debug"]},
            "benchmarks": {"hpcc": {"params": {"N": 6000, "NB": 40}, "nprocs": 2, "timeout": 600}}}
    return write_yaml(tmp_path / "inv.yaml", data)


def slurm_queue(slurm) -> str:
    """`<job id> <state>` per job in the queue."""
    return subprocess.run(["squeue", "-h", "-o", "%i %T"], env=slurm["env"], capture_output=True,
                          text=True).stdout.strip()


@pytest.mark.slurm
def test_2_interrupt_cancels_the_slurm_job(slurm, tmp_path):
    inv = slurm_inventory(slurm, tmp_path)
    out = tmp_path / "camp"
    proc = subprocess.Popen([*IBTOOL, "bench", "run", "-i", str(inv), "-b", "hpcc", "-o", str(out), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    try:
        wait_for(lambda: hpcc_up(out) or proc.poll() is not None, 180, "hpcc under Slurm")
        assert proc.poll() is None, proc.communicate()
        assert "RUNNING" in slurm_queue(slurm)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    wait_for(lambda: slurm_queue(slurm) == "", 60, "the job to leave the queue")  # scancel'ed, not left running
    cid = json.loads((out / "campaign.json").read_text())["campaign_id"]
    wait_for(lambda: marked(cid) == [], 30, "the job's ranks to end")


@pytest.mark.slurm
def test_2_a_slurm_job_left_by_a_kill_9_is_cancelled_when_the_campaign_resumes(slurm, tmp_path):
    """A kill -9 of ibtool cannot scancel its job (Slurm runs it on to its time limit); the next
    start of the same campaign cancels it before it submits anything."""
    inv = slurm_inventory(slurm, tmp_path)
    out = tmp_path / "camp"
    args = [*IBTOOL, "bench", "run", "-i", str(inv), "-b", "hpcc", "-o", str(out), "--no-progress"]
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    again = None
    try:
        wait_for(lambda: hpcc_up(out) or first.poll() is not None, 180, "hpcc under Slurm")
        assert first.poll() is None, first.communicate()
        first.kill()
        first.communicate(timeout=30)
        (old,) = slurm_queue(slurm).splitlines()
        assert old.endswith("RUNNING")  # Slurm's job outlived ibtool
        old_id = old.split()[0]
        again = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
        wait_for(lambda: (q := slurm_queue(slurm)) and old_id not in q or again.poll() is not None, 120,
                 "the stale job to leave the queue and a new one to be submitted")
        assert again.poll() is None, again.communicate()
        (new,) = slurm_queue(slurm).splitlines()
        assert new.split()[0] != old_id
        state = subprocess.run(["scontrol", "show", "job", old_id], env=slurm["env"], capture_output=True,
                               text=True).stdout
        assert "JobState=CANCELLED" in state, state  # cancelled, not finished
        again.send_signal(signal.SIGINT)
        again.communicate(timeout=120)
        assert again.returncode == 130
    finally:
        for p in (first, again):
            if p is not None and p.poll() is None:
                p.kill()
        ids = [ln.split()[0] for ln in slurm_queue(slurm).splitlines()]
        if ids:
            subprocess.run(["scancel", *ids], env=slurm["env"])
    wait_for(lambda: slurm_queue(slurm) == "", 60, "the queue to empty")


# ------------------------------------------------------------------ issue 24 item 8

@pytest.mark.ibsim
def test_an_engine_whose_tables_have_a_credit_loop_is_said_so(tmp_path):
    """minhop on a KNS routes (no fallback) but closes a credit loop on VL0: its runs fail with that,
    not with "routing engine minhop not in effect" (issue 24)."""
    inv = kns_inventory(tmp_path)
    out = tmp_path / "camp"
    ibtool("bench", "run", "-i", inv, "-b", "hpcc", "-e", "minhop", "-o", out, "--no-progress", check=1)
    run = runs(out)["minhop--hpcc--linear--r1"]
    assert run["status"] == "failed" and "exit_code" not in run  # never launched
    (reason,) = run["reasons"]
    assert reason.startswith("routing engine minhop is in effect, but its tables fail verification: routes: "
                             "deadlock freedom: credit loop: a cycle of "), reason
    assert "not in effect" not in reason


def test_ranks_on_one_machine_are_said_to_measure_no_network(tmp_path):
    """Issue 24: a campaign whose ranks all share one host measures no network; check and report say so."""
    inv = write_yaml(tmp_path / "inv.yaml", local_inventory(tmp_path))
    p = ibtool("bench", "check", "-i", inv, check=0)
    lines = p.stdout.splitlines()
    assert "network      NONE: every compute host (here) is one machine, this host (loopback): a campaign's " \
           "ranks talk over its memory and loopback, and measure no network" in lines, p.stdout
    mpi = next(ln for ln in lines if ln.startswith("mpi "))
    assert "; both ranks ran on " in mpi and mpi.endswith(": no network between them"), mpi
    out = tmp_path / "camp"
    ibtool("bench", "run", "-i", inv, "-b", "hpcc", "-o", out, "--no-progress", check=0)
    r = ibtool("bench", "report", out, check=0)
    assert "note: 1 of 1 runs had all their ranks on one machine (this host (loopback)): they measure no network" \
        in r.stdout
    md = (out / "report" / "report.md").read_text()
    assert "**1 of 1 runs had all their ranks on one machine (this host (loopback)): they measure its memory and " \
           "loopback, not the network**" in md
