"""The rooms keep their order: import-linter's contracts in pyproject.toml (each room imports only
rooms below it, no circle between the modules of a room), the order docs/design.md draws."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(pythonpath: Path) -> subprocess.CompletedProcess:
    assert LINT.is_file(), "lint-imports not installed (make setup installs the test extras)"
    return subprocess.run([str(LINT), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                          capture_output=True, text=True, timeout=120, cwd=pythonpath,
                          env={"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"})


def test_the_rooms_keep_their_order():
    p = lint(ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 broken" in p.stdout


def test_an_import_up_breaks_the_contract(tmp_path):
    """The contract can fail: a copy of the package where fabric.py imports the CLI."""
    shutil.copytree(ROOT / "ibtool", tmp_path / "ibtool", ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "ibtool" / "fabric.py", "a") as fh:
        fh.write("\nfrom ibtool.cli import main  # noqa: E402\n")
    p = lint(tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "ibtool.fabric is not allowed to import ibtool.cli" in p.stdout
