"""`ibtool sim run` killed hard leaves nothing behind (issue 9, item 8); SIGTERM is a clean, recorded
interruption; a net file ibsim would die on is refused first, and when ibsim dies anyway the
error is bad input naming the file (item 6). Real ibsim + Debian OpenSM."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import ROOT, ibtool

pytestmark = pytest.mark.ibsim


@pytest.fixture(scope="module")
def cellia(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan") / "cellia"
    ibtool("topo", "kns", "--k", "6", "--n", "2", "--radix", "8", "--out", out, check=0)
    return out / "topology.net"


def start(net: Path, out: Path, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ibtool.cli.main", "sim", "run", str(net), "--out", str(out),
                             *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def leftovers(out: Path, pid: int) -> list[str]:
    """Processes working in or on `out` (ibsim, OpenSM, clients) and ibsim sockets of ibtool `pid`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cwd = os.readlink(proc / "cwd")
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd.startswith(str(out)) or str(out) in cmd:
            found.append(f"pid {proc.name}: {cmd.strip()} (cwd {cwd})")
    with open("/proc/net/unix") as fh:  # ibsim's sockets are abstract: @ibtool-<pid>-<uuid>:outN@
        found += [ln.strip() for ln in fh if f"@ibtool-{pid}-" in ln]
    return found


