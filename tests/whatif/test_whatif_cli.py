"""`ibtool whatif` on bad input: one line naming the file or the parameter, exit 2, nothing
started, no traceback; and --help teaches with examples."""

import os
import subprocess

import pytest
from support import IBTOOL, ROOT, ibtool


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    d = tmp_path_factory.mktemp("plans")
    ibtool("topo", "kns", "--k", 3, "--n", 2, "--radix", 8, "--out", d / "kns", check=0)
    ibtool("topo", "fattree", "--k", 2, "--n", 2, "--out", d / "ft", check=0)
    (d / "junk.txt").write_text("not a fabric\n")
    return d


@pytest.mark.parametrize("args, needle", [
    (["run", "{d}/nowhere", "--out", "{t}/wi"], "nowhere: no such file or directory"),
    (["run", "{d}/kns", "--out", "{t}/wi", "--only", "C9999"], "--only C9999: no cable ID, device or 'DEVICE PORT'"),
    (["run", "{d}/kns", "--out", "{t}/wi", "--only", "H[1,1]"], "--only H[1,1]: an HCA only disconnects its own host"),
    (["run", "{d}/kns", "--out", "{t}/wi", "--only", "H[1,1] 1"], "a host cable only disconnects its own host"),
    (["run", "{d}/kns", "--out", "{t}/wi", "--pairs", "100000"], "--pairs 100000: the fabric has"),
    (["run", "{d}/kns", "--out", "{t}/wi", "--workers", "2", "--slurm", "{d}/inv.yaml"], "give --workers or --slurm"),
    (["run", "{d}/kns", "--out", "{t}/wi", "--kind", "cable", "--only", "S[0,0]"], "give --only or --kind"),
    (["run", "{d}/ft", "--out", "{t}/wi", "--engine", "hdor"], "--engine hdor: not a complete KNS"),
    (["run", "{d}/kns", "--out", "{t}/wi", "--engine", "nosuch"], "unknown routing engine 'nosuch'"),
    (["run", "{d}/kns", "--out", "{d}/junk.txt"], "a regular file, not a directory"),
    (["run", "{d}/kns", "--out", "{d}", "--only", "S[0,0]"], "directory is not empty and holds no what-if"),
    (["run", "{d}/kns", "--out", "{t}/wi", "--sm", "X[9]"], "--sm X[9]: no device of the fabric"),
    (["report", "{d}"], "no results.json"),
    (["chunk", "{d}"], "give the chunks K"),
])
def test_bad_input_is_one_line(plans, tmp_path, args, needle):
    r = ibtool("whatif", *[a.format(d=plans, t=tmp_path) for a in args])
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "wi" / "chunks").exists()  # nothing started


def test_another_whatif_in_out_is_not_overwritten(plans, tmp_path):
    out = tmp_path / "wi"
    ibtool("whatif", "run", plans / "kns", "--out", out, "--only", "S[0,0]", "--top", 0, check=0)
    before = (out / "results.json").read_bytes()
    r = ibtool("whatif", "run", plans / "kns", "--out", out, "--only", "S[0,1]")
    assert r.returncode == 2 and "holds another what-if" in r.stderr
    assert (out / "results.json").read_bytes() == before
    r = ibtool("whatif", "run", plans / "kns", "--out", out, "--only", "S[0,0]", "--json")  # the same: resumed
    assert r.returncode == 0 and '"schema": "ibtool-whatif/1"' in r.stdout


def test_help_teaches():
    r = ibtool("whatif", "--help", check=0)
    assert "Examples:" in r.stdout and "--slurm" in r.stdout
    r = ibtool("whatif", "run", "--help", check=0)
    for opt in ("--only", "--pairs", "--workers", "--slurm", "--chunks", "--sm", "--json"):
        assert opt in r.stdout


def test_without_the_c_core(plans, tmp_path):
    """hdor offline needs libhdorcore.so: without it one line saying how to build it or what else to
    use, exit 3 (the environment), nothing started; --implementation python still routes."""
    env = {**os.environ, "IBTOOL_HDOR_CORE": str(tmp_path / "libhdorcore.so")}
    r = subprocess.run([*IBTOOL, "whatif", "run", plans / "kns", "--out", tmp_path / "wi", "--only", "S[0,0]"],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 3 and len(lines) == 1 and "--implementation python" in lines[0], r.stderr
    assert not (tmp_path / "wi" / "chunks").exists()
    r = subprocess.run([*IBTOOL, "whatif", "run", plans / "kns", "--out", tmp_path / "wi", "--only", "S[0,0]",
                        "--implementation", "python", "--top", "0"], capture_output=True, text=True, cwd=ROOT,
                       env=env)
    assert r.returncode == 0 and (tmp_path / "wi" / "results.json").is_file(), r.stderr


def test_kind_and_only_by_port(plans, tmp_path):
    """--kind cable: every switch-switch cable and nothing else; --only 'DEVICE PORT' names the same
    cable as its ID does."""
    import json
    r = ibtool("whatif", "run", plans / "kns", "--out", tmp_path / "c", "--kind", "cable", "--json", check=0)
    res = json.loads(r.stdout)
    kinds = {row["kind"] for row in res["rows"]}
    assert kinds == {"cable"} and res["failures"]["how"] == "every single cable", res["failures"]
    both = ibtool("whatif", "run", plans / "kns", "--out", tmp_path / "sr", "--kind", "switch", "--kind", "router",
                  "--json", check=0)
    assert {row["kind"] for row in json.loads(both.stdout)["rows"]} == {"switch", "router"}
    one = res["rows"][-1]
    (a, pa), (b, pb) = one["parts"][0]["ends"]
    r = ibtool("whatif", "run", plans / "kns", "--out", tmp_path / "o", "--only", f"{b} {pb}", "--json", check=0)
    assert json.loads(r.stdout)["rows"][0]["id"] == one["id"]
