"""Campaigns over a real OpenSSH server (127.0.0.1 and 127.0.0.2 as two hosts), Open MPI and
Debian's hpcc."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from benchkit import IBTOOL, REPO, ibtool, ssh_inventory, write_yaml
from ibtool.bench import inventory
from ibtool.bench.runners.ssh import SSH, SSHPool
from ibtool.errors import EnvironmentProblem

pytestmark = pytest.mark.ssh


def runs(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((out / "runs").glob("*/run.json"))}


@pytest.fixture(scope="module")
def campaign(sshd, tmp_path_factory):
    """hpcc on n1+n2 (linear, random) and hpcc_far on n1+n3, where n3 has no SSH server."""
    d = tmp_path_factory.mktemp("ssh_campaign")
    far = {"type": "hpcc", "hosts": ["n1", "n3"], "params": {"N": 200, "NB": 20}, "nprocs": 2, "timeout": 60}
    n3 = {"name": "n3", "address": "127.0.0.3", "slots": 2, "ssh": {"port": sshd["closed_port"]}}
    inv = write_yaml(d / "inv.yaml", ssh_inventory(sshd, d / "remote", extra_benchmarks={"hpcc_far": far},
                                                   hosts_extra=[n3]))
    out = d / "camp"
    p = ibtool("bench", "run", "--inventory", inv, "--benchmarks", "hpcc,hpcc_far", "--mappings", "linear,random",
               "--out", out)
    return {"dir": d, "inv": inv, "out": out, "proc": p}


def test_campaign_runs_hpcc_over_ssh_with_linear_and_random_mapping(campaign):
    p, out = campaign["proc"], campaign["out"]
    assert p.returncode == 1, p.stderr  # the hpcc_far runs fail (n3 unreachable); exit code says so
    assert "4 runs done" in p.stdout and "ok 2, failed 2" in p.stdout
    assert "2 run(s) failed" in p.stderr
    assert "bench" in p.stderr  # the progress bar went to stderr
    r = runs(out)
    assert set(r) == {f"current--{b}--{m}--r1" for b in ("hpcc", "hpcc_far") for m in ("linear", "random")}
    for m in ("linear", "random"):
        run = r[f"current--hpcc--{m}--r1"]
        assert run["status"] == "ok", run["reasons"]
        assert run["exit_code"] == 0 and run["hosts"] == ["n1", "n2"]
        assert run["mapping"]["policy"] == m
        ranks = run["mapping"]["ranks"]
        assert sorted(x["host"] for x in ranks) == ["n1", "n1", "n2", "n2"]
        d = out / "runs" / f"current--hpcc--{m}--r1"
        rankfile = (d / "inputs" / "rankfile.txt").read_text()
        assert rankfile == "".join(f"rank {x['rank']}={x['address']} slot={x['slot']}\n" for x in ranks)
        assert "--rankfile rankfile.txt" in run["command"]
        assert run["launch_argv"][:2] == ["mpirun", "-np"]
        assert (d / "inputs" / "hpccinf.txt").read_text().splitlines()[5].split()[0] == "200"
        assert "End of HPC Challenge tests." in (d / "outputs" / "hpccoutf.txt").read_text()
        metrics = json.loads((d / "metrics.json").read_text())
        assert metrics["status"] == "ok" and metrics["params"]["nprocs"] == 4 and metrics["params"]["N"] == 200
        assert metrics["metrics"]["pingpong_latency_avg"]["unit"] == "us"
        assert metrics["metrics"]["pingpong_latency_avg"]["value"] > 0
        assert metrics["metrics"]["natural_ring_bandwidth"]["value"] > 0
    env = r["current--hpcc--linear--r1"]["runner_info"]["remote_environment"]
    assert env["uname"].startswith("Linux") and "Open MPI" in env["launcher_version"]
    lin = [x["host"] for x in r["current--hpcc--linear--r1"]["mapping"]["ranks"]]
    assert lin == ["n1", "n1", "n2", "n2"]
    assert r["current--hpcc--random--r1"]["mapping"]["seed"] is not None
    assert r["current--hpcc--linear--r1"]["mapping"]["seed"] is None


def test_random_mapping_is_reproducible_from_its_seed(campaign):
    from ibtool.bench.mapping import make
    inv = inventory.load(campaign["inv"])
    run = runs(campaign["out"])["current--hpcc--random--r1"]
    again = make("random", inv.run_hosts(inv.bench("hpcc")), 4, run["mapping"]["seed"])
    assert again.as_dict() == run["mapping"]


def test_unreachable_host_fails_its_runs_with_a_clear_message(campaign, sshd):
    r = runs(campaign["out"])
    for m in ("linear", "random"):
        run = r[f"current--hpcc_far--{m}--r1"]
        assert run["status"] == "failed"
        assert run["reasons"] == [f"n3 (127.0.0.3:{sshd['closed_port']}): connection refused "
                                  "(no SSH server on that port)"]
        assert run["exit_code"] is None


def test_nothing_secret_is_stored(campaign, sshd):
    key_lines = [ln for ln in sshd["key"].read_text().splitlines() if ln and "PRIVATE KEY" not in ln]
    for path in campaign["out"].rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode(errors="replace")
            assert "PRIVATE KEY" not in text, path
            assert not any(ln in text for ln in key_lines), path


def test_report_from_the_ssh_campaign(campaign):
    p = ibtool("bench", "report", campaign["out"], check=0)
    rep = campaign["out"] / "report"
    assert f"-> {rep}" in p.stdout
    rows = list(csv.DictReader(open(rep / "summary.csv")))
    lat = {(x["engine"], x["mapping"]) for x in rows if x["benchmark"] == "hpcc" and x["metric"] == "pingpong_latency_avg"}
    assert lat == {("current", "linear"), ("current", "random")}
    results = list(csv.DictReader(open(rep / "results.csv")))
    failed = [x for x in results if x["benchmark"] == "hpcc_far"]
    assert len(failed) == 2 and all("connection refused" in x["reason"] for x in failed)
    md = (rep / "report.md").read_text()
    assert "## hpcc: pingpong_latency_avg [us]" in md and "| current |" in md
    assert "hpcc_far--linear--r1 | failed" in md
    for name in ("hpcc_pingpong_latency", "hpcc_random_ring_bandwidth", "hpcc_ptrans"):
        assert (rep / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (rep / f"{name}.svg").read_text()[:1000]
    assert not list(rep.glob("hpcc_far_*.png"))  # no valid result, no figure


def test_unknown_host_key_is_refused(sshd, tmp_path):
    inv = inventory.parse(ssh_inventory(sshd, tmp_path / "remote", known_hosts=sshd["empty_known_hosts"]))
    t = SSH(inv.host("n1"))
    with pytest.raises(EnvironmentProblem, match="host key unknown .*refusing to connect"):
        t.run("true", 10)
    # and through a campaign: the run fails, nothing is created on the host
    write_yaml(tmp_path / "inv.yaml", ssh_inventory(sshd, tmp_path / "remote", known_hosts=sshd["empty_known_hosts"]))
    p = ibtool("bench", "run", "-i", tmp_path / "inv.yaml", "-b", "hpcc", "-o", tmp_path / "camp", "--no-progress",
               check=1)
    run = runs(tmp_path / "camp")["current--hpcc--linear--r1"]
    assert run["status"] == "failed" and "host key unknown" in run["reasons"][0]
    assert not (tmp_path / "remote").exists()
    assert "1 run(s) failed" in p.stderr


def test_remote_arguments_are_shell_quoted(sshd, tmp_path):
    inv = inventory.parse(ssh_inventory(sshd, tmp_path / "remote"))
    t = SSH(inv.host("n2"))
    from ibtool.bench.runners.base import shell_command
    odd = "a b; touch " + str(tmp_path / "pwned") + " $(id) `x` 'q' \"dq\""
    rc, out, err = t.run(shell_command(["printf", "%s\\n", odd], {"V": "x y;z"}), 10)
    assert rc == 0 and out == odd + "\n"
    assert not (tmp_path / "pwned").exists()
    t.close()


def test_check_reaches_every_host_and_names_the_unreachable(campaign, sshd):
    p = ibtool("bench", "check", "-i", campaign["inv"], check=3)
    lines = {ln.split()[0]: ln for ln in p.stdout.splitlines()}
    assert " ok " in lines["n1"] and "Linux" in lines["n1"] and "Open MPI" in lines["n1"]
    assert " ok " in lines["n2"]
    assert "UNREACHABLE" in lines["n3"] and "connection refused" in lines["n3"]
    assert p.stderr.strip() == "ibtool: error: 1 of 3 hosts unreachable: n3"


def test_jump_host(sshd, tmp_path):
    data = ssh_inventory(sshd, tmp_path / "remote")
    data["hosts"][1]["ssh"] = {"jump": "n1"}
    inv = inventory.parse(data)
    pool = SSHPool(inv)
    try:
        t = pool.get(inv.host("n2"))
        rc, out, _ = t.run("echo $SSH_CONNECTION", 10)
        assert rc == 0 and out.split()[2] == "127.0.0.2"  # client ip, port, server ip, port
        assert t.jump is pool.get(inv.host("n1")) and t.jump._client is not None  # tunnelled through n1
    finally:
        pool.close()


def test_interrupted_campaign_resumes_without_redoing_runs(sshd, tmp_path):
    data = ssh_inventory(sshd, tmp_path / "remote")
    data["benchmarks"]["hpcc"]["nprocs"] = 2  # one rank per host: quicker on a busy 2-core machine
    inv = write_yaml(tmp_path / "inv.yaml", data)
    out = tmp_path / "camp"
    args = [*IBTOOL, "bench", "run", "-i", str(inv), "-b", "hpcc", "-m", "linear,random", "-r", "1",
            "-o", str(out), "--no-progress"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    deadline = time.monotonic() + 120
    while not list((out / "runs").glob("*/run.json")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no run finished"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # as hard as an interruption gets
    proc.wait()
    before = {k: (out / "runs" / k / "run.json").read_text() for k in runs(out)}
    assert len(before) == 1, "the campaign finished before it could be interrupted"
    p = ibtool(*args[len(IBTOOL):], check=0)
    assert "resuming: 1 of 2 runs already stored, 1 to do" in p.stderr
    assert "1 runs done (1 stored before): ok 1" in p.stdout
    after = runs(out)
    assert len(after) == 2 and all(r["status"] == "ok" for r in after.values())
    for k, text in before.items():  # finished runs kept as they were, not redone
        assert (out / "runs" / k / "run.json").read_text() == text
    assert not list((out / ".partial").iterdir())
    p = ibtool(*args[len(IBTOOL):], check=0)  # a third start has nothing left to do
    assert "resuming: 2 of 2 runs already stored, 0 to do" in p.stderr
    p = ibtool(*args[len(IBTOOL):-1], "-r", "2", check=2)  # another campaign in the same directory
    assert "holds another campaign (different repeat)" in p.stderr
