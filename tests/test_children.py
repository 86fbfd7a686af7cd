"""ibtool.children: every process ibtool starts dies with it, kill -9 included (issue 24).

The kill -9 of `sim run` in each of its phases is in test_sim_kill.py (real ibsim); here the
launcher itself, from threads too (the diags clients run from a thread pool), and the rule that
nothing in ibtool starts a process another way.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from support import ROOT

SCRIPT = textwrap.dedent("""
    import sys, time
    from concurrent.futures import ThreadPoolExecutor
    from ibtool import children
    mark = sys.argv[1]
    child = [sys.executable, "-c", "import time; time.sleep(300)", mark]
    # a child of the main thread, and children of worker threads waiting on them (as smpdump, saquery)
    children.popen(child)
    pool = ThreadPoolExecutor(2)
    for _ in range(2):
        pool.submit(children.run, child)
    print("started", flush=True)
    time.sleep(300)
""")


def sleepers(mark: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmd = fh.read().split(b"\0")
            except OSError:
                continue
            if mark.encode() in cmd and b"-c" in cmd and b"import time; time.sleep(300)" in cmd:
                found.append(entry)
    return found


def test_children_die_with_a_parent_killed_with_sigkill(tmp_path):
    mark = f"ibtool-children-test-{os.getpid()}-{time.monotonic_ns()}"
    p = subprocess.Popen([sys.executable, "-c", SCRIPT, mark], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 10
        while len(sleepers(mark)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(sleepers(mark)) == 3, sleepers(mark)
    finally:
        p.kill()
        p.wait()
    deadline = time.monotonic() + 10
    while sleepers(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleepers(mark) == []


def test_run_stops_the_child_on_timeout():
    from ibtool import children
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        children.run(["sleep", "30"], timeout=0.5)
    assert time.monotonic() - t0 < 10
    done = children.run(["sh", "-c", "echo out; echo err >&2; exit 3"], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_nothing_in_ibtool_starts_a_process_but_the_launcher():
    """subprocess.run/Popen/call/check_output, os.system/popen/spawn*/fork/exec* anywhere in the
    package but ibtool/children.py would start a child that outlives a kill -9 of ibtool."""
    starters = {("subprocess", n) for n in ("run", "Popen", "call", "check_call", "check_output", "getoutput",
                                            "getstatusoutput")}
    starters |= {("os", n) for n in ("system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "spawnl",
                                     "spawnv", "spawnvp", "execv", "execvp", "execve")}
    bad = []
    for path in sorted((ROOT / "ibtool").rglob("*.py")):
        if path == ROOT / "ibtool" / "children.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and (node.func.value.id, node.func.attr) in starters:
                bad.append(f"{Path(path).relative_to(ROOT)}:{node.lineno}: {node.func.value.id}.{node.func.attr}")
    assert bad == []


LOST = textwrap.dedent("""
    import os, signal, subprocess, sys
    from ibtool import children
    signal.signal(signal.SIGINT, signal.default_int_handler)
    where = sys.argv[1]
    if where == "fork":  # Ctrl-C lands while Python runs its after-fork hooks in ibtool
        os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGINT))
    else:  # ... or while a finished child's Popen is let go of
        release = subprocess.Popen.__del__
        def landing(self):
            os.kill(os.getpid(), signal.SIGINT)
            release(self)
        subprocess.Popen.__del__ = landing
    try:
        children.run(["true"])
    except KeyboardInterrupt:
        print("interrupted")
    else:
        print("the Ctrl-C was lost")
""")


@pytest.mark.parametrize("where", ["fork", "release"])
def test_a_ctrl_c_during_a_child_start_or_release_is_not_lost(where):
    """A signal handled inside a fork hook or Popen.__del__ is printed as "Exception ignored" and
    dropped by Python: a Slurm campaign's Ctrl-C was lost that way (CI, stop 33) and it waited for
    its job instead of cancelling it. ibtool holds the signals back there and raises after."""
    p = subprocess.run([sys.executable, "-c", LOST, where], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (p.stdout.strip(), p.returncode) == ("interrupted", 0), p.stderr
    assert "Exception ignored" not in p.stderr
