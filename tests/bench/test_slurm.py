"""The same HPCC campaign through the slurm runner, on a real single-node Slurm started by the
tests (slurmctld + slurmd + munged, generated slurm.conf)."""

from __future__ import annotations

import csv
import json

import pytest

from benchkit import HPCC_PARAMS, OMPI_ENV, ibtool, write_yaml

pytestmark = pytest.mark.slurm


def test_hpcc_campaign_through_slurm(slurm, tmp_path):
    inv = {
        "hosts": [{"name": slurm["host"], "address": "127.0.0.1", "slots": 2}],
        "runner": "slurm",
        "workdir": str(tmp_path / "shared"),
        "mpi": {"launcher": "srun", "args": ["--mpi=pmix"],
                "env": {**OMPI_ENV, "OMPI_MCA_btl": "self,vader", "OMPI_MCA_pml": "ob1"}},
        "slurm": {"env": {"SLURM_CONF": str(slurm["conf"])}, "poll": 0.5, "options": ["--partition=debug"]},
        "benchmarks": {"hpcc": {"params": HPCC_PARAMS, "nprocs": 2, "timeout": 300}},
    }
    write_yaml(tmp_path / "inv.yaml", inv)
    out = tmp_path / "camp"
    p = ibtool("bench", "run", "-i", tmp_path / "inv.yaml", "-b", "hpcc", "-m", "linear,random", "-o", out, check=0)
    assert "2 runs done (0 stored before): ok 2, failed 0" in p.stdout
    job_ids = set()
    for m in ("linear", "random"):
        d = out / "runs" / f"current--hpcc--{m}--r1"
        run = json.loads((d / "run.json").read_text())
        assert run["status"] == "ok", run["reasons"]
        assert run["exit_code"] == 0 and run["environment"]["runner"] == "slurm"
        info = run["runner_info"]
        assert info["slurm_state"] == "COMPLETED" and info["slurm_job_id"].isdigit()
        job_ids.add(info["slurm_job_id"])
        assert info["remote_environment"][1] == slurm["host"]
        assert f"SLURM_JOB_ID={info['slurm_job_id']} SLURM_JOB_NODELIST={slurm['host']}" in info["remote_environment"]
        script = (d / "inputs" / "job.sh").read_text()
        assert script.startswith("#!/bin/bash\n") and "#SBATCH --ntasks=2" in script
        assert f"#SBATCH --nodelist={slurm['host']}" in script and "#SBATCH --partition=debug" in script
        assert "srun --distribution=arbitrary -n 2 --mpi=pmix hpcc" in script
        assert "export SLURM_HOSTFILE=slurm_hostfile.txt" in script
        hostfile = (d / "inputs" / "slurm_hostfile.txt").read_text()
        assert hostfile == "".join(f"{x['host']}\n" for x in run["mapping"]["ranks"])
        metrics = json.loads((d / "metrics.json").read_text())
        assert metrics["params"]["nprocs"] == 2 and metrics["params"]["N"] == 200
        assert metrics["metrics"]["pingpong_latency_avg"]["value"] > 0
        assert list(d.glob("outputs/slurm-*.out"))
    assert len(job_ids) == 2
    ibtool("bench", "report", out, check=0)
    rows = list(csv.DictReader(open(out / "report" / "summary.csv")))
    assert {(r["mapping"]) for r in rows if r["metric"] == "random_ring_latency"} == {"linear", "random"}


def test_slurm_through_ssh_to_a_login_node(slurm, sshd, tmp_path):
    """sbatch/squeue run on the login node over SSH; files staged there with SFTP."""
    inv = {
        "hosts": [{"name": slurm["host"], "address": "127.0.0.1", "slots": 2}],
        "ssh": {"port": sshd["port"], "key": str(sshd["key"]), "known_hosts": str(sshd["known_hosts"])},
        "runner": "slurm",
        "workdir": str(tmp_path / "shared"),
        "mpi": {"launcher": "srun", "args": ["--mpi=pmix"],
                "env": {**OMPI_ENV, "OMPI_MCA_btl": "self,vader", "OMPI_MCA_pml": "ob1"}},
        "slurm": {"login": slurm["host"], "env": {"SLURM_CONF": str(slurm["conf"])}, "poll": 0.5},
        "benchmarks": {"hpcc": {"params": HPCC_PARAMS, "nprocs": 2, "timeout": 300}},
    }
    write_yaml(tmp_path / "inv.yaml", inv)
    out = tmp_path / "camp"
    logins = sshd["log"].read_text().count("Accepted publickey")
    p = ibtool("bench", "run", "-i", tmp_path / "inv.yaml", "-b", "hpcc", "-m", "random", "-o", out, "--no-progress",
               check=0)
    assert "1 runs done (0 stored before): ok 1" in p.stdout
    run = json.loads((out / "runs" / "current--hpcc--random--r1" / "run.json").read_text())
    assert run["runner_info"]["slurm_state"] == "COMPLETED"
    assert run["environment"]["login"] == slurm["host"]
    assert sshd["log"].read_text().count("Accepted publickey") > logins


def test_slurm_job_failure_is_reported(slurm, tmp_path):
    inv = {
        "hosts": [{"name": slurm["host"], "address": "127.0.0.1", "slots": 2}],
        "runner": "slurm",
        "workdir": str(tmp_path / "shared"),
        "mpi": {"launcher": "srun", "args": ["--mpi=pmix"], "env": OMPI_ENV},
        "slurm": {"env": {"SLURM_CONF": str(slurm["conf"])}, "poll": 0.5},
        "benchmarks": {"hpcc": {"binary": "/nonexistent/hpcc", "nprocs": 2, "timeout": 120}},
    }
    write_yaml(tmp_path / "inv.yaml", inv)
    out = tmp_path / "camp"
    p = ibtool("bench", "run", "-i", tmp_path / "inv.yaml", "-b", "hpcc", "-o", out, "--no-progress", check=1)
    run = json.loads((out / "runs" / "current--hpcc--linear--r1" / "run.json").read_text())
    assert run["status"] == "failed" and run["exit_code"] not in (0, None)
    assert any("no hpccoutf.txt" in r for r in run["reasons"])
    assert "/nonexistent/hpcc" in (out / "runs" / "current--hpcc--linear--r1" / "outputs" / "stderr.txt").read_text()
    assert "1 run(s) failed" in p.stderr
