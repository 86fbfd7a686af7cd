"""Issue 9's findings and the suite's, one explicit test each: the command a user runs, the exit
code and the one line it must print. Each failed before the fix (a traceback, a wrong PASS, a
blow-up or a silent acceptance)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from limits import limit_child
from support import FIXTURES, IBTOOL, ROOT, ibtool

R = FIXTURES / "real"
HDOR, RUN = R / "ibsim-kns-k3-n2-hdor", R / "ibsim-kns-k3-n2-minhop-run"
PLAN = R / "plan-kns-k3-n2.net"


def bounded(*args) -> subprocess.CompletedProcess:
    """ibtool under the suite's 2 GiB address-space bound: an input that allocates by its numbers fails here."""
    return subprocess.run([*IBTOOL, *map(str, args)], capture_output=True, text=True, check=False, cwd=ROOT,
                          timeout=300, preexec_fn=limit_child)


def one_error(p: subprocess.CompletedProcess, code: int = 2) -> str:
    assert p.returncode == code, f"exit {p.returncode}\n{p.stderr[-3000:]}"
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    lines = [x for x in p.stderr.splitlines() if x.startswith(("ibtool: error:", "Error:"))]
    assert len(lines) == 1, p.stderr
    return lines[0]


def edited(tmp_path: Path, src: Path, old: str, new: str, count: int = 1, name: str | None = None) -> Path:
    text = src.read_text()
    assert old in text, old
    out = tmp_path / (name or src.name)
    out.write_text(text.replace(old, new, count))
    return out


def line_of(path: Path, needle: str) -> int:
    return next(i for i, x in enumerate(path.read_text().splitlines(), 1) if needle in x)


# ----------------------------------------------------------------------- 1: numbers beyond their field

@pytest.mark.parametrize("lid", ["4294967296", "100000000", "49152", "65535", "65536"])
def test_lid_beyond_unicast_in_ibnetdiscover_is_bad_input_not_an_allocation(tmp_path, lid):
    # 2**32 allocated 96 GiB (MemoryError), 10**8 took 3.6 GB; 0xc000..0x10000 were taken as unicast
    f = edited(tmp_path, HDOR / "ibnetdiscover.out", "port 0 lid 3 lmc 0", f"port 0 lid {lid} lmc 0")
    msg = one_error(bounded("verify", "routes", "--fabric", f, "--lfts", HDOR / "dump_fts.out"))
    assert msg == f"ibtool: error: {f}:{line_of(f, f'lid {lid} ')}: unicast LID {int(lid):#x} is outside 0x1..0xbfff"


@pytest.mark.parametrize("entry", ["0x10000000000000000 001", "0x0001 18446744073709551617"])
def test_lid_or_port_over_64_bits_in_an_lft_dump(tmp_path, entry):
    # OverflowError in formats/lft.py
    f = edited(tmp_path, HDOR / "dump_fts.out", "0x0001 001", entry)
    msg = one_error(bounded("verify", "routes", "--fabric", HDOR / "ibnetdiscover.out", "--lfts", f))
    lid, port = entry.split()
    says = f"LID {lid} is outside 0x0001..0xbfff (the unicast LIDs)" if len(lid) > 6 else \
        f"port {port} of LID {lid} is outside 0..254"
    assert msg == f"ibtool: error: {f}:{line_of(f, entry)}: {says}"


def test_lid_2_64_in_opensm_subnet_lst(tmp_path):
    # ValueError / OverflowError in lft.py and routing/hdor.py
    f = edited(tmp_path, HDOR / "opensm-subnet.lst", "LID:0001", "LID:10000000000000000")
    msg = one_error(bounded("verify", "routes", "--fabric", f, "--lfts", HDOR / "dump_fts.out"))
    assert msg == f"ibtool: error: {f}:{line_of(f, 'LID:10000000000000000')}: unicast LID 0x10000000000000000 is " \
                  f"outside 0x1..0xbfff"


