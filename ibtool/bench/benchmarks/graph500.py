"""Graph500 reference (3.0.0 `newreference`): `graph500_reference_bfs SCALE EDGEFACTOR`, stdout parsed.

Results are printed by rank 0 on stdout at the very end (``key: value`` lines; the official
metric carries a ``!``). The AML layer needs a power-of-two rank count and *block* placement
(ranks contiguous per node): a random mapping ends in ``Strange group rank assignment scheme``
and a segfault, so the campaign never runs Graph500 under a non-block mapping.
"""

from __future__ import annotations

import re
from pathlib import Path

from ibtool.bench.benchmarks.base import (
    STDOUT_NAMES,
    Benchmark,
    Figure,
    ParseResult,
    RunFiles,
    is_power_of_two,
)
from ibtool.bench.registry import BENCHMARKS
from ibtool.errors import InputError

# the value: anything number-like, nan and inf included, so a garbled one is caught, not skipped
_LINE = re.compile(r"^(bfs |sssp)?\s*(\w+):\s+(!\s+)?([-+]?(?:\d[\d.eE+-]*|nan|inf\w*))\s*$", re.I)
_STATS = ("min", "firstquartile", "median", "thirdquartile", "max", "mean", "stddev")


@BENCHMARKS.register("graph500")
class Graph500(Benchmark):
    """Graph500 BFS (and SSSP with the bfs_sssp binary): harmonic-mean TEPS and its spread.
    Parameters: scale (2^scale vertices), edgefactor, skip_validation (smoke tests only: not a valid
    result)."""

    defaults = {"scale": 12, "edgefactor": 16, "skip_validation": False}
    default_binary = "graph500_reference_bfs"
    block_mapping_only = True
    figures = (
        Figure("graph500_bfs_teps", "Graph500 BFS harmonic-mean TEPS", "bfs_harmonic_mean_TEPS", "TEPS",
               ("bfs_min_TEPS", "bfs_max_TEPS")),
    )
    expect = {"bfs_harmonic_mean_TEPS": {"min": 1.0}}

    def check(self, nprocs: int) -> None:
        if not is_power_of_two(nprocs):
            raise InputError(f"graph500: the reference code needs a power-of-two rank count, not {nprocs}")

    def command(self) -> list[str]:
        return [self.binary, str(self.params["scale"]), str(self.params["edgefactor"])]

    def env(self) -> dict[str, str]:
        return {"SKIP_VALIDATION": "1"} if self.params["skip_validation"] else {}

    @classmethod
    def parse(cls, files: RunFiles, request: dict | None = None) -> ParseResult:
        r = ParseResult("graph500")
        out, err = files.stdout, files.stderr
        values: dict[str, float] = {}
        name = (files.path(*STDOUT_NAMES) or files.main or Path("stdout")).name
        for i, line in enumerate(out.splitlines(), 1):
            m = _LINE.match(line)
            if not m:
                continue
            kernel = (m.group(1) or "").strip()
            key = f"{kernel}_{m.group(2)}" if kernel else m.group(2)
            v = r.number(f"{name}:{i} {key}", m.group(4))
            if v is None:
                continue
            values[key] = v
            if m.group(3):
                r.details.setdefault("official", {})[kernel] = v
        for kernel in ("bfs", "sssp"):
            for stat in _STATS + ("harmonic_mean", "harmonic_stddev"):
                key = f"{kernel}_{stat}_TEPS"
                if key in values:
                    r.metric(key, values[key], "TEPS")
            for stat in _STATS:
                key = f"{kernel}_{stat}_time"
                if key in values:
                    r.metric(key, values[key] * 1e6, "us")
        for key, name in (("SCALE", "scale"), ("edgefactor", "edgefactor"), ("NBFS", "nbfs"),
                          ("num_mpi_processes", "nprocs")):
            if key in values:
                r.params[name] = int(values[key])
        for key in ("graph_generation", "construction_time"):
            if key in values:
                r.metric(key, values[key], "s")
        if "bfs_mean_validate" in values:
            r.details["bfs_mean_validate_s"] = values["bfs_mean_validate"]
        both = out + "\n" + err
        if "Strange group rank assignment scheme" in both:
            r.fail("Graph500 (AML) refuses non-contiguous rank placement: 'Strange group rank assignment "
                   "scheme'; the reference code needs block (linear) mapping")
        if "non power2 groupsize unsupported" in both or "is not a power of two" in both:
            r.fail("Graph500 needs a power-of-two number of processes")
        if "No results printed for invalid run." in out:
            r.fail("Graph500 validation failed: 'No results printed for invalid run.'")
        if "bfs_harmonic_mean_TEPS" not in r.metrics and r.status == "ok":
            done = re.findall(r"Time for BFS (\d+) is", err)
            where = f" (stderr shows BFS up to root {done[-1]})" if done else ""
            r.fail(f"no result block on stdout{where}: the run was killed or crashed before the end")
        if values.get("bfs_mean_validate") == -1:
            r.params["validated"] = False
            if request and not request.get("skip_validation"):
                r.invalid("validation was skipped although it was requested")
            else:
                r.warnings.append("validation skipped (SKIP_VALIDATION): not a valid Graph500 submission")
        elif "bfs_mean_validate" in values:
            r.params["validated"] = True
        r.check_exit(files.exit_code, files.stderr)
        if request and r.params:
            diff = [f"{k}={r.params[k]} (requested {request[k]})" for k in ("scale", "edgefactor", "nprocs")
                    if k in request and k in r.params and int(request[k]) != r.params[k]]
            if diff:
                r.invalid("Graph500 ran other parameters than requested: " + ", ".join(diff))
        return r