def wait_clean(out: Path, pid: int, seconds: float = 15) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := leftovers(out, pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def ibsim_running(out: Path) -> bool:
    return any("ibsim" in x and "cwd" in x for x in leftovers(out, -1))


def test_kill_9_at_random_moments_leaves_nothing(cellia, tmp_path):
    rnd = random.Random(9)  # the same moments every run
    out = tmp_path / "run"  # one --out for all: each run must clear the dead one's scratch directory
    hit_live_ibsim = 0
    for i in range(20):
        # even runs complete in about a second (minhop); odd runs never come up (updn on a KNS) and
        # sit in OpenSM's sweep until killed. Half the kills wait for ibsim to be up first.
        args = ["--engine", "minhop"] if i % 2 == 0 else ["--engine", "updn,no_fallback", "--timeout", "60"]
        p = start(cellia, out, *args)
        if i % 4 < 2:
            deadline = time.monotonic() + 30
            while not ibsim_running(out) and p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(rnd.uniform(0, 0.3))
        else:
            time.sleep(rnd.uniform(0, 1.5))
        hit_live_ibsim += ibsim_running(out)
        p.kill()
        p.wait()
        left = wait_clean(out, p.pid)
        assert not left, f"kill -9 #{i} left: {left}"
    assert hit_live_ibsim >= 5, "the kills did not land while ibsim ran; the test proves nothing"
    # the next run clears the last dead run's scratch directory, and its own
    r = ibtool("sim", "run", cellia, "--engine", "minhop", "--out", out, "--no-discover", check=0)
    assert not (out / ".work").exists(), os.listdir(out / ".work")
    assert "Traceback" not in r.stderr


def test_kill_9_of_a_fault_scenario_leaves_nothing(cellia, tmp_path):
    """A fault scenario keeps ibsim and one OpenSM running between steps (sim/live.py): killed hard
    in the middle, neither survives it."""
    out = tmp_path / "run"
    p = start(cellia, out, "--engine", "minhop", "--fail", "R[1,1] 3")
    deadline = time.monotonic() + 60
    while not any("opensm" in x for x in leftovers(out, -1)) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any("ibsim" in x for x in leftovers(out, -1)) and any("opensm" in x for x in leftovers(out, -1))
    p.kill()
    p.wait()
    assert not wait_clean(out, p.pid)


def test_dead_runs_scratch_is_removed_and_a_live_one_refused(cellia, tmp_path):
    out = tmp_path / "run"
    work = out / ".work"
    work.mkdir(parents=True)
    (work / "sys-12345").mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (work / "owner").write_text(f"{dead.pid} 1\n")  # a pid that is gone
    ibtool("sim", "run", cellia, "--engine", "minhop", "--out", out, "--no-discover", check=0)
    assert not work.exists()
    # a live owner: the run refuses to share --out, naming it, and touches nothing
    p = start(cellia, out, "--engine", "updn,no_fallback", "--timeout", "60", "--no-discover")
    try:
        deadline = time.monotonic() + 30
        while not (work / "owner").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        r = ibtool("sim", "run", cellia, "--engine", "minhop", "--out", out)
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip() == f"ibtool: error: --out {out}: in use by a running `ibtool sim run` (pid {p.pid})"
    finally:
        p.kill()
        p.wait()
    assert not wait_clean(out, p.pid)


def test_sigterm_exits_143_and_the_summary_says_interrupted(cellia, tmp_path):
    out = tmp_path / "run"
    p = start(cellia, out, "--engine", "updn,no_fallback", "--timeout", "60")
    deadline = time.monotonic() + 30
    while not (out / "opensm.log").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "ibtool: interrupted"
    s = json.loads((out / "summary.json").read_text())
    assert s["interrupted"] is True and s["ok"] is False
    assert not wait_clean(out, p.pid)
    assert not (out / ".work").exists()


@pytest.mark.parametrize("text, line, says", [
    # a cable listed from one end only: ibsim 0.10 panics in connect_ports
    (('Switch\t8 "S1"\n[1]\t"H1"[1]\n[3]\t"S2"[3]\n\nSwitch\t8 "S2"\n[1]\t"H2"[1]\n\n'
      'Hca\t1 "H1"\n[1]\t"S1"[1]\n\nHca\t1 "H2"\n[1]\t"S2"[1]\n'), 3, "'S2' does not list that cable"),
    # a switchguid= line inside the record: ibsim ends the record there and loses the ports after it
    ('Switch\t8 "S1"\nswitchguid=0x1234\n[1]\t"H1"[1]\n\nHca\t1 "H1"\n[1]\t"S1"[1]\n', 3,
     "the GUID line 2 sits inside the record of 'S1'"),
])
def test_net_file_ibsim_would_die_on_is_refused_first(tmp_path, text, line, says):
    net = tmp_path / "bad.net"
    net.write_text(text)
    r = ibtool("sim", "run", net, "--out", tmp_path / "run")
    assert r.returncode == 2, r.stderr
    msg = r.stderr.strip().splitlines()
    assert len(msg) == 1 and msg[0].startswith(f"ibtool: error: {net}:{line}: ") and says in msg[0], msg
    assert not (tmp_path / "run" / "ibsim.log").exists()  # refused before ibsim started


def test_ibsim_dying_anyway_is_bad_input_naming_the_file(tmp_path):
    """A node id longer than ibsim's buffer: ibtool's reader has no such limit, ibsim dies on it."""
    long = "S" + "x" * 300
    net = tmp_path / "long.net"
    net.write_text(f'Switch\t8 "{long}"\n[1]\t"H1"[1]\n\nHca\t1 "H1"\n[1]\t"{long}"[1]\n')
    r = ibtool("sim", "run", net, "--out", tmp_path / "run")
    assert r.returncode == 2, r.stderr
    msg = r.stderr.strip().splitlines()[-1]
    assert msg.startswith(f"ibtool: error: {net}:1: ibsim refused this net file (exit 255): "), msg
    assert "parse_node_id" in msg and f"fatal: error at {net}: line 1" in msg


def test_refused_options_leave_out_untouched(cellia, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_bytes(b"\xff\xfe\n")
    out = tmp_path / "run"
    r = ibtool("sim", "run", cellia, "--out", out, "--opensm-config", conf)
    assert r.returncode == 2 and not out.exists(), r.stderr


# ------------------------------------------------------------------ issue 24: every phase, every child

def children_of(pid: int) -> list[str]:
    """The command names of `pid`'s children. PIDs grow, so only entries above `pid` are read:
    a scan costs a millisecond and a child that lives for a few (smpdump) is still seen."""
    names = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) > pid:
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            end = stat.rfind(b")")
            if int(stat[end + 2:].split()[1]) == pid:
                name = stat[stat.find(b"(") + 1:end].decode(errors="replace")
                if name.startswith("python"):  # ibtool's own bulk MAD client: `python -m ibtool.mad WHAT`
                    try:
                        with open(f"/proc/{entry}/cmdline", "rb") as fh:
                            argv = fh.read().split(b"\0")
                        name = " ".join(a.decode() for a in argv[argv.index(b"-m") + 1:][:2])
                    except (OSError, ValueError):
                        pass
                names.append(name)
    return names


def run_of(pid: int) -> list[str]:
    """Every process of the run of ibtool `pid`, found by its ibsim socket name (ibtool-<pid>-...):
    in the environment of ibsim and of every client, and the socket itself."""
    found = []
    mark = f"IBSIM_SOCKNAME=ibtool-{pid}-".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    env = fh.read()
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmd = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            if mark in env:
                found.append(f"pid {entry}: {cmd}")
    with open("/proc/net/unix") as fh:
        found += [ln.strip() for ln in fh if f"@ibtool-{pid}-" in ln]
    return found


# the phases of `sim run --path-sls`, in order, each told by the child it runs
# (the top LID dump_fts leaves out and the path SLs are asked by one process each, ibtool.mad, with
# the queries of smpdump and saquery)
PHASES = {"ibsim start": "ibsim", "OpenSM sweep": "opensm", "ibnetdiscover": "ibnetdiscover",
          "dump_fts": "dump_fts", "smpdump": "ibtool.mad lft", "path SLs": "ibtool.mad paths"}


@pytest.fixture(scope="module")
def top_lid_64(tmp_path_factory):
    """A small KNS whose top LID is 64 (8 switches + 56 HCAs): dump_fts leaves that LID out, so the
    run reads it with smpdump's query (ibtool.mad lft), a phase of its own."""
    out = tmp_path_factory.mktemp("plan") / "k2"
    ibtool("topo", "kns", "--k", "2", "--n", "2", "--hcas-per-router", "14", "--radix", "16", "--out", out, check=0)
    return out / "topology.net"


@pytest.mark.parametrize("phase", list(PHASES))
def test_kill_9_in_each_phase_leaves_no_process_of_the_run(top_lid_64, tmp_path, phase):
    """kill -9 of `sim run` while the phase's child runs (seen in the process tree, not guessed by a
    sleep); then nothing with the run's ibsim socket name is left: ibsim, OpenSM and every client
    die with ibtool. Before issue 24, smpdump and saquery outlived it, holding the ibsim socket."""
    child = PHASES[phase]
    landed = False
    for attempt in range(6):  # a short phase may pass between two looks: run again
        out = tmp_path / f"run{attempt}"
        p = start(top_lid_64, out, "--engine", "minhop", "--path-sls", "--timeout", "60")
        seen: list[str] = []
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline:
            seen = children_of(p.pid)
            if child in seen:
                p.kill()
                landed = True
                break
        if p.poll() is None:  # the phase was missed and the run went on: stop it, try again
            p.kill()
        p.wait()
        left = []
        deadline = time.monotonic() + 15
        while (left := run_of(p.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"kill -9 during {phase} ({seen}) left: {left}"
        if landed:
            break
    assert landed, f"no kill landed while {child} ran in {attempt + 1} runs"