def test_port_255_in_opensm_subnet_lst(tmp_path):
    f = edited(tmp_path, HDOR / "opensm-subnet.lst", "PN:01 }", "PN:FF }")
    msg = one_error(bounded("verify", "routes", "--fabric", f, "--lfts", HDOR / "dump_fts.out"))
    assert re.fullmatch(rf"ibtool: error: {re.escape(str(f))}:\d+: port 255 is outside 0..254", msg), msg


@pytest.mark.parametrize("src, old, new, says", [
    (HDOR / "ibnetdiscover.out", "caguid=0x", "caguid=0x1000000", "GUID 0x1000000"),
    (HDOR / "opensm-hdor.dump", "router 0x", "router 0xfff", "GUID 0xfff"),
    (R / "plan-kns-k3-n2.node-name-map", "0x", "0x11", "GUID 0x11"),
])
def test_guid_over_64_bits(tmp_path, src, old, new, says):
    f = edited(tmp_path, src, old, new)
    if f.name == "opensm-hdor.dump":
        p = bounded("verify", "coords", "--fabric", HDOR / "ibnetdiscover.out", "--dump", f)
    elif f.name == "ibnetdiscover.out":
        p = bounded("verify", "topology", "--plan", PLAN, "--discovered", f)
    else:
        p = bounded("verify", "topology", "--plan", PLAN, "--discovered", HDOR / "ibnetdiscover.out",
                    "--node-name-map", f)
    msg = one_error(p)
    assert msg.startswith(f"ibtool: error: {f}:") and says in msg and "is outside 0x0..0xffffffffffffffff" in msg


def test_a_number_of_5000_digits(tmp_path):
    # found by the suite: int() refuses over 4300 digits (ValueError); formatting such a GUID too
    f = edited(tmp_path, PLAN, 'Switch\t8 "S-0002c90000000010"', 'Switch\t' + "9" * 5000 + ' "S-0002c90000000010"')
    msg = one_error(bounded("verify", "topology", "--plan", f, "--discovered", HDOR / "ibnetdiscover.out"))
    assert msg == f"ibtool: error: {f}:8: a number of 5000 digits"
    g = edited(tmp_path, PLAN, "switchguid=0x2c90000000010", "switchguid=0x" + "f" * 5000, name="g.net")
    msg = one_error(bounded("verify", "topology", "--plan", g, "--discovered", HDOR / "ibnetdiscover.out"))
    assert msg == f"ibtool: error: {g}:7: GUID of 20000 bits is outside 0x0..0xffffffffffffffff"


# ----------------------------------------------------------------------------------------- 2: LMC

@pytest.mark.parametrize("lmc, says", [("99999999999999999999999999", "LMC 99999999999999999999999999 is outside 0..7"),
                                       ("40", "LMC 40 is outside 0..7"), ("8", "LMC 8 is outside 0..7")])
def test_lmc_beyond_7(tmp_path, lmc, says):
    # OverflowError in fabric.py; lmc 40 ran verify routes past 60 s and 16.7 GB; lmc 8 was accepted
    f = edited(tmp_path, HDOR / "ibnetdiscover.out", "lid 3 lmc 0", f"lid 3 lmc {lmc}")
    msg = one_error(bounded("verify", "routes", "--fabric", f, "--lfts", HDOR / "dump_fts.out"))
    assert msg == f"ibtool: error: {f}:{line_of(f, f'lmc {lmc}')}: {says}"


def test_lmc_range_past_the_last_unicast_lid(tmp_path):
    f = edited(tmp_path, HDOR / "ibnetdiscover.out", "lid 3 lmc 0", "lid 49150 lmc 2")
    msg = one_error(bounded("verify", "routes", "--fabric", f, "--lfts", HDOR / "dump_fts.out"))
    assert msg.endswith("LID 0xbffe with LMC 2 runs past the last unicast LID 0xbfff")


