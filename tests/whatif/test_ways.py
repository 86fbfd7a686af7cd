"""Where a what-if runs changes nothing it says: one local run, N local worker processes and the
tasks of a Slurm job array (on the real single-node Slurm the bench tests start) give byte-identical
results.json and results.csv; and a run killed with kill -9 resumes to the same results with no
failure computed twice and none lost."""

import collections
import json
import os
import signal
import subprocess
import time

import pytest
import yaml
from support import IBTOOL, ibtool

from ibtool.whatif import job as jobs
from ibtool.whatif import run


def _plan(tmp_path, k, n):
    plan = tmp_path / "plan"
    ibtool("topo", "kns", "--k", k, "--n", n, "--radix", 8, "--out", plan, check=0)
    ibtool("cabling", plan, "--out", plan / "cabling", check=0)  # cable IDs, labels, the SM host
    return plan


def _results(out):
    return (out / "results.json").read_bytes(), (out / "results.csv").read_bytes()


@pytest.mark.slurm
def test_slurm_array_local_workers_and_one_run_agree(slurm, tmp_path):
    plan = _plan(tmp_path, 4, 2)
    ibtool("whatif", "run", plan, "--out", tmp_path / "one", "--top", 0, check=0)
    ibtool("whatif", "run", plan, "--out", tmp_path / "two", "--workers", 2, "--chunks", 5, "--top", 0, check=0)
    inv = {"hosts": [{"name": slurm["host"], "address": "127.0.0.1", "slots": 2}], "runner": "slurm",
           "workdir": str(tmp_path / "shared"),
           "slurm": {"env": {"SLURM_CONF": str(slurm["conf"])}, "poll": 0.5, "options": ["--partition=debug"]}}
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(inv))
    ibtool("whatif", "run", plan, "--out", tmp_path / "arr", "--slurm", tmp_path / "inv.yaml", "--chunks", 3,
           "--top", 0, check=0)
    one = _results(tmp_path / "one")
    assert _results(tmp_path / "two") == one
    assert _results(tmp_path / "arr") == one
    # the array's tasks were Slurm's: three tasks of one array job, each its chunk
    job = jobs.Job.read(tmp_path / "arr")
    assert job.chunks == 3 and len(list((tmp_path / "arr" / "slurm").glob("exit_code-*.txt"))) == 3
    script = (tmp_path / "arr" / "slurm" / "job.sh").read_text()
    assert "#SBATCH --array=0,1,2" in script and "whatif chunk" in script
    rows = json.loads(one[0])["rows"]
    assert len(rows) == 32 + 8 + 16 and rows[0]["class"] == "subnet manager"
    cables = [r for r in rows if r["kind"] == "cable"]  # named by the plan's cable IDs, with their labels
    assert all(r["id"].startswith("C0") and len(r["parts"][0]["labels"]) == 2 for r in cables)


def test_kill_9_and_resume(tmp_path):
    """kill -9 of `whatif run` with two workers mid-way: its workers die with it (PR_SET_PDEATHSIG),
    every row written stays; the same command again routes only the rest."""
    plan = _plan(tmp_path, 4, 3)
    out = tmp_path / "wi"
    argv = [*IBTOOL, "whatif", "run", str(plan), "--out", str(out), "--workers", "2", "--chunks", "6", "--top", "0"]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 600
    while True:
        time.sleep(0.2)
        if (out / jobs.FILE).is_file():  # kill it once a chunk is done and another half-way
            job = jobs.Job.read(out)
            part = [k for k in range(job.chunks) if not run.chunk_path(out, k, "done").is_file()
                    and run.chunk_path(out, k, "jsonl").is_file()
                    and run.chunk_path(out, k, "jsonl").read_bytes().count(b"\n") >= 5]
            if run.finished(out, job) and part:
                break
        assert p.poll() is None and time.monotonic() < deadline, p.stderr.read().decode()[-2000:]
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    before = {k: run.chunk_path(out, k, "jsonl").read_bytes() for k in range(job.chunks)
              if run.chunk_path(out, k, "jsonl").is_file()}
    done_before = sum(b.count(b"\n") for b in before.values())
    logged_before = run.computed(out, job)
    assert 0 < done_before < len(job.failures)
    time.sleep(1)
    alive = subprocess.run(["pgrep", "-f", f"whatif chunk {out}"], capture_output=True, text=True).stdout.split()
    assert not alive, f"workers outlived the kill: {alive}"
    r = ibtool("whatif", "run", plan, "--out", out, "--workers", 2, "--chunks", 6, "--top", 0, check=0)
    assert "failures" in r.stderr
    # every row written before the kill is still there, byte for byte (a torn last line aside)
    had = set()
    for k, b in before.items():
        kept = b[:b.rfind(b"\n") + 1]
        assert run.chunk_path(out, k, "jsonl").read_bytes().startswith(kept)
        had |= {json.loads(ln)["id"] for ln in kept.splitlines()}
    # nothing lost: one row a failure; nothing computed twice: no failure with a row before the
    # kill computed after it, none computed twice after it (the workers' logs: a line after the row)
    rows = [json.loads(ln)["id"] for k in range(job.chunks) for ln in run.chunk_path(out, k, "jsonl").read_bytes()
            .splitlines()]
    assert sorted(rows) == sorted(f["id"] for f in job.failures)
    after = collections.Counter(run.computed(out, job)) - collections.Counter(logged_before)
    assert not had & set(after), sorted(had & set(after))[:5]
    assert set(after.values()) <= {1} and len(after) == len(job.failures) - len(had)
    res = json.loads((out / "results.json").read_text())
    assert len(res["rows"]) == len(job.failures) == 64 * 3 + 48 + 64


@pytest.mark.parametrize("k, n, extra", [(4, 3, ()), (4, 2, ("--pairs", 30, "--seed", 2)), (4, 2, ("--vls", 1))])
def test_the_c_core_and_the_python_reference_agree(tmp_path, k, n, extra):
    """hdor offline by its C core (incremental degraded passes, libhdorcore.so) and by the Python
    reference: the same row for every failure (tables, declines with their codes, path SLs and
    VLs as the measures see them), the same fault-free figures; only the engine's `how` differs."""
    plan = _plan(tmp_path, k, n)
    res = {}
    for impl in ("c", "python"):
        ibtool("whatif", "run", plan, "--out", tmp_path / impl, "--implementation", impl, "--top", 0, *extra, check=0)
        res[impl] = json.loads((tmp_path / impl / "results.json").read_text())
    c, py = res["c"], res["python"]
    assert "C core" in c["engine"]["how"] and "Python reference" in py["engine"]["how"]
    assert c["before"] == py["before"] and c["failures"] == py["failures"]
    assert len(c["rows"]) == len(py["rows"]) > 0
    for a, b in zip(c["rows"], py["rows"]):
        assert a == b, a["id"]
    classes = {r["class"] for r in c["rows"]}
    assert classes >= ({"declined"} if "--vls" in extra else {"needs VLs", "takes hosts off"})
