"""The real single-node Slurm of the bench tests (tests/bench/conftest.py), for the job array of
`ibtool whatif run --slurm`: the same fixture, not a copy."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench.conftest import slurm  # noqa: E402,F401