def test_fabric_refuses_what_no_reader_should_let_through():
    # the model's own guard, for LIDs set by code rather than read: 1 << lmc of a huge LMC overflowed
    from ibtool.errors import InputError
    from ibtool.fabric import Fabric
    f = Fabric()
    sw = f.add_switch("S", 8)
    f.port_lids[(sw, 0)] = (1, 99999999999999999999)
    with pytest.raises(InputError, match=r"^S port 0: LID 1 with LMC 99999999999999999999 is outside"):
        f.lid_owners()
    with pytest.raises(InputError, match="does not fit 64 bits"):
        f.add_hca("H", guid=1 << 64)


# ----------------------------------------------------------------------- 3 and 7: summary.json

def run_dir(tmp_path: Path, summary: bytes | None = None, **changes) -> Path:
    d = tmp_path / "run"
    shutil.copytree(RUN, d)
    if summary is None:
        s = json.loads((RUN / "summary.json").read_text())
        s.update(changes)
        summary = json.dumps(s).encode()
    (d / "summary.json").write_bytes(summary)
    return d


def test_deeply_nested_summary_json(tmp_path):
    # RecursionError in verify all
    d = run_dir(tmp_path, b'{"net": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")
    msg = one_error(ibtool("verify", "all", d))
    assert msg == f"ibtool: error: {d}/summary.json: not an `ibtool sim run` summary: nested too deeply"


@pytest.mark.parametrize("ok, shown", [("NaN", "NaN"), ("-1", "-1"), ('"yes"', '"yes"'), ("1", "1")])
def test_summary_ok_that_is_not_a_boolean_is_not_a_pass(tmp_path, ok, shown):
    d = run_dir(tmp_path, (RUN / "summary.json").read_bytes().replace(b'"ok": true', f'"ok": {ok}'.encode()))
    msg = one_error(ibtool("verify", "all", d))
    assert msg == f"ibtool: error: {d}/summary.json: 'ok' is {shown}, expected bool"


def test_interrupted_run_is_not_a_pass(tmp_path):
    d = run_dir(tmp_path, interrupted=True)
    p = ibtool("verify", "all", d, "--json")
    run = next(c for c in json.loads(p.stdout)["checks"] if c["name"] == "run")
    assert run["ok"] is False and "INTERRUPTED" in run["summary"]


def test_summary_plan_not_found_says_topology_not_checked(tmp_path):
    """Issue 36 item 10: the plan summary.json names is gone: the topology check is NOT CHECKED,
    not an info line (this run's minhop tables have a credit loop: FAIL wins, exit 1)."""
    d = run_dir(tmp_path, net="gone/topology.net")
    p = ibtool("verify", "all", d)
    why = f"the plan gone/topology.net named by {d}/summary.json is not there (give --plan PLAN)"
    assert p.returncode == 1 and p.stdout.startswith("verify: FAIL\n"), p.stdout
    assert f"  topology: NOT CHECKED  {why}" in p.stdout.splitlines(), p.stdout
    checks = json.loads(ibtool("verify", "all", d, "--json").stdout)["checks"]
    assert checks[0] == {"name": "topology", "ok": False, "not_checked": True, "not_run": True, "summary": why}


def test_summary_plan_name_with_nul_or_too_long(tmp_path):
    for net in ("a\u0000b", "x" * 5000):
        d = run_dir(tmp_path / net[:3].replace("\0", "_"), net=net)
        p = ibtool("verify", "all", d)
        assert p.returncode in (1, 5) and "Traceback" not in p.stderr, p.stderr
        assert "topology: NOT CHECKED  the plan" in p.stdout


def test_summary_naming_a_file_that_is_no_plan(tmp_path):
    # found by the suite: "net": "../../../etc/passwd" was read as the plan; the error named only that file
    d = run_dir(tmp_path, net="/etc/passwd")
    msg = one_error(ibtool("verify", "all", d))
    assert msg == (f"ibtool: error: /etc/passwd:1: unrecognised line: 'root:x:0:0:root:/root:/bin/bash' "
                   f"(the plan named by {d}/summary.json)")


# ------------------------------------------------------------------------------------- 5: the CLI

def test_topo_without_required_parameters(tmp_path):
    # TypeError in topologies/kns.py: click >= 8.3 passed default=None as a value
    p = ibtool("topo", "kns", "--n", "2", "--out", tmp_path / "p")
    assert one_error(p) == "Error: Missing option '--k'."
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0.5"])
def test_sim_timeout_not_finite(tmp_path, value):
    p = ibtool("sim", "run", PLAN, "--out", tmp_path / "r", "--timeout", value)
    assert one_error(p) == f"Error: Invalid value for '--timeout': {float(value)} is not a number of seconds in " \
                           f"1..604800"


def test_opensm_config_not_utf8(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_bytes(b"routing_engine minhop\n\xff\xfe\n")
    assert one_error(ibtool("sim", "run", PLAN, "--out", tmp_path / "r", "--opensm-config", conf)) == \
        f"ibtool: error: {conf}: not UTF-8 text (not an opensm.conf?)"


@pytest.mark.parametrize("flags", ["-1", "0x100", "256"])
def test_log_flags_outside_a_byte(tmp_path, flags):
    assert one_error(ibtool("sim", "run", PLAN, "--out", tmp_path / "r", "--log-flags", flags)) == \
        f"ibtool: error: --log-flags: {flags} is outside 0x00..0xff"


@pytest.mark.parametrize("cmd", [["sim", "run", PLAN], ["topo", "kns", "--k", "3", "--n", "2"],
                                 ["route", "hdor", "--fabric", HDOR / "ibnetdiscover.out"]])
def test_empty_out_is_refused(tmp_path, cmd):
    p = subprocess.run([*IBTOOL, *map(str, cmd), "--out", ""], capture_output=True, text=True, check=False,
                       cwd=tmp_path,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin:/usr/sbin"})
    assert "an empty path (say . for the current directory)" in one_error(p)
    assert list(tmp_path.iterdir()) == []  # nothing written where the user stands


def test_conf_value_with_a_newline(tmp_path):
    p = ibtool("sim", "run", PLAN, "--out", tmp_path / "r", "--conf", "lmc=1\nrouting_engine=updn")
    assert "expected KEY=VALUE on one line" in one_error(p)
    assert not (tmp_path / "r").exists()


def test_permutations_capped():
    p = ibtool("verify", "all", RUN, "--permutations", "100000000")
    assert one_error(p) == "Error: Invalid value for '--permutations': 100000000 is not in the range 0<=x<=10000."


UNPRIVILEGED = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"]  # root without CAP_DAC_OVERRIDE


@pytest.fixture
def readonly_dir(tmp_path):
    """A directory an unprivileged process cannot write: owned by nobody, mode 755."""
    d = tmp_path / "ro"
    d.mkdir()
    shutil.chown(d, "nobody", "nogroup")
    d.chmod(0o755)
    probe = subprocess.run([*UNPRIVILEGED, "touch", str(d / "x")], capture_output=True, text=True, check=False)
    assert probe.returncode != 0, "setpriv did not drop the privilege to write anywhere"
    return d


@pytest.mark.parametrize("cmd, says", [
    (["sim", "run", PLAN, "--out", "{ro}/run"], "--out {ro}/run: cannot create directory: Permission denied"),
    (["sim", "run", PLAN, "--out", "{ro}"], "--out {ro}: directory is not writable"),
    (["topo", "kns", "--k", "3", "--n", "2", "--out", "{ro}/plan"],
     "--out {ro}/plan: cannot create directory: Permission denied"),
    (["route", "hdor", "--fabric", HDOR / "ibnetdiscover.out", "--out", "{ro}/x.lft"],
     "--out {ro}/x.lft: directory {ro} is not writable"),
])
def test_unwritable_out_as_an_unprivileged_process(readonly_dir, cmd, says):
    # PermissionError tracebacks for a non-root user
    argv = [str(a).replace("{ro}", str(readonly_dir)) for a in cmd]
    p = subprocess.run([*UNPRIVILEGED, *IBTOOL, *argv], capture_output=True, text=True, check=False, cwd=ROOT)
    assert one_error(p) == "ibtool: error: " + says.replace("{ro}", str(readonly_dir))


# ---------------------------------------------------------------------------------- 10: route hdor

def test_route_hdor_on_a_plan_names_the_file_and_option(tmp_path):
    msg = one_error(ibtool("route", "hdor", "--fabric", PLAN, "--out", tmp_path / "x.lft"))
    assert msg.startswith(f"ibtool: error: {PLAN}: --fabric: no LIDs in this file (a plan?")
    assert not (tmp_path / "x.lft").exists()


# ------------------------------------------------------------- benchmark outputs (found by the suite)

@pytest.mark.parametrize("bench, src, old, new, says", [
    ("hpcg", "hpcg/np4_16x16x16_rt30/HPCG-Benchmark_3.1_2026-11-22_01-58-31.txt",
     "Machine Summary::Distributed Processes=4", "Machine Summary::Distributed Processes=nan", "is not a finite number"),
    ("graph500", "graph500/bfs_scale14_ef16_np4/stdout.txt", "SCALE:                          14",
     "SCALE:                          3.0+06", "is not a finite number"),
    ("netgauge", "netgauge/ebb_sizes_1B-1MiB_np4/stdout.txt", "1048576", "9" * 5000, "over 4000 digits"),
])
def test_benchmark_output_with_a_broken_number_fails_the_run(tmp_path, bench, src, old, new, says):
    # ValueError / OverflowError in the parsers (int(nan), float('3.0+06'), int of 5000 digits)
    src = FIXTURES / "bench" / src
    d = tmp_path / "run"
    shutil.copytree(src.parent, d)
    text = src.read_text()
    assert old in text, old
    (d / src.name).write_text(text.replace(old, new, 1))
    p = ibtool("bench", "parse", bench, d / src.name)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert says in p.stdout, p.stdout


def test_an_lft_dump_without_a_single_newline(tmp_path):
    # IndexError in lft._parse: a chunk with no whole line (found by the suite after the faster
    # reader of issue 8 met issue 9's mutations)
    d = tmp_path / "dump_fts.out"
    d.write_bytes((R / "ibsim-kns-k3-n2-hdor" / "dump_fts.out").read_bytes().replace(b"\n", b"U"))
    p = ibtool("verify", "routes", "--fabric", R / "ibsim-kns-k3-n2-hdor" / "ibnetdiscover.out", "--lfts", d)
    assert p.returncode == 2 and "Traceback" not in p.stderr and str(d) in p.stderr, p.stderr
    big = tmp_path / "big.out"
    big.write_bytes(b"0x" + b"1" * (3 << 20))
    p = ibtool("verify", "routes", "--fabric", R / "ibsim-kns-k3-n2-hdor" / "ibnetdiscover.out", "--lfts", big)
    assert p.returncode == 2 and "a line longer than 1 MiB" in p.stderr, p.stderr


def test_out_of_memory_is_one_line_and_exit_6(tmp_path):
    """A KNS of 8 million routers fits the radix and the router cap but not 768 MiB of memory:
    the user gets one line and exit 6 (out of memory: its own code since issue 36, it was 3 "a tool
    or host is missing"), not a MemoryError traceback."""
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))  # imports fit; the fabric does not

    out = tmp_path / "big"
    r = subprocess.run([sys.executable, "-m", "ibtool.cli.main", "topo", "kns", "--k", "200", "--n", "3",
                        "--radix", "254", "--out", str(out)], capture_output=True, text=True, timeout=600,
                       preexec_fn=limit)
    assert r.returncode == 6, r.stderr[-2000:]
    assert r.stderr == "ibtool: error: out of memory in `ibtool topo` (no input file read): the fabric or input is " \
                       "too large for this machine's memory (nothing was written)\n"
    assert not out.exists()


def test_out_of_memory_names_the_input(tmp_path):
    """A plan of 29,376 devices (11 MB) read under a 144 MiB bound, which the small plan fits: exit 6
    and the file named (it was exit 3 and no file)."""
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (144 << 20, 144 << 20))

    ibtool("topo", "kns", "--k", "24", "--n", "3", "--radix", "64", "--out", tmp_path / "big", check=0)
    for net, code in ((PLAN, 0), (tmp_path / "big" / "topology.net", 6)):
        r = subprocess.run([*IBTOOL, "verify", "topology", "--plan", str(net), "--discovered", str(net)],
                           capture_output=True, text=True, timeout=600, preexec_fn=limit, cwd=ROOT,
                           env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
        assert r.returncode == code, r.stderr[-2000:]
    assert r.stderr == f"ibtool: error: out of memory in `ibtool verify` on {net} (the last input read): the fabric " \
                       "or input is too large for this machine's memory (nothing was written)\n"


# ------------------------------------------------------------- issue 36 item 8: the last tracebacks
CUT = R / "ibsim-kns-k3-n1-m2-cutoff"  # a real fault run: R[1] lost both its cables to S[0,0]


def test_a_router_cut_off_with_its_hcas_is_a_verified_step(tmp_path):
    # ValueError: need at least one array to stack (routing/hdor_faults.py _walks): no pair's route
    # was touched; the cut-off router's pairs are disconnected, the rest is verified
    p = ibtool("verify", "all", CUT / "run", "--json")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-3000:]
    step = json.loads(p.stdout)["steps"]["step-1"]
    checks = {c["name"]: c for c in step["checks"]}
    assert checks["routes: delivery"]["ok"] and checks["routes: hdor tables"]["summary"] == "identical to the reference"
    assert step["ok"] is True
    # the same degraded pass offline: tables and what failed, not a traceback
    r = ibtool("route", "hdor", "--fabric", CUT / "run/step-1/ibnetdiscover.out", "--baseline",
               CUT / "run/step-0/ibnetdiscover.out", "--out", tmp_path / "x.lft")
    assert r.returncode == 0 and "degraded: failed R[1], H[1]" in r.stdout, r.stdout + r.stderr[-3000:]
    assert (tmp_path / "x.lft").read_text().startswith("Unicast lids")


