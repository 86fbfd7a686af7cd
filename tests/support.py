"""Helpers shared by the test modules (import as `from support import ...`; tests/ is on sys.path)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]


def ibtool(*args, env=None, check=None, timeout=600):
    """Run the real `ibtool` command line, as a user would."""
    p = subprocess.run([*IBTOOL, *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, **(env or {})}, timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError(f"ibtool {' '.join(map(str, args))}: exit {p.returncode}, expected {check}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p
