"""The command line: help that teaches, one-line errors, exit codes scripts can trust."""

import json
import re

import pytest

from support import ibtool


def test_help_has_examples():
    r = ibtool("--help", check=0)
    assert "ibtool topo kns" in r.stdout and "Exit codes" in r.stdout
    r = ibtool("topo", "kns", "--help", check=0)
    assert "--hcas-per-router" in r.stdout and "paper 000" in r.stdout


def test_topo_list_json():
    r = ibtool("topo", "list", "--json", check=0)
    reg = json.loads(r.stdout)
    assert reg["kns"]["params"]["radix"]["default"] == 36


def test_topo_kns_writes_plan(tmp_path):
    out = tmp_path / "cellia"
    r = ibtool("topo", "kns", "--k", "6", "--n", "2", "--radix", "8", "--out", out, "--json", check=0)
    s = json.loads(r.stdout)
    assert s["roles"] == {"router": 36, "hca": 36, "switch": 12}
    assert sorted(p.name for p in out.iterdir()) == ["fabric.json", "hdor.conf", "node-name-map", "opensm.conf",
                                                     "root-guids", "topology.net"]
    conf = (out / "opensm.conf").read_text()
    assert "routing_engine hdor,nue" in conf and "event_plugin_name hdor" in conf
    assert "root_guid_file root-guids\n" in conf and "qos TRUE" in conf  # relative: a plan can be moved
    assert "hdor-kns 1 k=6 n=2 s=1 routers=36 switches=12 hcas=36 links=108" in (out / "hdor.conf").read_text()
    assert len((out / "node-name-map").read_text().splitlines()) == 1 + 84