def faults_file(tmp_path: Path, head: str) -> Path:
    f = tmp_path / "faults.yaml"
    f.write_text(f"{head}\nsteps:\n  - down: ['R[1,1] 2']\n")
    return f


@pytest.mark.parametrize("value, shown", [(".inf", "inf"), ("-.inf", "-inf"), (".nan", "nan"), ("2.5", "2.5"),
                                          ("99999999999999999999", "99999999999999999999"), ("0", "0")])
def test_sweep_interval_beyond_a_whole_number_of_seconds(tmp_path, value, shown):
    # .inf: OverflowError in sim/faults.py read; 10**20 was called an "opensm.conf option" without
    # the scenario's name
    f = faults_file(tmp_path, f"sweep_interval: {value}")
    msg = one_error(ibtool("sim", "run", PLAN, "--engine", "hdor", "--faults", f, "--out", tmp_path / "r"))
    assert msg == f"ibtool: error: {f}: sweep_interval {shown}: not a whole number of seconds in 1..4294967295"
    assert not (tmp_path / "r").exists()


def test_a_yaml_number_of_5000_digits(tmp_path):
    # ValueError (Python's 4300-digit limit) inside PyYAML: fault scenarios, inventories, price tables
    big = "9" * 5000
    f = faults_file(tmp_path, f"sweep_interval: {big}")
    assert one_error(ibtool("sim", "run", PLAN, "--faults", f, "--out", tmp_path / "r")) == \
        f"ibtool: error: {f}: not valid YAML: a number of more than 4300 digits"
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"hosts: [{{name: a, slots: {big}}}]\nrunner: local\n")
    assert one_error(ibtool("bench", "check", "-i", inv)) == \
        f"ibtool: error: {inv}: not valid YAML: a number of more than 4300 digits"
    prices = tmp_path / "prices.yaml"
    prices.write_text(f"currency: EUR\nswitch: 1000\nhca: {big}\n")
    assert one_error(ibtool("analyze", PLAN, "--prices", prices, "--bisection", "none")) == \
        f"ibtool: error: {prices}:1: a number of more than 4300 digits"


