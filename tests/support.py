"""Helpers shared by the test modules (import as `from support import ...`; tests/ is on sys.path)."""

import json
import os
import shlex
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from ibtool.registry import TOPOLOGIES

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]
# `make test` runs a fixed sample of the exhaustive parts (fault matrix, fuzzing, the biggest
# fabrics, campaigns interrupted by every signal) to stay under 20 minutes; `make test-full`
# (IBTOOL_TESTS=full) runs them whole.
FULL = os.environ.get("IBTOOL_TESTS") == "full"


def sample(items: list, every: int) -> list:
    """All of an exhaustive loop's items in `make test-full`, every `every`-th (a fixed sample that
    still spans the list) in `make test`."""
    return list(items) if FULL else list(items)[::every]

def small_args(family) -> list[str] | None:
    """A family's small instance: the arguments of the first line of its registered example,
    `ibtool topo NAME ARGS --out DIR   # what it is` (None when the line is not of that form)."""
    words = shlex.split(family.example.splitlines()[0] if family.example else "", comments=True)
    if words[:3] != ["ibtool", "topo", family.name] or "--out" not in words[3:-1]:
        return None
    i = words.index("--out")
    return words[3:i] + words[i + 2:]


# A small instance of every family `ibtool topo list` shows (`ibtool topo FAMILY *SMALL[FAMILY]`),
# from its registration: a family whose example does not start with one fails
# tests/cabling/test_cabling.py, and a new family needs no edit here.
SMALL = {name: small_args(t) for name, t in TOPOLOGIES.items()}


# Groups whose work stays in the calling process (no daemons, no children writing to our stdout):
# `make test` runs them through click's CliRunner in the test process, the same command objects a
# user's `ibtool` runs, without paying Python's start and the imports (numpy, scipy, jinja2) again
# for each of ~1,500 calls. The entry point itself (exit on a closed pipe, signals, tracebacks of a
# real process) is tested by tests/test_cli.py through real processes, and `make test-full` runs
# every call as a real process (IBTOOL_TESTS_PROCESS=1 alone does that too).
IN_PROCESS = {"topo", "route", "verify", "analyze", "cabling", "bench parse", "bench list", "bench compare",
              "bench report"}
PROCESS = FULL or os.environ.get("IBTOOL_TESTS_PROCESS") == "1"


def in_process(args: list[str]) -> bool:
    return bool(args) and (args[0] in IN_PROCESS or " ".join(args[:2]) in IN_PROCESS)


def invoke_in_process(args: list[str], env: dict | None) -> subprocess.CompletedProcess:
    """`ibtool ARGS` in this process; an exception a real process would die of is its traceback on
    stderr and exit 1, as Python prints it."""
    import traceback

    from click.testing import CliRunner

    from ibtool.cli.main import cli
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        # help wrapped as in a process whose stdout is a pipe (CliRunner would force 80 columns)
        columns = int({**os.environ, **(env or {})}.get("COLUMNS") or 80)
        r = CliRunner().invoke(cli, args, env=env, prog_name="ibtool", catch_exceptions=True,
                               terminal_width=max(min(columns, 100) - 2, 50))
    finally:
        os.chdir(cwd)
    stderr, code = r.stderr, r.exit_code
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        stderr += "".join(traceback.format_exception(r.exception))
        code = 1
    return subprocess.CompletedProcess([*IBTOOL, *args], code, r.stdout, stderr)


def failed_campaign(camp: Path, run_id: str = "current--hpcc--linear--r1") -> Path:
    """A campaign directory of one HPCC run that failed, as `ibtool bench run` leaves it (for the
    commands that read campaigns, without running a benchmark)."""
    (camp / "runs" / run_id).mkdir(parents=True)
    (camp / "campaign.json").write_text(json.dumps({"benchmarks": ["hpcc"], "mappings": ["linear"],
                                                    "engines": ["current"], "repeat": 1, "seed": 1, "runs": []}))
    (camp / "runs" / run_id / "run.json").write_text(json.dumps(
        {"run_id": run_id, "engine": "current", "benchmark": "hpcc", "type": "hpcc",
         "mapping": {"policy": "linear"}, "repeat": 1, "status": "failed", "reasons": ["x"]}))
    return camp


def ibtool(*args, env=None, check=None, timeout=600):
    """Run the `ibtool` command line, as a user would (see IN_PROCESS for how)."""
    args = [str(a) for a in args]
    if not PROCESS and in_process(args):
        p = invoke_in_process(args, env)
    else:
        p = subprocess.run([*IBTOOL, *args], capture_output=True, text=True, cwd=ROOT,
                           env={**os.environ, **(env or {})}, timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError(f"ibtool {' '.join(map(str, args))}: exit {p.returncode}, expected {check}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


@contextmanager
def chromium_page():
    """A page of Debian's real headless Chromium (/usr/bin/chromium) through playwright, and the
    list that collects its console errors and warnings and uncaught page errors."""
    from playwright.sync_api import sync_playwright
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--no-sandbox", "--headless", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            yield page, errors
        finally:
            browser.close()