def test_refuses_non_empty_out_without_force(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    r = ibtool("topo", "kns", "--k", "3", "--n", "2", "--out", out)
    assert r.returncode == 2 and "not empty" in r.stderr and len(r.stderr.splitlines()) == 1
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--out", out, "--force", check=0)
    assert (out / "keep.txt").read_text() == "mine" and (out / "topology.net").exists()


@pytest.mark.parametrize("args,needle", [
    (["topo", "kns", "--k", "1", "--n", "2"], "--k must be >= 2"),
    (["topo", "kns", "--k", "6", "--n", "2", "--radix", "5"], "switch S[0,0] needs 6 ports"),
    (["topo", "kns", "--k", "6", "--n", "2", "--engine", "hdorr"], "unknown routing engine 'hdorr'"),
])
def test_bad_parameters_one_line_no_output(tmp_path, args, needle):
    out = tmp_path / "o"
    r = ibtool(*args, "--out", out)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr and "Traceback" not in r.stderr
    assert not out.exists() or not any(out.iterdir())


def test_sim_unknown_engine(tmp_path):
    out = tmp_path / "k"
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--out", out, check=0)
    r = ibtool("sim", "run", out / "topology.net", "--engine", "minhop,bogus", "--out", tmp_path / "run")
    assert r.returncode == 2
    assert r.stderr.strip().startswith("ibtool: error: --engine: unknown routing engine 'bogus'")
    assert not (tmp_path / "run").exists()


def test_sim_malformed_net_names_file_and_line(tmp_path):
    net = tmp_path / "bad.net"
    net.write_text('Switch\t8 "S1"\n[1]\t"S2"[1]\n[1]\t"S3"[1]\n')
    r = ibtool("sim", "run", net, "--out", tmp_path / "run")
    assert r.returncode == 2
    assert r.stderr.strip() == f"ibtool: error: {net}:3: port 1 of 'S1' listed twice"


def test_verify_missing_file(tmp_path):
    r = ibtool("verify", "topology", "--plan", tmp_path / "nope.net", "--discovered", tmp_path / "nope.out")
    assert r.returncode == 2 and "cannot read" in r.stderr and len(r.stderr.splitlines()) == 1


def test_out_under_a_file_is_one_line(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    r = ibtool("topo", "kns", "--k", "3", "--n", "2", "--out", f / "sub")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "cannot create directory: Not a directory" in r.stderr
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--out", tmp_path / "p", check=0)
    r = ibtool("sim", "run", tmp_path / "p" / "topology.net", "--out", f)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr == f"ibtool: error: --out {f}: a regular file, not a directory (nothing was written)\n"


def test_out_may_be_the_current_directory(tmp_path):
    import subprocess
    import sys
    from support import ROOT
    r = subprocess.run([sys.executable, "-m", "ibtool.cli.main", "topo", "kns", "--k", "3", "--n", "2", "--out", "."],
                       cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "topology.net").exists()


def test_absurd_size_is_refused_at_once():
    r = ibtool("topo", "kns", "--k", "1000000", "--n", "1000000", "--out", "/nonexistent", timeout=20)
    assert r.returncode == 2 and "beyond what ibtool builds" in r.stderr


@pytest.mark.parametrize("args, err_too", [
    (["topo", "list"], False),
    (["--help"], False),
    (["verify", "routes", "--help"], False),
    (["verify", "all", "fixtures/real/ibsim-kns-k3-n2-minhop-run", "--json"], False),
    (["verify", "all", "fixtures/real/ibsim-kns-k3-n2-minhop-run"], True),  # 2>&1 | head
])
def test_a_closed_pipe_ends_quietly_as_the_diags_do(args, err_too):
    """`ibtool ... | head`: the reader gone, ibtool ends as ibnetdiscover and iblinkinfo do (killed by
    SIGPIPE; a shell says 141), with nothing on stderr. It exited 1, "a check failed" (issue 24)."""
    import os
    import subprocess
    import sys
    from support import ROOT
    r, w = os.pipe()
    os.close(r)  # the reader is gone before ibtool writes a byte
    try:
        p = subprocess.run([sys.executable, "-m", "ibtool.cli.main", *args], stdout=w,
                           stderr=w if err_too else subprocess.PIPE, cwd=ROOT, timeout=300)
    finally:
        os.close(w)
    assert p.returncode == -13, (p.returncode, p.stderr)  # SIGPIPE, as the shell's 141
    assert not p.stderr, p.stderr


@pytest.mark.parametrize("args", [
    ["topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", "{d}/plan", "--json"],  # writes, succeeds
    ["topo", "kns", "--k", "3", "--n", "2", "--radix", "3", "--out", "{d}/plan"],  # radix too small: exit 2
    ["verify", "all", "fixtures/real/ibsim-kns-k3-n2-minhop-run", "--json"],  # a check fails: exit 1
    ["analyze", "{d}/nope", "--json"],  # no such path: exit 2, one JSON error document
    ["route", "hdor", "--help"],
    ["bench", "parse", "hpcc", "fixtures/bench/hpcc/np4_default_unbound/hpccoutf.txt", "--json"],
])
def test_the_suites_in_process_calls_are_what_a_process_prints(tmp_path, args):
    """tests/support.py runs the compute-only groups in the test process (support.IN_PROCESS); a
    real `ibtool` process gives the same exit code, stdout and stderr for the same arguments."""
    import subprocess
    import sys
    from support import ROOT, in_process, invoke_in_process
    assert in_process(args)
    runs = []
    for way in ("process", "in-process"):
        d = tmp_path / way
        d.mkdir()
        a = [x.format(d=d) for x in args]
        if way == "process":
            p = subprocess.run([sys.executable, "-m", "ibtool.cli.main", *a], capture_output=True, text=True,
                               cwd=ROOT, timeout=300)
        else:
            p = invoke_in_process(a, None)
        out = re.sub(r'"(seconds|\w+_s)": [0-9.]+', r'"\1": T', p.stdout.replace(str(d), "D"))  # timings differ
        runs.append((p.returncode, out, p.stderr.replace(str(d), "D")))
        if "--out" in a:
            runs[-1] += (sorted(x.name for x in (d / "plan").iterdir()) if (d / "plan").exists() else None,)
    assert runs[0] == runs[1]
    assert "Traceback" not in runs[0][2]