@pytest.mark.parametrize("line", ["root_guid_file a\0b", "node_name_map_name /tmp/x\0", "routing_engine minhop\0"])
def test_opensm_config_with_a_nul_byte(tmp_path, line):
    # ValueError: embedded null byte (sim/opensm_options.py resolve_files)
    conf = tmp_path / "nul.conf"
    conf.write_text(f"lmc 0\n{line}\n")
    key, value = line.split(" ", 1)
    msg = one_error(ibtool("sim", "run", PLAN, "--engine", "minhop", "--opensm-config", conf, "--out", tmp_path / "r"))
    assert msg == f"ibtool: error: {conf}:2: {key} {value.replace(chr(0), '^@')}: {value!r} holds a NUL byte"
    assert not (tmp_path / "r").exists()


def test_routing_engine_bogus_inside_opensm_config_names_the_file(tmp_path):
    conf = tmp_path / "my.conf"
    conf.write_text("lmc 0\nrouting_engine bogus\n")
    msg = one_error(ibtool("sim", "run", PLAN, "--opensm-config", conf, "--out", tmp_path / "r"))
    assert msg.startswith(f"ibtool: error: {conf}:2: routing_engine bogus: unknown routing engine 'bogus' (known: ")


@pytest.mark.parametrize("key, value, expected", [
    ("requested", -1, "list or null"), ("requested", "hdor", "list or null"), ("requested", [1], "a list of engine names"),
    ("engines", {}, "list or null"), ("hdor_declined", 7, "str or null"), ("counters", [], "dict or null")])
def test_summary_json_of_the_wrong_type(tmp_path, key, value, expected):
    # "requested": -1 was TypeError: argument of type 'int' is not iterable (verify/run.py)
    d = run_dir(tmp_path, **{key: value})
    msg = one_error(ibtool("verify", "all", d))
    assert msg == f"ibtool: error: {d}/summary.json: {key!r} is {json.dumps(value)}, expected {expected}"


# ------------------------------------------------------------ issue 36 item 10: messages to mend

@pytest.mark.parametrize("lines", [40, 80])
def test_verify_routes_on_a_truncated_discovery_blames_the_discovery(tmp_path, lines):
    # was "HDOR/dump_fts.out:225: switch ... is not a switch of the fabric ...: forwarding tables of
    # another fabric?" about the intact dump
    cut = tmp_path / "ibnetdiscover.out"
    cut.write_text("".join((HDOR / "ibnetdiscover.out").read_text().splitlines(keepends=True)[:lines]))
    msg = one_error(ibtool("verify", "routes", "--fabric", cut, "--lfts", HDOR / "dump_fts.out"))
    assert msg.startswith(f"ibtool: error: {cut}: partial discovery: 8 devices seen only as the peer of a port"), msg
    assert re.search(rf"; \d+ of 15 tables of {re.escape(str(HDOR / 'dump_fts.out'))} are of switches this "
                     r"discovery does not hold \(e\.g\. 0x[0-9a-f]{16} '[RS]\[\d,\d\]'\): run ibnetdiscover again$",
                     msg), msg
    assert "another fabric" not in msg


def test_verify_all_names_the_cables_beyond_threshold(tmp_path):
    # the text said "3 beyond threshold on 2 cables" and named none
    d = run_dir(tmp_path)
    shutil.copy(R / "ibsim-kns-k3-n2-counters" / "perfquery.out", d)
    out = ibtool("verify", "all", d).stdout
    health = next(x for x in out.splitlines() if x.startswith("  health:"))
    assert health == "  health: FAIL  54 ports' error counters: 3 beyond threshold on 2 cables: " \
                     "R[0,1] port 2 - S[0,0] port 2, R[0,0] port 1 - H[0,0] port 1", health
